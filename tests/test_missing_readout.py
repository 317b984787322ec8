"""A graph without a readout for the items' mode is bad input for every
command that judges items: exit 2 and the reason, never a traceback."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rubriclang.cli.main import cli

PAIRWISE_ONLY = """rubric pw { version = 1 }
contract { scale = score[1, 5] }
criterion q: ordinal[1, 5] = recorded.value { key = "q" }
sink q
readout pairwise {}
"""

POINTWISE = PAIRWISE_ONLY.replace("readout pairwise {}", "readout pointwise { output = ordinal[1, 5] }").replace(
    "rubric pw", "rubric pt"
)


@pytest.mark.parametrize("command", ["run", "eval", "eval-second"])
def test_a_graph_without_the_items_readout_is_an_error_not_a_traceback(tmp_path, command):
    pw, pt = tmp_path / "pw.rbg", tmp_path / "pt.rbg"
    pw.write_text(PAIRWISE_ONLY)
    pt.write_text(POINTWISE)
    items = tmp_path / "items.jsonl"
    items.write_text(
        "".join(
            json.dumps({"id": str(i), "input": "", "response": "r", "gold": 3, "recorded": {"q": 3}}) + "\n"
            for i in range(30)
        )
    )
    args = {
        "run": ["run", str(pw), str(items), "--out", str(tmp_path / "t.jsonl")],
        "eval": ["eval", str(pw), str(items)],
        "eval-second": ["eval", str(pt), str(pw), str(items)],
    }[command]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 2, r.output
    assert "no `pointwise` readout" in r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)
