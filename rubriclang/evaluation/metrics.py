"""Agreement metrics between a judge's decisions and gold labels (formulas:
docs/evaluation.md).

Public API:

- `DEFINITIONS`: metric name -> `Metric`, the one definition of each figure
  (its formula as docs/evaluation.md prints it, its denominator, whether it
  is a proportion); every report and page reads names and formulas here.
- `METRICS`: judge kind (`numeric`, `bool`, `label`, `pairwise`) -> metric
  name -> `Metric` (callable as a `Stat`: a function of encoded (prediction,
  gold) arrays, one row per bootstrap resample, giving one value per row,
  NaN where undefined), in report order.
- `figure(kind, name, pred, gold)`: one metric's value with no interval
  (what `rbg fit` optimises), None when undefined.
- `Sampled`, `sample(stat, pred, gold)`: a metric on the items and on every
  resample; `.estimate()` gives an `Estimate`, `.minus(other)` the paired
  difference (both columns resampled with the same item indices).
- `confusion(pred, gold, k)`: the count matrix of categorical codes.
- `bootstrap(stat, *columns)`: a scalar statistic with an interval (the
  audit's rates).
- `wilson(k, n)`, `proportion(counts, totals)`: a proportion with its Wilson
  score interval, honest at 0% and 100% where a bootstrap's is of zero width.

Encodings: numeric judges as numbers; `bool` and `label` judges as class
indices; pairwise decisions as 0 (first candidate), 1 (second), 2 (tie), 3
(abstain), and pairwise gold as 0, 1 or 2. A proportion's interval is its
95% Wilson score interval; any other figure's is a percentile bootstrap over
items, 95%, with a fixed seed, so reports are reproducible byte for byte;
numpy's warnings about undefined figures are silenced, since an undefined
figure is reported as `n/a`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Any, SupportsFloat

import attrs
import numpy as np

BOOTSTRAP_SAMPLES = 1000
SEED = 20261130

FIRST, SECOND, TIE, ABSTAIN = 0, 1, 2, 3


@attrs.frozen
class Estimate:
    """A figure, its 95% interval, and how many items it rests on."""

    value: float | None
    low: float | None
    high: float | None
    n: int

    def to_json(self) -> dict[str, Any]:
        r = rounded
        return {"value": r(self.value), "low": r(self.low), "high": r(self.high), "n": self.n}

    def text(self, digits: int = 3) -> str:
        if self.value is None:
            return "n/a"
        if self.low is None:
            return f"{self.value:.{digits}f} [n/a]"  # no interval, not certainty
        return f"{self.value:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def rounded(x: float | None) -> float | None:
    """A figure as reports write it: six decimals."""
    return None if x is None else round(x, 6)


class _quiet:
    """numpy and scipy warnings off: an undefined figure is NaN, shown as n/a."""

    def __enter__(self) -> None:
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")
        self._e = np.errstate(all="ignore")
        self._e.__enter__()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._e.__exit__(kind, exc, tb)
        self._w.__exit__(kind, exc, tb)


# Resampled cells (rows x items) drawn at once: 1000 resamples of 1M items
# would be 8 GB of indices, so they come in blocks of rows of about 16 MB.
_BLOCK_CELLS = 1 << 21


def resamples(n: int, samples: int = BOOTSTRAP_SAMPLES) -> Iterator[np.ndarray]:
    """The bootstrap's item indices from the fixed seed, in blocks of rows
    (together (samples, n), the same rows whatever the block size): every
    column scored on the same n items is resampled identically (paired)."""
    rng = np.random.default_rng(SEED)
    step = max(1, _BLOCK_CELLS // max(n, 1))
    for start in range(0, samples, step):
        yield rng.integers(0, n, size=(min(step, samples - start), n))


def _percentile(values: np.ndarray) -> tuple[float | None, float | None]:
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None, None
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def _finite(x: SupportsFloat) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


Stat = Callable[[np.ndarray, np.ndarray], np.ndarray]
# A proportion's per-item parts: (numerator, denominator) masks of the items.
Parts = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


@attrs.frozen(eq=False)
class Metric:
    """The one definition of a figure: its `name`, its `formula` and
    `denominator` as docs/evaluation.md prints them, and how to compute it.
    A proportion (`parts` given) is #numerator / #denominator over items and
    gets a Wilson interval; any other figure gets a percentile bootstrap.
    Callable as a `Stat`."""

    name: str
    formula: str
    denominator: str
    stat: Stat
    parts: Parts | None = None
    better: str | None = "higher"  # higher, lower, or None: a description (coverage, tie rate), not a score

    @property
    def proportion(self) -> bool:
        return self.parts is not None

    def __call__(self, p: np.ndarray, g: np.ndarray) -> np.ndarray:
        return self.stat(p, g)

    def to_json(self) -> dict[str, Any]:
        return {
            "formula": self.formula,
            "denominator": self.denominator,
            "proportion": self.proportion,
            "better": self.better,
        }


@attrs.frozen(eq=False)
class Sampled:
    """A metric on the items (`point`) and on each resample (`rows`); a
    proportion's per-item numerator and denominator in `parts`."""

    point: float | None
    rows: np.ndarray
    n: int
    parts: tuple[np.ndarray, np.ndarray] | None = None

    def estimate(self) -> Estimate:
        """The figure with its 95% interval: Wilson for a proportion, else the
        percentile bootstrap, whose bounds are null when every resample gives
        the same value (a zero-width interval would claim certainty)."""
        if self.point is None:
            return Estimate(None, None, None, self.n)
        if self.parts is not None:
            return proportion(*self.parts)
        low, high = _spread(self.rows)
        return Estimate(self.point, low, high, self.n)

    def minus(self, base: Sampled) -> Estimate:
        """self - base, with the paired bootstrap interval. Where no resample
        moves the difference (both columns constant, or equal on every item),
        the bootstrap's interval has zero width and says nothing: a
        proportion's difference then gets `_unmoved`'s interval, any other
        figure's none."""
        if self.point is None or base.point is None:
            return Estimate(None, None, None, self.n)
        with _quiet():
            low, high = _spread(self.rows - base.rows)
        diff = self.point - base.point
        if low is None and self.parts is not None and base.parts is not None:
            low, high = _unmoved(self.parts, base.parts, self.point, base.point)
        return Estimate(diff, low, high, self.n)


