"""Shared fixtures: small .rbg sources and the repository root."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

# A valid graph with no diagnostics.
GOOD = """\
rubric demo { version = 1 }

contract { scale = score[1, 5] }

criterion correct: ordinal[1, 5] = llm.rate {
  question = "How correct is the response?"
  anchors = { 1: "Wrong.", 5: "Correct." }
}

sink correct

readout pointwise { output = ordinal[1, 5] }
"""

# GOOD with one warning: RB504 (a parameter set to its default) on line 12.
WARNING = GOOD.replace("ordinal[1, 5] }\n", "ordinal[1, 5], quantize = nearest }\n")

# GOOD with one error: RB101 (the sink names an unknown node) on line 10.
ERROR = GOOD.replace("sink correct", "sink corect")

# A syntax error: RB001 on line 1.
SYNTAX_ERROR = GOOD.replace("rubric demo {", "rubric demo = {")


@pytest.fixture
def write(tmp_path):
    """write(relative_path, text) -> the path of a new file under tmp_path."""

    def _write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    return _write
