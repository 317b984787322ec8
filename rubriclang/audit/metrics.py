"""Verdicts, baselines, outcomes and rates (definitions: docs/audit.md).

Every rate is a ratio of counts pooled over items, with a percentile
bootstrap interval that resamples items (the variants of one item resample
together, since they share its baseline). A failed judgment is never
stable: it counts as a flip, and a variant with one is `failed`; every rate
also says how many of its units failed (`failed`), so a failure is never
read as a non-flip.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, NamedTuple

import attrs
import numpy as np

from rubriclang.audit.judge import JudgeInfo
from rubriclang.audit.localize import EPS, modal, rounded, same
from rubriclang.catalog.types import JType
from rubriclang.evaluation.gold import item_gold
from rubriclang.evaluation.metrics import METRICS, bootstrap, confusion, sample
from rubriclang.interp.items import Item


class Verdict(NamedTuple):
    """One judgment's verdict: status ok, abstain or failed."""

    status: str
    value: Any = None

    def to_json(self) -> dict:
        return {"status": self.status, "decision": self.value}


def verdict(trace: dict | None) -> Verdict:
    """The verdict of one trace record (a missing record is a failure)."""
    if trace is None:
        return Verdict("failed")
    readout = trace["readout"]
    if readout["status"] == "ok":
        return Verdict("ok", readout["decision"])
    return Verdict("abstain") if readout["status"] == "abstain" else Verdict("failed")


@attrs.frozen
class Summary:
    """The verdict over repeats: the mode, or the mean for ordinal judges."""

    status: str
    value: Any
    verdicts: tuple[Verdict, ...]

    @property
    def failures(self) -> int:
        return sum(d.status == "failed" for d in self.verdicts)

    def to_json(self) -> dict:
        return {"status": self.status, "value": self.value, "decisions": [d.to_json() for d in self.verdicts]}


class Scorer:
    """Compares verdicts the way the judge's type asks."""

    def __init__(self, judge: JudgeInfo, tolerance: float):
        self.judge = judge
        self.ordinal = judge.type == "ordinal"
        self.tolerance = tolerance if self.ordinal else 0.0

    def summary(self, traces: list[dict | None]) -> Summary:
        decs = tuple(verdict(t) for t in traces)
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

    def agrees(self, a: Summary | Verdict, b: Summary) -> bool:
        """Whether a verdict (one judgment or a summary) matches a baseline."""
        if a.status == "failed" or b.status == "failed" or a.status != b.status:
            return False
        if a.status == "abstain":
            return True
        if self.ordinal:
            return abs(float(a.value) - float(b.value)) <= self.tolerance + EPS
        return same(a.value, b.value)

    def judgment_flips(self, s: Summary, base: Summary) -> int:
        return sum(not self.agrees(d, base) for d in s.verdicts)

    def loo_flips(self, variant: list[dict | None], base: list[dict | None]) -> tuple[int, int]:
        """(flips, judgments) of a variant's repeats against each
        leave-one-out baseline (the summary of all base repeats but one):
        the same baselines `repeat_flips` measures noise against, so their
        difference, the excess over noise, is zero in expectation for a
        perturbation that changes nothing. With one repeat there is no
        leave-one-out baseline: the whole baseline is used."""
        return self._against_loo(variant, base, lambda d, s: not self.agrees(d, s))

    def loo_falls(self, variant: list[dict | None], base: list[dict | None]) -> tuple[int, int]:
        """(judgments below, judgments) of a variant's repeats against each
        leave-one-out baseline: the judgment-level detection that
        `detection_over_noise` compares with `repeat_falls`."""
        return self._against_loo(variant, base, self.fell)

    def _against_loo(self, variant: list[dict | None], base: list[dict | None], hit) -> tuple[int, int]:
        if len(base) < 2:
            s = self.summary(base)
            return sum(hit(verdict(t), s) for t in variant), len(variant)
        count = 0
        for r in range(len(base)):
            others = self.summary(base[:r] + base[r + 1 :])
            count += sum(hit(verdict(t), others) for t in variant)
        return count, len(variant) * len(base)

    def repeat_flips(self, traces: list[dict | None]) -> int:
        """Repeats that disagree with the summary of the OTHER repeats.

        Leaving each repeat out of the baseline it is compared with keeps the
        noise estimate unbiased: a variant's judgments are compared with a
        baseline they did not help make, so the repeats must be too, or the
        excess over noise comes out positive for a perturbation that does
        nothing. A single repeat measures no noise (0)."""
        return self._repeats_loo(traces, lambda d, s: not self.agrees(d, s))

    def repeat_falls(self, traces: list[dict | None]) -> int:
        """Repeats below the summary of the other repeats: how often the
        judge 'detects' a degradation that is not there."""
        return self._repeats_loo(traces, self.fell)

    def _repeats_loo(self, traces: list[dict | None], hit) -> int:
        if len(traces) < 2:
            return 0
        return sum(hit(verdict(t), self.summary(traces[:r] + traces[r + 1 :])) for r, t in enumerate(traces))

    def stability(self, base: Summary) -> str:
        """`stable` when every repeat of the original item agrees with its
        summary, `unstable` when some repeat disagrees (the summary then
        rests on a mode or a mean the repeats do not share), `failed` when a
        repeat failed."""
        if base.failures:
            return "failed"
        return "stable" if all(self.agrees(d, base) for d in base.verdicts) else "unstable"

    def _scale(self) -> JType:
        """The judge's output type (an ordinal judge's scale; every pointwise judge has one)."""
        assert self.judge.output is not None
        return self.judge.output

    def score(self, s: Summary | Verdict) -> float | None:
        """A verdict as a number on the judge's scale, or None: ordinal, the
        value; binary, 1 for the `positive` verdict and 0 for the other;
        pairwise and categorical verdicts have no direction."""
        if s.status != "ok" or self.judge.type not in ("ordinal", "binary"):
            return None
        if self.ordinal:
            return float(s.value)
        return 1.0 if same(s.value, self.judge.positive) else 0.0

    def fell(self, d: Summary | Verdict, base: Summary) -> bool:
        """Whether a verdict is below a baseline (ordinal: by more than
        `tolerance`; binary: the other verdict than a `positive` baseline)."""
        a, b = self.score(d), self.score(base)
        return a is not None and b is not None and a < b - self.tolerance - EPS

    def rose(self, d: Summary | Verdict, base: Summary) -> bool:
        a, b = self.score(d), self.score(base)
        return a is not None and b is not None and a > b + self.tolerance + EPS

    def can_rise(self, base: Summary) -> bool:
        """Whether the baseline has room to rise (a failed one counts: its
        variants are `failed`, never a free pass)."""
        if base.status == "failed":
            return True
        b = self.score(base)
        if b is None:
            return False
        top = float(self._scale().hi) if self.ordinal else 1.0
        return top - b > self.tolerance + EPS

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
            return float(base.value) - self._scale().lo > self.tolerance + EPS
        return same(base.value, self.judge.positive)

    def directional_outcome(self, s: Summary, base: Summary) -> str:
        if not self.eligible(base):
            return "ineligible"
        if s.failures or base.status == "failed":
            return "failed"
        return "detected" if self.fell(s, base) else "missed"

    def contradiction(self, s: Summary, base: Summary) -> str | None:
        """A degradation's verdict against the direction it should move:
        `contradicted` (it rose), `consistent`, `failed`, or None when the
        baseline has no room to rise."""
        if not self.can_rise(base):
            return None
        if s.failures or base.status == "failed":
            return "failed"
        return "contradicted" if self.rose(s, base) else "consistent"

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
            mode = modal([float(d.value) for d in s.verdicts if d.status == "ok"])
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
        self.failed = 0

    def add(self, item: str, count: float, total: float = 1, failed: int = 0) -> None:
        """`failed`: how many of the `total` units failed (a failed judgment,
        or a variant or item with one), reported beside the rate."""
        cell = self.per_item.setdefault(item, [0.0, 0.0])
        cell[0] += count
        cell[1] += total
        self.failed += int(failed)

    @property
    def count(self) -> float:
        return sum(c for c, _ in self.per_item.values())

    @property
    def total(self) -> float:
        return sum(t for _, t in self.per_item.values())

    def columns(self, items: Iterable[str] | None = None) -> tuple[list[float], list[float]]:
        keys = sorted(
            k for k in (items if items is not None else self.per_item) if k in self.per_item and self.per_item[k][1] > 0
        )
        return [self.per_item[k][0] for k in keys], [self.per_item[k][1] for k in keys]

    def rate(self) -> dict:
        counts, totals = self.columns()
        est = bootstrap(_ratio, counts, totals) if counts else None
        out = est.to_json() if est else {"value": None, "low": None, "high": None, "n": 0}
        return {**out, "count": _num(self.count), "total": _num(self.total), "failed": self.failed}


