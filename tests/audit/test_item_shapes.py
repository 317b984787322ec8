"""An audit of a judge that declares its item's shape: its sealed items are
read back for that shape, so a sealed suite is reused as it was written."""

from __future__ import annotations

import json

from .helpers import GSM8K_JUDGE, gsm8k_items, report

BODY = 'repeats = 1\noperators = ["typo_noise"]\n[options.typo_noise]\nfields = ["response"]\n'


def test_a_sealed_suite_of_items_with_declared_fields_is_reused(rbg, suite, tmp_path):
    judge = tmp_path / "shaped.rbg"
    judge.write_text(
        GSM8K_JUDGE.read_text("utf-8") + "\nitem {\n  reference: text\n  hints: list[text]?  # rbg: ignore[RB604]\n}\n",
        "utf-8",
    )
    items = tmp_path / "shaped.jsonl"
    items.write_text("".join(json.dumps({**r, "hints": ["count twice"]}) + "\n" for r in gsm8k_items(2)), "utf-8")
    path = tmp_path / "shaped.toml"
    path.write_text(f'judge = "{judge}"\nitems = "{items}"\n{BODY}', "utf-8")
    first = rbg("audit", path, "--out", tmp_path / "first")
    assert first.exit_code == 0, first.output
    sealed = tmp_path / "first" / "sealed.json"
    assert all(item["hints"] == ["count twice"] for item in json.loads(sealed.read_text())["items"])
    again = rbg("audit", path, "--out", tmp_path / "again", "--sealed", sealed)
    assert again.exit_code == 0, again.output
    assert report(tmp_path / "again")["suite"]["sealed"] == report(tmp_path / "first")["suite"]["sealed"]