def _unmoved(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray], pa: float, pb: float
) -> tuple[float | None, float | None]:
    """The interval of a difference of two proportions that no resample
    moves. Over the same items (the same denominator), the difference is the
    share of items counted by `a` alone minus the share counted by `b` alone,
    each bounded by its Wilson interval: no item counted by one alone, of
    30, reads [-0.114, +0.114]. Over different items, the square-and-add of
    the two Wilson intervals (Newcombe's, the correlation undefined, so 0)."""
    (num_a, den_a), (num_b, den_b) = a, b
    if np.array_equal(den_a, den_b):
        n = float(den_a.sum())
        if n <= 0:
            return None, None
        low_a, high_a = wilson(float((num_a > num_b).sum()), n)
        low_b, high_b = wilson(float((num_b > num_a).sum()), n)
        return low_a - high_b, high_a - low_b
    ea, eb = proportion(*a), proportion(*b)
    if ea.low is None or ea.high is None or eb.low is None or eb.high is None:
        return None, None
    return pa - pb - math.hypot(pa - ea.low, eb.high - pb), pa - pb + math.hypot(ea.high - pa, pb - eb.low)


def _spread(values: np.ndarray) -> tuple[float | None, float | None]:
    """The percentile interval, or no interval when it has zero width."""
    low, high = _percentile(values)
    if low is not None and high is not None and high - low <= 1e-12:
        return None, None
    return low, high


