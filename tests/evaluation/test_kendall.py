"""Kendall's tau-b over bootstrap rows, counted for all rows at once, is
scipy's `kendalltau` to the last bit: the same figures and intervals in
every report, for ties, infinities and constant rows alike."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau

from rubriclang.evaluation.metrics import METRICS

KENDALL = METRICS["numeric"]["kendall"]


def _scipy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The per-row scipy loop the metric replaced."""
    out = np.full(len(x), np.nan)
    for i, (a, b) in enumerate(zip(x, y, strict=True)):
        if np.ptp(a) > 0 and np.ptp(b) > 0:
            out[i] = kendalltau(a, b).statistic
    return out


values = st.one_of(st.integers(1, 5).map(float), st.sampled_from([-np.inf, np.inf, 0.5, 1e300]))


@st.composite
def paired_rows(draw):
    n = draw(st.integers(1, 12))
    rows = draw(st.integers(1, 6))
    cell = st.lists(values, min_size=n, max_size=n)
    x = np.array(draw(st.lists(cell, min_size=rows, max_size=rows)))
    y = np.array(draw(st.lists(cell, min_size=rows, max_size=rows)))
    return x, y


@settings(max_examples=100, deadline=None)
@given(paired_rows())
def test_each_rows_tau_b_is_scipys_to_the_bit(xy):
    x, y = xy
    with np.errstate(invalid="ignore"):  # inf - inf in a row's range: that row is undefined
        assert KENDALL(x, y).tobytes() == _scipy(x, y).tobytes()


def test_bootstrap_sized_rows_with_ties_match_scipy_on_either_side_of_the_pair_count_switch():
    rng = np.random.default_rng(7)
    for n in (2, 24, 91, 92):  # 91 items: 4,095 pairs, counted at once; 92: 4,186, scipy row by row
        x = rng.integers(1, 6, (300, n)).astype(float)
        y = rng.integers(1, 4, (300, n)).astype(float)
        x[0] = 2.0  # a constant row: undefined
        got = KENDALL(x, y)
        assert np.isnan(got[0])
        assert got.tobytes() == _scipy(x, y).tobytes()
