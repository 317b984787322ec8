"""Replay, diff and run summaries show numbers to 4 significant digits and
group repeated transitions; traces and JSON decisions keep every digit."""

from __future__ import annotations

import json

from click.testing import CliRunner
from evaluation.judges import SCORE, pointwise, write, write_items

from rubriclang.catalog.types import fmt_short
from rubriclang.cli.main import cli

# The mean of three ordinals, read out as a real number: thirds everywhere.
REAL = SCORE.replace("readout pointwise { output = ordinal[1, 5] }", "readout pointwise { output = score[1, 5] }")


def rbg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_short_numbers_have_four_significant_digits_in_the_languages_spelling():
    assert [fmt_short(x) for x in (5.666666666666667, 2.0, 5.5, 0.000123456, 123456.0, 7)] == [
        "5.667",
        "2",
        "5.5",
        "0.0001235",
        "123500",
        "7",
    ]


def test_replay_groups_transitions_and_rounds_the_values_it_shows(tmp_path):
    g = write(tmp_path / "g.rbg", REAL)
    items = write_items(tmp_path / "items.jsonl", [pointwise(i, 3, a=5, b=5, c=4 + i % 2) for i in range(40)])
    traces = tmp_path / "t.jsonl"
    assert rbg("run", g, items, "--out", traces).exit_code == 0
    assert json.loads(traces.read_text().splitlines()[0])["readout"]["decision"] == 14 / 3  # full precision
    # Another readout: the maximum instead of the mean.
    new = write(tmp_path / "max.rbg", REAL.replace("reduce.mean", "reduce.max"))
    r = rbg("replay", new, traces, "--limit", "3")
    assert r.exit_code == 1
    lines = r.output.splitlines()
    assert lines[0] == "Replayed 40 items: 20 decisions differ."
    assert lines[1] == "  20 items: 4.667 -> 5 (i0, i2, i4, 17 more)"
    assert "4.666666" not in r.output
    report = json.loads(rbg("replay", new, traces, "--format", "json").output)
    assert report["transitions"] == {"4.667 -> 5": 20}
    assert report["differences"][0]["old"]["decision"] == 14 / 3


def test_diff_verdict_impact_groups_transitions_the_same_way(tmp_path):
    g = write(tmp_path / "g.rbg", REAL)
    items = write_items(tmp_path / "items.jsonl", [pointwise(i, 3, a=5, b=5, c=4 + i % 2) for i in range(40)])
    traces = tmp_path / "t.jsonl"
    rbg("run", g, items, "--out", traces)
    new = write(tmp_path / "max.rbg", REAL.replace("reduce.mean", "reduce.max"))
    out = rbg("diff", g, new, "--traces", traces, "--limit", "2").output
    assert "  20 items: 4.667 -> 5 (i0, i2, 18 more)" in out
