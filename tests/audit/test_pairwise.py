"""position_swap on a pairwise judge built on human annotations: decisions
are compared by candidate id, never by position, and the swap runs only
where the order can reach the verdict (here: a readout that resolves close
calls by position)."""

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
        {
            "id": i,
            "input": "Which is better?",
            "responses": {"a": "Answer A.", "b": "Answer B."},
            "annotations": {"a": {"quality": qa}, "b": {"quality": qb}},
            "gold": gold,
        }
        for i, qa, qb, gold in ITEMS
    ]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "suite.toml").write_text(
        'judge = "judge.rbg"\nitems = "items.jsonl"\nrepeats = 2\noperators = ["position_swap"]\n'
    )
    result = rbg("audit", tmp_path / "suite.toml", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    return report(tmp_path / "out")


def test_a_judge_that_cannot_see_positions_skips_the_swap_and_still_scores_gold(rbg, tmp_path):
    r = _audit(rbg, tmp_path, "tie")
    assert r["judge"]["type"] == "pairwise"
    # Each criterion sees one candidate and ties stay ties: no order can reach the verdict.
    (op,) = r["operators"]
    assert op["status"] == "skipped" and "position bias cannot show" in op["reason"]
    assert r["metrics"]["invariant"] is None
    assert [e["baseline"]["value"] for e in r["by_item"].values()] == ["a", "b", "tie"]
    assert [e["correct"] for e in r["by_item"].values()] == [True, True, True]
    # rbg eval's pairwise figures, by its functions: three-way agreement (the tie
    # included), and without ties over the two items whose gold is a candidate.
    gold = r["metrics"]["gold"]
    assert "accuracy" not in gold
    assert (gold["agreement"]["count"], gold["agreement"]["total"]) == (3, 3)
    assert (gold["agreement_without_ties"]["count"], gold["agreement_without_ties"]["total"]) == (2, 2)
    assert (gold["tie_rate"]["count"], gold["abstain_rate"]["count"]) == (1, 0)
    assert gold["confusion"]["gold"] == ["first", "second", "tie"]
    assert gold["confusion"]["counts"] == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]


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
