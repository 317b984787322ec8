"""`rbg diff --traces --items` reads the items under the shape of the graph
that wrote the traces: a NEW version declaring fewer fields must not make
every record look changed."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from rubriclang.cli.main import cli

RULES = "examples/tau_bench/rules.rbg"
ITEMS = "examples/tau_bench/items.jsonl"


def _wider(tmp_path):
    """The rules judge with one more declared field and a rule over it: the
    item shapes differ, and so do the judged contents' digests."""
    text = Path(RULES).read_text(encoding="utf-8")
    wide = text.replace(
        "item { response: conversation, actions: json }",
        "item { response: conversation, actions: json, outputs: json }",
    )
    assert wide != text
    path = tmp_path / "wide.rbg"
    path.write_text(
        wide.replace(
            "sink ",
            'criterion outputs_listed: bool = rule.json_schema { field = "outputs", schema = { "type": "array" } }'
            "\n\nsink ",
            1,
        )
    )
    return str(path)


def test_diff_checks_items_under_the_shape_that_judged_them(tmp_path):
    wide = _wider(tmp_path)
    traces = tmp_path / "t.jsonl"
    runner = CliRunner()
    ran = runner.invoke(cli, ["run", wide, ITEMS, "--out", str(traces)])
    assert ran.exit_code in (0, 1), ran.output
    for old, new in ((wide, RULES), (RULES, wide)):
        out = runner.invoke(cli, ["diff", old, new, "--traces", str(traces), "--items", ITEMS, "--format", "json"])
        assert out.exit_code in (0, 1), out.output
        impact = json.loads(out.output)["impact"]
        assert impact["items"] == 32


def test_diff_still_refuses_an_item_changed_since_it_was_judged(tmp_path):
    traces = tmp_path / "t.jsonl"
    runner = CliRunner()
    assert runner.invoke(cli, ["run", RULES, ITEMS, "--out", str(traces)]).exit_code in (0, 1)
    rows = [json.loads(line) for line in Path(ITEMS).read_text(encoding="utf-8").splitlines()]
    rows[3]["actions"] = []
    changed = tmp_path / "items.jsonl"
    changed.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = runner.invoke(cli, ["diff", RULES, RULES, "--traces", str(traces), "--items", str(changed)])
    assert out.exit_code == 2
    assert "t.jsonl:4" in out.output
