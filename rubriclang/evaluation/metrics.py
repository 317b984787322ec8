"""Agreement metrics between a judge's decisions and gold labels.

Every figure comes with a percentile bootstrap 95% interval over items
(fixed seed, so reports are reproducible byte for byte).
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import attrs
import numpy as np

BOOTSTRAP_SAMPLES = 1000
SEED = 20261130


@attrs.frozen
class Estimate:
    """A figure, its 95% interval, and how many items it rests on."""

    value: float | None
    low: float | None
    high: float | None
    n: int

    def to_json(self) -> dict:
        r = lambda x: None if x is None else round(x, 6)  # noqa: E731
        return {"value": r(self.value), "low": r(self.low), "high": r(self.high), "n": self.n}

    def text(self, digits: int = 3) -> str:
        if self.value is None:
            return "n/a"
        return f"{self.value:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def _safe(fn, *cols) -> float | None:
    try:
        with np.errstate(all="ignore"):
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
    rng = np.random.default_rng(SEED)
    idx = rng.integers(0, n, size=(samples, n))
    values = [v for row in idx if (v := _safe(stat, *(c[row] for c in cols))) is not None]
    if point is None or not values:
        return Estimate(point, None, None, n)
    low, high = np.percentile(values, [2.5, 97.5])
    return Estimate(point, float(low), float(high), n)


def _ranks(a: np.ndarray) -> np.ndarray:
    """Average ranks along the last axis (ties share their mean rank)."""
    from scipy.stats import rankdata

    return rankdata(a, axis=-1)


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r of each row pair; NaN where a row is constant."""
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    with np.errstate(all="ignore"):
        return (xc * yc).sum(-1) / np.sqrt((xc * xc).sum(-1) * (yc * yc).sum(-1))


def correlation(kind: str, x: Sequence[float], y: Sequence[float], samples: int = BOOTSTRAP_SAMPLES) -> Estimate:
    """Pearson, Spearman or Kendall (tau-b) with a bootstrap interval.

    Pearson and Spearman are computed for all resamples at once (Spearman is
    Pearson on average ranks); Kendall's tau-b goes through scipy per sample.
    Constant inputs have no correlation: those samples are dropped."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    n = len(x)
    if n == 0:
        return Estimate(None, None, None, 0)
    rng = np.random.default_rng(SEED)
    idx = rng.integers(0, n, size=(samples, n))
    if kind == "kendall":
        return bootstrap(_kendall, x, y, samples=samples)
    xs, ys = x[idx], y[idx]
    if kind == "spearman":
        point = _pearson_rows(_ranks(x), _ranks(y))
        values = _pearson_rows(_ranks(xs), _ranks(ys))
    else:
        point = _pearson_rows(x, y)
        values = _pearson_rows(xs, ys)
    point = float(point) if np.isfinite(point) else None
    values = values[np.isfinite(values)]
    if point is None or values.size == 0:
        return Estimate(point, None, None, n)
    low, high = np.percentile(values, [2.5, 97.5])
    return Estimate(point, float(low), float(high), n)


def _kendall(x, y):
    from scipy.stats import kendalltau

    if np.ptp(x) == 0 or np.ptp(y) == 0:
        raise ValueError("constant input")
    return kendalltau(x, y).statistic


def pointwise_metrics(pred: Sequence[float], gold: Sequence[float]) -> dict[str, Estimate]:
    """Exact agreement, within-1 accuracy, MAE, and Pearson/Spearman/Kendall."""
    return {
        "exact": bootstrap(lambda p, g: np.mean(p == g), pred, gold),
        "within_1": bootstrap(lambda p, g: np.mean(np.abs(p - g) <= 1), pred, gold),
        "mae": bootstrap(lambda p, g: np.mean(np.abs(p - g)), pred, gold),
        "pearson": correlation("pearson", pred, gold),
        "spearman": correlation("spearman", pred, gold),
        "kendall": correlation("kendall", pred, gold),
    }


def binary_metrics(pred: Sequence[bool], gold: Sequence[bool]) -> dict[str, Estimate]:
    """Accuracy, and precision/recall of the positive class."""
    p = [1.0 if x else 0.0 for x in pred]
    g = [1.0 if x else 0.0 for x in gold]
    return {
        "accuracy": bootstrap(lambda a, b: np.mean(a == b), p, g),
        "precision": bootstrap(lambda a, b: np.sum((a == 1) & (b == 1)) / np.sum(a == 1), p, g),
        "recall": bootstrap(lambda a, b: np.sum((a == 1) & (b == 1)) / np.sum(b == 1), p, g),
    }


def pairwise_metrics(decisions: Sequence[str | None], gold: Sequence[str]) -> dict[str, Estimate]:
    """Accuracy over decided items, coverage (decided / all), tie and abstain
    rates. A decision is a candidate id, "tie", or None (abstain or error)."""
    decided = [1.0 if d not in (None, "tie") else 0.0 for d in decisions]
    correct = [1.0 if d == g else 0.0 for d, g in zip(decisions, gold)]
    tie = [1.0 if d == "tie" else 0.0 for d in decisions]
    abstain = [1.0 if d is None else 0.0 for d in decisions]
    return {
        "accuracy": bootstrap(lambda c, k: np.sum(c * k) / np.sum(k), correct, decided),
        "accuracy_all": bootstrap(lambda c: np.mean(c), correct),
        "coverage": bootstrap(lambda k: np.mean(k), decided),
        "tie_rate": bootstrap(lambda t: np.mean(t), tie),
        "abstain_rate": bootstrap(lambda a: np.mean(a), abstain),
    }
