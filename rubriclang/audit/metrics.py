"""Decisions, baselines, outcomes and rates (definitions: docs/audit.md).

Every rate is a ratio of counts pooled over items, with a percentile
bootstrap interval that resamples items (the variants of one item resample
together, since they share its baseline). A failed judgment is never
stable: it counts as a flip, and a variant with one is `failed`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import attrs
import numpy as np

from rubriclang.audit.judge import JudgeInfo
from rubriclang.audit.localize import EPS, modal, rounded, same
from rubriclang.evaluation.gold import item_gold
from rubriclang.evaluation.metrics import bootstrap
from rubriclang.interp.items import Item


class Decision(NamedTuple):
    """One judgment's verdict: status ok, abstain or failed."""

    status: str
    value: Any = None

    def to_json(self) -> dict:
        return {"status": self.status, "decision": self.value}


def decision(trace: dict | None) -> Decision:
    """The verdict of one trace record (a missing record is a failure)."""
    if trace is None:
        return Decision("failed")
    readout = trace["readout"]
    if readout["status"] == "ok":
        return Decision("ok", readout["decision"])
    return Decision("abstain") if readout["status"] == "abstain" else Decision("failed")


@attrs.frozen
class Summary:
    """The verdict over repeats: the mode, or the mean for ordinal judges."""

    status: str
    value: Any
    decisions: tuple[Decision, ...]

    @property
    def failures(self) -> int:
        return sum(d.status == "failed" for d in self.decisions)

    def to_json(self) -> dict:
        return {"status": self.status, "value": self.value, "decisions": [d.to_json() for d in self.decisions]}


class Scorer:
    """Compares verdicts the way the judge's type asks."""

    def __init__(self, judge: JudgeInfo, tolerance: float):
        self.judge = judge
        self.ordinal = judge.type == "ordinal"
        self.tolerance = tolerance if self.ordinal else 0.0

    def summary(self, traces: list[dict | None]) -> Summary:
        decs = tuple(decision(t) for t in traces)
        kept = [d for d in decs if d.status != "failed"]
        if self.ordinal:
            values = [float(d.value) for d in kept if d.status == "ok"]
            if values:
                return Summary("ok", rounded(sum(values) / len(values)), decs)
            return Summary("abstain" if kept else "failed", None, decs)
        if not kept:
            return Summary("failed", None, decs)
        top = modal([(d.status, d.value) for d in kept])
        return Summary(top[0], top[1], decs)

    def agrees(self, a: Summary | Decision, b: Summary) -> bool:
        """Whether a verdict (one judgment or a summary) matches a baseline."""
        if a.status == "failed" or b.status == "failed" or a.status != b.status:
            return False
        if a.status == "abstain":
            return True
        if self.ordinal:
            return abs(float(a.value) - float(b.value)) <= self.tolerance + EPS
        return same(a.value, b.value)

    def judgment_flips(self, s: Summary, base: Summary) -> int:
        return sum(not self.agrees(d, base) for d in s.decisions)

    def loo_flips(self, variant: list[dict | None], base: list[dict | None]) -> tuple[int, int]:
        """(flips, judgments) of a variant's repeats against each
        leave-one-out baseline (the summary of all base repeats but one):
        the same baselines `repeat_flips` measures noise against, so their
        difference, the excess over noise, is zero in expectation for a
        perturbation that changes nothing. With one repeat there is no
        leave-one-out baseline: the whole baseline is used."""
        if len(base) < 2:
            s = self.summary(base)
            return self.judgment_flips(self.summary(variant), s), len(variant)
        flips = 0
        for r in range(len(base)):
            others = self.summary(base[:r] + base[r + 1 :])
            flips += sum(not self.agrees(decision(t), others) for t in variant)
        return flips, len(variant) * len(base)

    def repeat_flips(self, traces: list[dict | None]) -> int:
        """Repeats that disagree with the summary of the OTHER repeats.

        Leaving each repeat out of the baseline it is compared with keeps the
        noise estimate unbiased: a variant's judgments are compared with a
        baseline they did not help make, so the repeats must be too, or the
        excess over noise comes out positive for a perturbation that does
        nothing. A single repeat measures no noise (0)."""
        if len(traces) < 2:
            return 0
        flips = 0
        for r, trace in enumerate(traces):
            others = self.summary(traces[:r] + traces[r + 1 :])
            flips += not self.agrees(decision(trace), others)
        return flips

    def invariant_outcome(self, s: Summary, base: Summary) -> str:
        if s.failures or base.status == "failed":
            return "failed"
        return "stable" if self.agrees(s, base) else "flipped"

    def eligible(self, base: Summary) -> bool:
        """Whether the baseline has room to fall (a failed baseline is
        counted eligible, and its variants failed: never a free pass)."""
        if base.status == "failed":
            return True
        if base.status != "ok":
            return False
        if self.ordinal:
            return float(base.value) - self.judge.output.lo > self.tolerance + EPS
        return same(base.value, self.judge.positive)

    def directional_outcome(self, s: Summary, base: Summary) -> str:
        if not self.eligible(base):
            return "ineligible"
        if s.failures or base.status == "failed":
            return "failed"
        if s.status != "ok":
            return "missed"
        if self.ordinal:
            return "detected" if float(s.value) < float(base.value) - self.tolerance - EPS else "missed"
        return "detected" if same(s.value, not self.judge.positive) else "missed"

    def gold(self, s: Summary, item: Item) -> tuple[bool, bool | None, float | None] | None:
        """(correct, agreement, abs error) of a verdict against the item's
        gold, read as `rbg eval` reads it (rubriclang.evaluation.gold), or
        None when the item has no gold. The audit checks every item's gold
        before it runs, so a value that does not fit raises GoldError here."""
        gold = item_gold(item, self.judge.graph, f"item `{item.id}`", self.judge.mode)
        if gold is None:
            return None
        if self.ordinal:
            if s.status != "ok":
                return (False, False, None)
            mode = modal([float(d.value) for d in s.decisions if d.status == "ok"])
            err = abs(float(s.value) - float(gold))
            return (abs(mode - float(gold)) <= EPS, err <= self.tolerance + EPS, err)
        if s.status != "ok":
            return (False, None, None)
        return (same(s.value, gold), None, None)


