"""Verdicts, baselines, outcomes and rates (definitions: docs/audit.md).

Every rate is a proportion of the units that were measured, pooled over
items, with a 95% Wilson interval on the effective number of units
(`rubriclang.evaluation.metrics.proportion`: the variants of one item are
clustered, since they share its baseline), honest at 0% and 100%. A failed
judgment measured nothing: it is in no rate's numerator nor denominator,
and every rate says how many of its units failed (`failed`) and what share
was measured (`coverage`), so a failure is read neither as a flip nor as a
non-flip. A difference of two rates has Newcombe's hybrid score interval,
built from the two Wilson intervals (`newcombe`).
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
from rubriclang.evaluation.gold import TIE as TIE_VALUE
from rubriclang.evaluation.gold import item_gold
from rubriclang.evaluation.metrics import (
    ABSTAIN,
    FIRST,
    METRICS,
    SECOND,
    TIE,
    Estimate,
    bootstrap,
    confusion,
    proportion,
    sample,
)
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


# Distinct summaries shared at most, so the table stays small whatever the verdicts.
_SUMMARIES_MAX = 4096


class Scorer:
    """Compares verdicts the way the judge's type asks."""

    def __init__(self, judge: JudgeInfo, tolerance: float):
        self.judge = judge
        self.ordinal = judge.type == "ordinal"
        self.tolerance = tolerance if self.ordinal else 0.0
        self._summaries: dict[str, Summary] = {}

    def summary(self, traces: list[dict | None]) -> Summary:
        """The summary of an item's or a variant's repeats; an equal one is
        held once (a judge's verdicts take a few forms, and an audit keeps
        one summary per item and variant)."""
        decs = tuple(verdict(t) for t in traces)
        # By repr, not ==: True, 1 and 1.0 (or 0.0 and -0.0) are equal and are written differently.
        key = repr(decs)
        made = self._summaries.get(key)
        if made is None:
            made = self._summary(decs)
            if len(self._summaries) < _SUMMARIES_MAX:
                self._summaries[key] = made
        return made

    def _summary(self, decs: tuple[Verdict, ...]) -> Summary:
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

    def judgment_flips(self, s: Summary, base: Summary) -> tuple[int, int]:
        """(flips, judgments measured) of a summary's repeats against a
        baseline: a failed repeat, or every repeat of a failed baseline,
        measured nothing and is in neither."""
        if base.status == "failed":
            return 0, 0
        kept = [d for d in s.verdicts if d.status != "failed"]
        return sum(not self.agrees(d, base) for d in kept), len(kept)

    def loo_flips(self, variant: list[dict | None], base: list[dict | None]) -> tuple[int, int]:
        """(flips, judgments measured) of a variant's repeats against each
        leave-one-out baseline (the summary of all base repeats but one):
        the same baselines `repeat_flips` measures noise against, so their
        difference, the excess over noise, is zero in expectation for a
        perturbation that changes nothing. With one repeat there is no
        leave-one-out baseline: the whole baseline is used."""
        return self._against_loo(variant, base, lambda d, s: not self.agrees(d, s))

    def loo_falls(self, variant: list[dict | None], base: list[dict | None]) -> tuple[int, int]:
        """(judgments below, judgments measured) of a variant's repeats
        against each leave-one-out baseline: the judgment-level detection
        that `detection_over_noise` compares with `repeat_falls`."""
        return self._against_loo(variant, base, self.fell)

    def _against_loo(self, variant: list[dict | None], base: list[dict | None], hit) -> tuple[int, int]:
        """(hits, pairs measured): pairs of a failed judgment or a failed
        baseline measured nothing."""
        verdicts = [d for d in map(verdict, variant) if d.status != "failed"]
        baselines = (
            [self.summary(base)]
            if len(base) < 2
            else [self.summary(base[:r] + base[r + 1 :]) for r in range(len(base))]
        )
        count = measured = 0
        for s in baselines:
            if s.status == "failed":
                continue
            count += sum(hit(d, s) for d in verdicts)
            measured += len(verdicts)
        return count, measured

    def repeat_flips(self, traces: list[dict | None]) -> tuple[int, int]:
        """(repeats that disagree with the summary of the OTHER repeats,
        repeats measured).

        Leaving each repeat out of the baseline it is compared with keeps the
        noise estimate unbiased: a variant's judgments are compared with a
        baseline they did not help make, so the repeats must be too, or the
        excess over noise comes out positive for a perturbation that does
        nothing. A single repeat measures no noise (0 of 0); a failed repeat,
        or one whose other repeats all failed, measures nothing."""
        return self._repeats_loo(traces, lambda d, s: not self.agrees(d, s))

    def repeat_falls(self, traces: list[dict | None]) -> tuple[int, int]:
        """(repeats below the summary of the other repeats, repeats
        measured): how often the judge 'detects' a degradation that is not
        there."""
        return self._repeats_loo(traces, self.fell)

    def _repeats_loo(self, traces: list[dict | None], hit) -> tuple[int, int]:
        if len(traces) < 2:
            return 0, 0
        count = measured = 0
        for r, t in enumerate(traces):
            d, others = verdict(t), self.summary(traces[:r] + traces[r + 1 :])
            if d.status == "failed" or others.status == "failed":
                continue
            count += hit(d, others)
            measured += 1
        return count, measured

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
    """Per item, the units measured and the hits among them, and the units
    that failed (measured nothing); pooled into a Rate."""

    def __init__(self):
        self.per_item: dict[str, tuple[float, float]] = {}  # item -> (hits, units measured)
        self.failed = 0

    def add(self, item: str, count: float, measured: float = 1, failed: int = 0) -> None:
        """`count` hits among `measured` units of `item`; `failed` units of
        it measured nothing (a failed judgment, or a variant or an item
        with one): they are in neither, and lower the coverage."""
        if count or measured:  # an item with nothing measured holds no cell (one repeat: none of the noise's)
            hits, units = self.per_item.get(item, (0, 0))
            self.per_item[item] = _cell(hits + count, units + measured)
        self.failed += int(failed)

    def unit(self, item: str, hit: bool, failed: bool = False) -> None:
        """One unit of `item`: a hit or not, or failed (measured nothing)."""
        self.add(item, 0 if failed else int(hit), 0 if failed else 1, int(failed))

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

    def estimate(self, items: Iterable[str] | None = None) -> Estimate:
        """The proportion with its Wilson interval (over `items` only, if given)."""
        return proportion(*self.columns(items))

    def rate(self) -> dict:
        """The Rate: `count / total` over the units measured, its interval,
        `failed` and `coverage` (null, "not measured", when nothing was)."""
        total, failed = self.total, self.failed
        return {
            **self.estimate().to_json(),
            "count": _num(self.count),
            "total": _num(total),
            "failed": failed,
            "coverage": round(total / (total + failed), 6) if total + failed else None,
        }