def sample(stat: Stat, pred: Sequence[float], gold: Sequence[float], samples: int = BOOTSTRAP_SAMPLES) -> Sampled:
    """`stat` on the paired columns and on every resample of them (a
    proportion `Metric` also keeps its per-item parts, for its interval)."""
    p = np.asarray(pred, dtype=float)
    g = np.asarray(gold, dtype=float)
    n = len(p)
    if n == 0:
        return Sampled(None, np.empty(0), 0)
    with _quiet():
        point = _finite(stat(p[None, :], g[None, :])[0])
        # Row by row, a statistic does not depend on the rows beside it.
        rows = np.concatenate([np.asarray(stat(p[idx], g[idx]), dtype=float) for idx in resamples(n, samples)])
    parts = None
    if isinstance(stat, Metric) and stat.parts is not None:
        num, den = stat.parts(p, g)
        parts = (np.asarray(num, dtype=float), np.asarray(den, dtype=float))
    return Sampled(point, rows, n, parts)


def figure(kind: str, name: str, pred: Sequence[float], gold: Sequence[float]) -> float | None:
    """One metric on the items, with no interval; None when undefined."""
    p = np.asarray(pred, dtype=float)[None, :]
    g = np.asarray(gold, dtype=float)[None, :]
    if p.size == 0:
        return None
    with _quiet():
        return _finite(METRICS[kind][name](p, g)[0])


# --- statistics, one value per row --------------------------------------------


def _mean(mask: np.ndarray) -> np.ndarray:
    out: np.ndarray = mask.mean(axis=-1)
    return out


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out: np.ndarray = num.sum(axis=-1) / den.sum(axis=-1)
    return out


def _pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r of each row pair; NaN where a row is constant."""
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    out: np.ndarray = (xc * yc).sum(-1) / np.sqrt((xc * xc).sum(-1) * (yc * yc).sum(-1))
    return out


def _spearman(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    # Pearson on average ranks (ties share their mean rank).
    return _pearson(rankdata(x, axis=-1), rankdata(y, axis=-1))


# Up to this many item pairs, tau-b is counted pair by pair for all resamples
# at once (a thousand scipy calls cost about a second); above it, scipy's
# O(n log n) count per row is the cheaper.
_KENDALL_PAIRS = 4096


def _kendall(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row pair, as scipy's `kendalltau` gives it
    (the same integer counts and float operations, so the same bits); NaN
    where a row is constant."""
    out = np.full(len(x), np.nan)
    rows = np.flatnonzero((np.ptp(x, axis=-1) > 0) & (np.ptp(y, axis=-1) > 0))
    first, second = np.triu_indices(x.shape[-1], 1)
    pairs = len(first)
    if not len(rows):
        return out
    if pairs > _KENDALL_PAIRS:
        from scipy.stats import kendalltau

        for row in rows:
            out[row] = kendalltau(x[row], y[row]).statistic
        return out
    step = (1 << 21) // pairs  # rows a time: a few MB of pair signs
    for start in range(0, len(rows), step):
        r = rows[start : start + step]
        sx, sy = (_signs(v[r][:, first], v[r][:, second]) for v in (x, y))
        concordant_minus_discordant = (sx * sy).sum(axis=-1, dtype=np.int64)
        untied_x, untied_y = np.count_nonzero(sx, axis=-1), np.count_nonzero(sy, axis=-1)
        tau = concordant_minus_discordant / np.sqrt(untied_x) / np.sqrt(untied_y)
        out[r] = np.minimum(1.0, np.maximum(-1.0, tau))
    return out


def _signs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sign(a - b) as int8, by comparison (so equal infinities tie)."""
    out: np.ndarray = (a > b).view(np.int8) - (a < b).view(np.int8)
    return out


def _classes(p: np.ndarray, g: np.ndarray) -> int:
    return int(max(p.max(), g.max())) + 1


def _macro_f1(p: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Mean F1 over the classes present in the gold or the predictions of a row."""
    f1s = []
    for c in range(_classes(p, g)):
        tp = ((p == c) & (g == c)).sum(-1)
        fp = ((p == c) & (g != c)).sum(-1)
        fn = ((p != c) & (g == c)).sum(-1)
        den = 2 * tp + fp + fn
        f1s.append(np.where(den > 0, 2 * tp / np.where(den > 0, den, 1), np.nan))
    out: np.ndarray = np.nanmean(np.stack(f1s), axis=0)
    return out


