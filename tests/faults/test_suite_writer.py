"""The suites `rbg audit init` and `rbg audit plan` write are always TOML
that `rbg audit` accepts, whatever a model's rationale or a path holds:
control characters and line breaks are stripped from comments, and every
string is escaped as TOML requires."""

from __future__ import annotations

import json
import os
import shutil
import tomllib

import pytest
from audit.helpers import GSM8K_JUDGE, Scripted, gsm8k_items
from click.testing import CliRunner

from rubriclang.audit.judge import judge_info
from rubriclang.audit.planner import candidates
from rubriclang.audit.suite import load_suite
from rubriclang.audit.suite_writer import render_suite
from rubriclang.checker import check_source
from rubriclang.cli.main import cli
from rubriclang.interp.items import read_items

HOSTILE = [
    "reads\x00 the final number",
    "\x1b[31mred\x1b[0m and \x07bell\x7f",
    'breaks out\n]\njudge = "/evil.rbg"\n[options',
    "line\u2028separator\u2029and\x85next\rreturn\x0bvt\x0cff",
    'quotes " and \\ backslashes """',
    "\x00\x01\x02",  # nothing left: the operator's summary instead
]


def _judge(items_path):
    graph = check_source(GSM8K_JUDGE.read_text(), str(GSM8K_JUDGE)).graph
    assert graph is not None
    return judge_info(graph, list(read_items(str(items_path))))


@pytest.fixture
def items(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in gsm8k_items(2)), encoding="utf-8")
    return path


def test_a_rationale_with_control_characters_and_line_breaks_stays_one_comment(tmp_path, items):
    judge = _judge(items)
    ok, skipped = candidates(judge)
    chosen = list(zip(ok.values(), HOSTILE * 3, strict=False))  # a hostile text for each candidate, from the pool
    suite = tmp_path / "audit.toml"
    text = render_suite(str(suite), str(GSM8K_JUDGE), str(items), judge, chosen, skipped, "rbg audit plan")
    data = tomllib.loads(text)
    assert data["operators"] == [op.name for op, _ in chosen]
    assert "options" not in data and data["judge"] == os.path.relpath(GSM8K_JUDGE, tmp_path)
    assert not any((ord(ch) < 32 and ch != "\n") or ord(ch) == 0x7F or ch in "\u2028\u2029\x85" for ch in text)
    assert "# reads the final number" in text and "# [31mred [0m and bell\n" in text
    suite.write_text(text, encoding="utf-8")
    assert load_suite(str(suite)).operators == tuple(op.name for op, _ in chosen)


@pytest.mark.parametrize("name", ['it"s', "back\\slash", "tab\there", "ctl\x01\x1f\x7f", "ünï €"])
def test_paths_of_any_characters_round_trip_through_the_suite(tmp_path, items, name):
    folder = tmp_path / name
    folder.mkdir()
    moved = folder / "items.jsonl"
    shutil.copy(items, moved)
    suite = tmp_path / "audit.toml"
    result = CliRunner().invoke(
        cli, ["audit", "init", str(GSM8K_JUDGE), str(moved), "-o", str(suite)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert load_suite(str(suite)).items == str(moved)


def test_a_path_toml_cannot_hold_is_a_clear_error(tmp_path, items):
    judge = _judge(items)
    _ok, skipped = candidates(judge)
    with pytest.raises(ValueError, match="TOML cannot hold it"):
        render_suite(
            str(tmp_path / "a.toml"), str(GSM8K_JUDGE), "bad\udcff.jsonl", judge, [], skipped, "rbg audit init"
        )


def test_audit_plan_writes_a_suite_audit_accepts_from_a_hostile_rationale(tmp_path, items):
    proposal = {
        "operators": [
            {"name": "partial_completion", "rationale": HOSTILE[0] + HOSTILE[2]},
            {"name": "tone_shift", "rationale": HOSTILE[1]},
        ]
    }
    server = Scripted(lambda role, body: json.dumps(proposal))
    try:
        out = tmp_path / "planned.toml"
        result = CliRunner().invoke(
            cli,
            ["audit", "plan", str(GSM8K_JUDGE), str(items), "-o", str(out), "--base-url", server.url],
            catch_exceptions=False,
        )
    finally:
        server.close()
    assert result.exit_code == 0, result.output
    suite = load_suite(str(out))
    assert suite.operators == ("partial_completion", "tone_shift") and suite.judge == str(GSM8K_JUDGE)
    assert "\x00" not in out.read_text()
