"""`NaN`, `Infinity` and numbers too large for a float (1e400) in any JSON
Lines input are an error at their line, exit 2: no reader downstream can use
them, and traces cannot hold them."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from evaluation.judges import ORDINAL, pointwise, write, write_items

from rubriclang.cli.main import cli

ANNOTATED = ORDINAL.replace('recorded.value { key = "q" }', 'human.annotation { key = "q" }')


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_a_non_finite_annotation_value_is_an_error_at_its_line(tmp_path, literal):
    g = write(tmp_path / "g.rbg", ANNOTATED)
    items = write_items(tmp_path / "items.jsonl", [pointwise(0, 3), pointwise(1, 3)])
    table = tmp_path / "ann.jsonl"
    table.write_text(
        json.dumps({"item": "i0", "key": "q", "value": 3})
        + "\n"
        + f'{{"item": "i1", "key": "q", "value": {literal}}}\n'
    )
    r = CliRunner().invoke(
        cli, ["run", str(g), str(items), "--annotations", str(table), "--out", str(tmp_path / "t.jsonl")]
    )
    assert r.exit_code == 2, r.output
    assert f"{table}:2: malformed JSON" in r.output and "Traceback" not in r.output
