"""Shared fixtures: small .rbg sources and the repository root."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

# Set by .ci/run, whose set-up installs every tool the tests use.
IN_CI = os.environ.get("RBG_CI") == "1"


def needs(available: bool, reason: str) -> pytest.MarkDecorator:
    """Mark a test that needs a tool the project's set-up installs (Chromium, the
    embedded model, pre-commit): skipped where the tool is absent, but failed in CI
    (RBG_CI=1), where its absence means the set-up broke, not that it is optional."""
    if available or not IN_CI:
        return pytest.mark.skipif(not available, reason=reason)
    return pytest.mark.missing_in_ci(reason)


def pytest_runtest_setup(item):
    for mark in item.iter_markers("missing_in_ci"):
        pytest.fail(f"CI installs what this test needs, yet: {mark.args[0]}", pytrace=False)


@pytest.fixture
def unreachable_url():
    """An http URL on loopback where nothing listens, for as long as the test runs.

    The port stays bound (and not listening) by this fixture's socket, so no other
    process can take it meanwhile and a connection is refused at once; a port that
    was bound and closed could be handed to another test's server."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{s.getsockname()[1]}"


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