def _kappa(p: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Cohen's kappa: (observed - chance agreement) / (1 - chance agreement)."""
    po = (p == g).mean(-1)
    pe = sum((p == c).mean(-1) * (g == c).mean(-1) for c in range(_classes(p, g)))
    out: np.ndarray = (po - pe) / (1 - pe)
    return out


def _decided(p: np.ndarray) -> np.ndarray:
    return p <= SECOND


def _rate(
    name: str, formula: str, denominator: str, num: Stat, den: Stat | None = None, better: str | None = "higher"
) -> Metric:
    """A proportion: #(items with `num` among those with `den`) / #(items with `den`)."""
    whole = den or (lambda p, g: np.ones_like(p, dtype=bool))

    def parts(p: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = np.broadcast_to(whole(p, g), np.shape(p))
        return num(p, g) & d, d

    return Metric(name, formula, denominator, lambda p, g: _ratio(*parts(p, g)), parts, better)


SCORED = "scored items"
_exact = lambda p, g: p == g  # noqa: E731
_answered = lambda p, g: p != ABSTAIN  # noqa: E731
_decided_non_tie = lambda p, g: _decided(p) & (g != TIE)  # noqa: E731

_ALL = (
    _rate("exact", "mean of [p_i = g_i]", SCORED, _exact),
    _rate("within_1", "mean of [abs(p_i - g_i) <= 1]", SCORED, lambda p, g: np.abs(p - g) <= 1),
    Metric("mae", "mean of abs(p_i - g_i)", SCORED, lambda p, g: _mean(np.abs(p - g)), better="lower"),
    Metric(
        "pearson",
        "sum((p_i - mean p)(g_i - mean g)) / sqrt(sum (p_i - mean p)^2 * sum (g_i - mean g)^2)",
        SCORED,
        _pearson,
    ),
    Metric("spearman", "Pearson's r of the average ranks (ties share their mean rank)", SCORED, _spearman),
    Metric(
        "kendall",
        "Kendall's tau-b: (concordant - discordant) / sqrt((n0 - n1)(n0 - n2)), n0 = n(n-1)/2, n1 and n2 the "
        "tied pairs in p and in g",
        SCORED,
        _kendall,
    ),
    _rate("accuracy", "mean of [p_i = g_i]", SCORED, _exact),
    _rate("precision", "#(p = true and g = true) / #(p = true)", "items decided true", _exact, lambda p, g: p == 1),
    _rate("recall", "#(p = true and g = true) / #(g = true)", "items whose gold is true", _exact, lambda p, g: g == 1),
    Metric(
        "macro_f1",
        "mean over classes c present in p or g of F1_c = 2 TP_c / (2 TP_c + FP_c + FN_c)",
        SCORED,
        _macro_f1,
    ),
    Metric(
        "kappa",
        "Cohen's kappa: (p_o - p_e) / (1 - p_e), p_o = accuracy, p_e = sum over classes c of share(p = c) * "
        "share(g = c)",
        SCORED,
        _kappa,
    ),
    _rate(
        "agreement",
        "#(p = g) / #(items the judge answered: a candidate or `tie`): three-way agreement over first, second "
        "and tie, ties included",
        "items the judge answered",
        _exact,
        _answered,
    ),
    _rate(
        "agreement_without_ties",
        "#(p = g) / #(items whose gold is not `tie` and on which the judge picked a candidate)",
        "items with a non-tie gold on which the judge picked a candidate",
        _exact,
        _decided_non_tie,
    ),
    _rate(
        "coverage", "#(judge picked a candidate) / n: the decided share", SCORED, lambda p, g: _decided(p), None, None
    ),
    _rate("tie_rate", "#(p = tie) / n", SCORED, lambda p, g: p == TIE, None, None),
    _rate("abstain_rate", "#(judge abstained) / n", SCORED, lambda p, g: p == ABSTAIN, None, None),
)

DEFINITIONS: dict[str, Metric] = {m.name: m for m in _ALL}

_FAMILIES = {
    "numeric": ("exact", "within_1", "mae", "pearson", "spearman", "kendall"),
    "bool": ("accuracy", "precision", "recall", "macro_f1", "kappa"),
    "label": ("accuracy", "macro_f1", "kappa"),
    "pairwise": ("agreement", "agreement_without_ties", "coverage", "tie_rate", "abstain_rate"),
}
METRICS: dict[str, dict[str, Metric]] = {
    kind: {name: DEFINITIONS[name] for name in names} for kind, names in _FAMILIES.items()
}


def confusion(pred: Sequence[float], gold: Sequence[float], n_pred: int, n_gold: int) -> list[list[int]]:
    """counts[gold class][predicted class], from class codes (whole numbers)."""
    counts = [[0] * n_pred for _ in range(n_gold)]
    for p, g in zip(pred, gold, strict=True):
        counts[int(g)][int(p)] += 1
    return counts


# --- scalar statistics (the audit's rates) ---------------------------------------


def _safe(fn: Callable[..., SupportsFloat], *cols: np.ndarray) -> float | None:
    try:
        with _quiet():
            v = float(fn(*cols))
    except (ValueError, ZeroDivisionError, FloatingPointError):
        return None
    return v if math.isfinite(v) else None


def bootstrap(stat: Callable[..., float], *columns: Sequence[float], samples: int = BOOTSTRAP_SAMPLES) -> Estimate:
    """`stat` over the paired columns, with a percentile bootstrap interval."""
    cols = [np.asarray(c, dtype=float) for c in columns]
    n = len(cols[0]) if cols else 0
    if n == 0:
        return Estimate(None, None, None, 0)
    point = _safe(stat, *cols)
    values = np.array(
        [v for idx in resamples(n, samples) for row in idx if (v := _safe(stat, *(c[row] for c in cols))) is not None]
    )
    if point is None or values.size == 0:
        return Estimate(point, None, None, n)
    low, high = _percentile(values)
    return Estimate(point, low, high, n)


# --- proportions (honest at 0% and 100%) ------------------------------------------

Z95 = 1.959963984540054  # the standard normal's 97.5th percentile


def wilson(k: float, n: float, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of k successes in n trials (n > 0): never of
    zero width, so 0/30 reads [0, 0.114] and 30/30 [0.886, 1]."""
    p = k / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(max(p * (1 - p), 0.0) / n + z2 / (4 * n * n)) / denom
    # At the edges the bound is exactly 0 or 1 (floating point leaves 1 - 1e-16).
    low = 0.0 if k <= 0 else max(0.0, centre - half)
    high = 1.0 if k >= n else min(1.0, centre + half)
    return low, high


def proportion(counts: Sequence[float] | np.ndarray, totals: Sequence[float] | np.ndarray) -> Estimate:
    """sum(counts) / sum(totals) with a 95% Wilson interval, `n` the number of
    clusters (items). Units measured within one item are not independent, so
    the interval is taken on the effective number of units: the total over
    the design effect (the ratio estimator's between-item variance over the
    binomial one, never below 1), which is the plain Wilson interval when each
    item holds one unit or the rate is 0 or 1."""
    c = np.asarray(counts, dtype=float)
    t = np.asarray(totals, dtype=float)
    m, total = len(c), float(t.sum()) if len(t) else 0.0
    if m == 0 or total <= 0:
        return Estimate(None, None, None, m)
    r = float(c.sum()) / total
    n_eff = total
    if 0 < r < 1:
        # Without the m/(m-1) correction, so that one unit per item gives a design effect of exactly 1.
        between = float(np.sum((c - r * t) ** 2)) / (total * total)
        binomial = r * (1 - r) / total
        n_eff = total / max(1.0, between / binomial)
    low, high = wilson(r * n_eff, n_eff)
    return Estimate(r, low, high, m)