# --- rates -------------------------------------------------------------------


class Tally:
    """count / total per item, pooled into a rate with a bootstrap interval."""

    def __init__(self):
        self.per_item: dict[str, list[float]] = {}

    def add(self, item: str, count: float, total: float = 1) -> None:
        cell = self.per_item.setdefault(item, [0.0, 0.0])
        cell[0] += count
        cell[1] += total

    @property
    def count(self) -> float:
        return sum(c for c, _ in self.per_item.values())

    @property
    def total(self) -> float:
        return sum(t for _, t in self.per_item.values())

    def columns(self, items: Iterable[str] | None = None) -> tuple[list[float], list[float]]:
        keys = sorted(k for k in (items if items is not None else self.per_item) if k in self.per_item and self.per_item[k][1] > 0)
        return [self.per_item[k][0] for k in keys], [self.per_item[k][1] for k in keys]

    def rate(self) -> dict:
        counts, totals = self.columns()
        est = bootstrap(_ratio, counts, totals) if counts else None
        out = est.to_json() if est else {"value": None, "low": None, "high": None, "n": 0}
        return {**out, "count": _num(self.count), "total": _num(self.total)}


def _ratio(c, t):
    return np.sum(c) / np.sum(t)


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else round(x, 6)


def excess(judgments: Tally, noise: Tally) -> dict:
    """Judgment flip rate minus repeat flip rate, over the items both have."""
    items = sorted(k for k in judgments.per_item if k in noise.per_item and judgments.per_item[k][1] > 0 and noise.per_item[k][1] > 0)
    if not items:
        return {"value": None, "low": None, "high": None, "n": 0}
    a, b = judgments.columns(items)
    c, d = noise.columns(items)
    return bootstrap(lambda a, b, c, d: np.sum(a) / np.sum(b) - np.sum(c) / np.sum(d), a, b, c, d).to_json()


def mean_estimate(tally: Tally) -> dict | None:
    """The pooled mean of per-item sums (e.g. absolute errors), or None when empty."""
    if not tally.per_item:
        return None
    counts, totals = tally.columns()
    return bootstrap(_ratio, counts, totals).to_json()
