"""The judges of the structured-data examples (examples/bfcl, tau_bench,
begin, faithdial, ragchecker, and MT-Bench's multi-turn judges) check clean
and keep their measured figures.

The rules-only judges run over every item here (no model); their figures
are the ones docs/results.md reports, pinned in tests/real_figures.json
(scripts/pin_real_figures.py rewrites the pins).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from pinned import assert_pinned

import rubriclang
from rubriclang.evaluation.evaluate import evaluate, graph_columns
from rubriclang.evaluation.gold import read_gold
from rubriclang.interp.items import read_items
from rubriclang.interp.local import LocalBackend

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


class Judged:
    """A rules-only example graph run over all its items."""

    def __init__(self, folder: str, graph: str):
        path = EXAMPLES / folder / graph
        self.rubric = rubriclang.load(str(path), backends=[LocalBackend()])
        self.items = list(read_items(str(EXAMPLES / folder / "items.jsonl"), self.rubric.graph.item_shape))
        self.results = self.rubric.evaluate_many(self.items)
        self.records = [r.record for r in self.results]

    def pointwise(self):
        g = self.rubric.graph
        columns = graph_columns(g, g.name, [(r.item.id, r.mode, r.composition) for r in self.results])
        return evaluate(g, self.items, read_gold(self.items, g, "items.jsonl"), columns).modes["pointwise"]


@pytest.fixture(scope="module")
def bfcl() -> Judged:
    return Judged("bfcl", "rubric.rbg")


@pytest.fixture(scope="module")
def tau_rules() -> Judged:
    return Judged("tau_bench", "rules.rbg")


def test_bfcl_accepts_every_accepted_call_and_refuses_every_corrupted_one(bfcl):
    assert len(bfcl.records) == 298
    decided = {rec["item"]: rec["readout"]["decision"] for rec in bfcl.records}
    assert [i.id for i in bfcl.items if decided[i.id] is not i.gold] == []
    report = bfcl.pointwise()
    assert len(report.scored) == 298 and report.left_out == ()
    assert_pinned("bfcl.accuracy", report.metrics["bfcl_call"]["accuracy"].value, 3)


def test_bfcl_names_the_mismatch_each_corruption_makes(bfcl):
    # Each corruption kind of scripts/build_bfcl.py against the kind of the
    # first mismatch the rule reports (its `raw`).
    seen: Counter[tuple[str, str]] = Counter()
    for rec, item in zip(bfcl.records, bfcl.items):
        judged = rec["criteria"]["accepted"]["response"]
        corruption = item.id.split("-", 1)[1]
        seen[(corruption, judged["raw"]["kind"] if not judged["value"] else "match")] += 1
    assert seen == {
        ("accepted", "match"): 60,
        ("wrong_function", "name"): 60,
        ("wrong_value", "value"): 58,
        ("missing_argument", "missing_argument"): 60,
        ("extra_argument", "unexpected_argument"): 60,
    }
    for (corruption, kind), n in seen.items():
        assert_pinned(f"bfcl.{corruption}.{kind}", n)


def test_tau_bench_rules_only_judge_agrees_with_the_reward_as_measured(tau_rules):
    report = tau_rules.pointwise()
    assert len(report.scored) == 32 and report.left_out == ()
    accuracy = report.metrics["tau_bench_rules"]["accuracy"]
    assert_pinned("tau_bench.rules.accuracy", accuracy.value, 3)
    assert_pinned("tau_bench.rules.accuracy.low", accuracy.low, 3)
    assert_pinned("tau_bench.rules.accuracy.high", accuracy.high, 3)
    assert_pinned("tau_bench.rules.kappa", report.metrics["tau_bench_rules"]["kappa"].value, 3)