# Most cells are a few small whole pairs, (0, 1) or (1, 1): each held once,
# so a rate costs a table entry an item, not a pair. Ints only: every reader
# takes them as floats, and an equal float (-0.0 for 0) must keep its sign.
_CELLS: dict[tuple[float, float], tuple[float, float]] = {}  # whole pairs only (`_cell`)
_CELLS_MAX = 4096


def _cell(hits: float, units: float) -> tuple[float, float]:
    cell = (hits, units)
    if type(hits) is not int or type(units) is not int:
        return cell
    got = _CELLS.get(cell)
    if got is None and len(_CELLS) < _CELLS_MAX:
        got = _CELLS[cell] = cell
    return got if got is not None else cell


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else round(x, 6)


def newcombe(a: Estimate, b: Estimate) -> Estimate:
    """a - b of two proportions with Newcombe's hybrid score interval (his
    method 10), from the two Wilson intervals: never of zero width, even
    when both are 0 or both 1. It treats the two as independent; for two
    rates measured on the same items, positively correlated, it is wider
    than it need be, never narrower. `n` is the smaller of the two."""
    if a.value is None or b.value is None or a.low is None or b.low is None:
        return Estimate(None, None, None, min(a.n, b.n))
    assert a.high is not None and b.high is not None
    d = a.value - b.value
    low = d - ((a.value - a.low) ** 2 + (b.high - b.value) ** 2) ** 0.5
    high = d + ((a.high - a.value) ** 2 + (b.value - b.low) ** 2) ** 0.5
    return Estimate(d, max(-1.0, low), min(1.0, high), min(a.n, b.n))