def _ratio(c, t):
    return np.sum(c) / np.sum(t)


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else round(x, 6)


def excess(judgments: Tally, noise: Tally) -> dict:
    """Judgment flip rate minus repeat flip rate, over the items both have."""
    items = sorted(
        k
        for k in judgments.per_item
        if k in noise.per_item and judgments.per_item[k][1] > 0 and noise.per_item[k][1] > 0
    )
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


def gold_extras(scorer: Scorer, scored: list[tuple[Item, Summary]]) -> dict:
    """`confusion` (gold value x predicted verdict, counts) and, for ordinal
    judges, `rank_correlation` (Spearman's rho of the mean verdict and gold,
    over the items with a decided verdict), beside accuracy."""
    judge = scorer.judge
    if judge.type == "pairwise" or not scored:
        return {"confusion": None, "rank_correlation": None}
    golds, preds = [], []
    for item, s in scored:
        golds.append(item_gold(item, judge.graph, f"item `{item.id}`", judge.mode))
        if s.status != "ok":
            preds.append(Verdict(s.status).to_json())
        else:
            # Ordinal: the modal verdict, the one accuracy compares with gold.
            value = modal([float(d.value) for d in s.verdicts if d.status == "ok"]) if scorer.ordinal else s.value
            preds.append(Verdict("ok", _num(value) if scorer.ordinal else value).to_json())
    gold_values = sorted({_key(g): g for g in golds}.values(), key=_order)
    pred_values = sorted(
        {_key(p): p for p in preds}.values(), key=lambda p: (p["status"] != "ok", p["status"], _order(p["decision"]))
    )
    gk, pk = [_key(g) for g in gold_values], [_key(p) for p in pred_values]
    counts = confusion([pk.index(_key(p)) for p in preds], [gk.index(_key(g)) for g in golds], len(pk), len(gk))
    rank = None
    if scorer.ordinal:
        pairs = [(float(s.value), float(g)) for (_, s), g in zip(scored, golds) if s.status == "ok"]
        rank = sample(METRICS["numeric"]["spearman"], [p for p, _ in pairs], [g for _, g in pairs]).estimate().to_json()
    return {"confusion": {"gold": gold_values, "predicted": pred_values, "counts": counts}, "rank_correlation": rank}


def _key(x: Any) -> str:
    return json.dumps(x, sort_keys=True)


def _order(x: Any) -> tuple:
    """Numbers (and booleans, false first) in numeric order, then text."""
    if x is None:
        return (0, 0, "")
    if isinstance(x, (bool, int, float)):
        return (1, float(x), "")
    return (2, 0, str(x))
