"""Proportions get intervals that are honest at 0% and 100% (Wilson score)."""

import math

from hypothesis import given
from hypothesis import strategies as st

from rubriclang.evaluation.metrics import proportion, wilson


def test_none_of_thirty_reads_zero_to_0_114():
    low, high = wilson(0, 30)
    assert low == 0.0 and math.isclose(high, 0.1135, abs_tol=5e-4)


def test_thirty_of_thirty_reads_0_886_to_one():
    low, high = wilson(30, 30)
    assert high == 1.0 and math.isclose(low, 0.8865, abs_tol=5e-4)


def test_one_unit_per_item_is_the_plain_wilson_interval():
    est = proportion([1] * 7 + [0] * 13, [1] * 20)
    assert (est.low, est.high) == wilson(7, 20) and est.value == 0.35 and est.n == 20


def test_clustered_units_widen_the_interval():
    # Three items that each hold 10 units, all alike within an item: 3 effective units, not 30.
    clustered = proportion([10, 0, 10], [10, 10, 10])
    independent = proportion([1] * 20 + [0] * 10, [1] * 30)
    assert clustered.value == independent.value
    assert clustered.low is not None and clustered.high is not None
    assert independent.low is not None and independent.high is not None
    assert clustered.high - clustered.low > independent.high - independent.low


def test_nothing_measured_is_no_figure():
    assert proportion([], []).value is None
    assert proportion([0, 0], [0, 0]).value is None


@given(st.integers(0, 200), st.integers(1, 200))
def test_wilson_interval_contains_the_rate_and_has_width(k, n):
    k = min(k, n)
    low, high = wilson(k, n)
    assert 0.0 <= low <= k / n <= high <= 1.0
    assert high - low > 0