def excess(judgments: Tally, noise: Tally) -> dict:
    """Judgment rate minus repeat rate over the items both measured, with
    Newcombe's interval; null (not measured) when no item has both."""
    items = sorted(
        k
        for k in judgments.per_item
        if k in noise.per_item and judgments.per_item[k][1] > 0 and noise.per_item[k][1] > 0
    )
    if not items:
        return {"value": None, "low": None, "high": None, "n": 0}
    return newcombe(judgments.estimate(items), noise.estimate(items)).to_json()


def mean_estimate(tally: Tally) -> dict | None:
    """The pooled mean of per-item sums (e.g. absolute errors), or None when empty."""
    if not tally.per_item:
        return None
    counts, totals = tally.columns()
    # A mean, not a proportion: the percentile bootstrap over items.
    return bootstrap(lambda c, t: np.sum(c) / np.sum(t), counts, totals).to_json()


def gold_extras(scorer: Scorer, scored: list[tuple[Item, Summary]]) -> dict:
    """`confusion` (gold value x predicted verdict, counts) and, for ordinal
    judges, `rank_correlation` (Spearman's rho of the mean verdict and gold,
    over the items with a decided verdict), beside accuracy. A pairwise
    judge's confusion is by position (`first`, `second`, `tie`), as `rbg
    eval` encodes it, since candidate ids differ from item to item."""
    judge = scorer.judge
    if not scored:
        return {"confusion": None, "rank_correlation": None}
    golds, preds = [], []
    for item, s in scored:
        gold = item_gold(item, judge.graph, f"item `{item.id}`", judge.mode)
        if judge.type == "pairwise":
            golds.append(_POSITIONS[_pairwise_code(gold, item)])
            code = _pairwise_code(s.value, item) if s.status == "ok" else None
            preds.append(Verdict("ok", _POSITIONS[code]).to_json() if code is not None else Verdict(s.status).to_json())
            continue
        golds.append(gold)
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
        pairs = [(float(s.value), float(g)) for (_, s), g in zip(scored, golds, strict=True) if s.status == "ok"]
        rank = sample(METRICS["numeric"]["spearman"], [p for p, _ in pairs], [g for _, g in pairs]).estimate().to_json()
    return {"confusion": {"gold": gold_values, "predicted": pred_values, "counts": counts}, "rank_correlation": rank}


_POSITIONS = {FIRST: "first", SECOND: "second", TIE: "tie"}


def _pairwise_code(value: Any, item: Item) -> int:
    """A pairwise decision or gold by position, as `rbg eval` encodes it."""
    return TIE if value == TIE_VALUE else item.candidate_ids.index(value)


def pairwise_gold(scorer: Scorer, scored: list[tuple[Item, Summary]]) -> dict:
    """A pairwise judge's figures against gold, each `rbg eval`'s own
    (`rubriclang.evaluation.metrics.METRICS["pairwise"]`, computed by its
    function), as a Rate over the items whose verdict did not fail."""
    judge = scorer.judge
    ids, pred, gold, failed = [], [], [], 0
    for item, s in scored:
        if s.status == "failed":
            failed += 1
            continue
        ids.append(item.id)
        gold.append(_pairwise_code(item_gold(item, judge.graph, f"item `{item.id}`", judge.mode), item))
        pred.append(_pairwise_code(s.value, item) if s.status == "ok" else ABSTAIN)
    out = {}
    for name, stat in METRICS["pairwise"].items():
        # The metric item by item (one row per item): 1, 0, or NaN where the
        # item is outside its denominator; pooled, that is the metric itself.
        with np.errstate(all="ignore"):
            each = np.asarray(stat(np.asarray(pred, float)[:, None], np.asarray(gold, float)[:, None]), dtype=float)
        tally = Tally()
        for item_id, v in zip(ids, each.reshape(-1), strict=True):
            if np.isfinite(v):
                tally.add(item_id, float(v))
        tally.add("", 0, 0, failed)  # the items whose verdict failed: measured nothing
        out[name] = tally.rate()
    return out


def _key(x: Any) -> str:
    return json.dumps(x, sort_keys=True)


def _order(x: Any) -> tuple:
    """Numbers (and booleans, false first) in numeric order, then text."""
    if x is None:
        return (0, 0, "")
    if isinstance(x, (bool, int, float)):
        return (1, float(x), "")
    return (2, 0, str(x))
