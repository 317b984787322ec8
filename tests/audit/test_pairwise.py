"""position_swap on a pairwise judge built on human annotations: decisions
are compared by candidate id, never by position."""

from __future__ import annotations

import json

from .helpers import report

JUDGE = """\
rubric preference {{ version = 1 }}

contract {{ scale = score[1, 5] }}

criterion quality: score[1, 5] = human.annotation {{ key = "quality" }}

sink quality

readout pairwise {{ epsilon = 0.5, resolve = {resolve} }}
"""

ITEMS = [
    ("p1", 4, 2, "a"),
    ("p2", 1, 5, "b"),
    ("p3", 3, 3, "tie"),  # equal: the readout's `resolve` decides
]


def _audit(rbg, tmp_path, resolve: str):
    (tmp_path / "judge.rbg").write_text(JUDGE.format(resolve=resolve))
    rows = [
        {"id": i, "input": "Which is better?", "responses": {"a": "Answer A.", "b": "Answer B."}, "annotations": {"a": {"quality": qa}, "b": {"quality": qb}}, "gold": gold}
        for i, qa, qb, gold in ITEMS
    ]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "suite.toml").write_text('judge = "judge.rbg"\nitems = "items.jsonl"\nrepeats = 2\noperators = ["position_swap"]\n')
    result = rbg("audit", tmp_path / "suite.toml", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    return report(tmp_path / "out")


def test_a_swap_that_keeps_the_preferred_candidate_is_stable(rbg, tmp_path):
    r = _audit(rbg, tmp_path, "tie")
    assert r["judge"]["type"] == "pairwise"
    inv = r["metrics"]["invariant"]
    assert (inv["variants"], inv["stable"], inv["flipped"]) == (3, 3, 0)
    p1 = r["by_item"]["p1"]
    # The preferred candidate moved from first to second place; its id did not change.
    assert p1["baseline"]["value"] == p1["variants"]["p1/position_swap"]["result"]["value"] == "a"
    assert [e["correct"] for e in r["by_item"].values()] == [True, True, True]
    assert r["metrics"]["gold"]["accuracy"]["value"] == 1.0


def test_a_readout_that_prefers_a_position_flips_on_ties(rbg, tmp_path):
    r = _audit(rbg, tmp_path, "first")
    assert [f["variant"] for f in r["flips"]] == ["p3/position_swap"]
    flip = r["flips"][0]
    assert (flip["baseline"]["value"], flip["result"]["value"]) == ("a", "b")
    assert flip["original"]["candidates"] == [["a", "Answer A."], ["b", "Answer B."]]
    assert flip["perturbed"]["candidates"] == [["b", "Answer B."], ["a", "Answer A."]]
    # No judgment moved: the readout's `resolve = first` made the flip.
    assert flip["localization"] == {"moved": [], "absorbed": [], "reached_sink": False}
    assert r["by_criterion"]["quality"]["in_flips"] == 0
