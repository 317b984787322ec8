"""Metric formulas on small cases worked by hand, paired differences, and
determinism of the intervals."""

from __future__ import annotations

import warnings

import pytest

from rubriclang.evaluation.metrics import ABSTAIN, TIE, bootstrap, figure, sample


def test_categorical_figures_match_the_hand_computed_values():
    # gold:  0 0 0 0 1 1 1 1 ; pred: 0 0 0 1 1 1 2 2   (classes 0, 1, 2)
    g = [0, 0, 0, 0, 1, 1, 1, 1]
    p = [0, 0, 0, 1, 1, 1, 2, 2]
    assert figure("label", "accuracy", p, g) == 5 / 8
    # F1: class 0 = 6/7, class 1 = 4/7, class 2 = 0 -> mean 10/21
    assert figure("label", "macro_f1", p, g) == pytest.approx(10 / 21)
    # p_o = 5/8; p_e = 3/8*4/8 + 3/8*4/8 + 2/8*0 = 3/8
    assert figure("label", "kappa", p, g) == pytest.approx((5 / 8 - 3 / 8) / (1 - 3 / 8))


def test_pairwise_agreement_without_ties_leaves_out_gold_and_judge_ties_agreement_keeps_them():
    g = [0, 1, TIE, TIE, 0, 1]
    p = [0, 0, 0, TIE, TIE, ABSTAIN]
    assert figure("pairwise", "agreement_without_ties", p, g) == 1 / 2  # items 1 and 2
    assert figure("pairwise", "agreement", p, g) == 2 / 5  # items 1 and 4, of the 5 answered
    assert figure("pairwise", "coverage", p, g) == 3 / 6
    assert figure("pairwise", "tie_rate", p, g) == 2 / 6
    assert figure("pairwise", "abstain_rate", p, g) == 1 / 6


def test_numeric_figures_and_undefined_ones():
    assert figure("numeric", "mae", [1, 2, 3], [1, 3, 5]) == 1.0
    assert figure("numeric", "within_1", [1, 2, 3], [1, 3, 5]) == 2 / 3
    assert figure("numeric", "kendall", [1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert figure("numeric", "pearson", [2, 2, 2], [1, 2, 3]) is None
        assert figure("bool", "precision", [0, 0], [1, 0]) is None
        assert sample(lambda p, g: (p == g).mean(-1) / 0, [1], [1]).estimate().value is None


def test_a_paired_difference_of_a_column_with_itself_is_zero_with_no_interval_rather_than_a_certain_one():
    from rubriclang.evaluation.metrics import METRICS

    p, g = [1, 2, 3, 4, 5, 1, 2], [1, 3, 3, 5, 4, 2, 2]
    s = sample(METRICS["numeric"]["spearman"], p, g)
    d = s.minus(sample(METRICS["numeric"]["spearman"], p, g))
    assert (d.value, d.low, d.high) == (0.0, None, None)
    assert d.text() == "0.000 [n/a]"


def test_intervals_are_the_same_on_every_call():
    a = bootstrap(lambda c: c.mean(), [0, 1, 1, 0, 1])
    assert a.low is not None and a.value is not None and a.high is not None
    assert a == bootstrap(lambda c: c.mean(), [0, 1, 1, 0, 1]) and a.low < a.value < a.high


def test_a_proportions_difference_no_resample_moves_is_bounded_by_the_items_one_column_alone_counts():
    from rubriclang.evaluation.metrics import METRICS

    acc = METRICS["bool"]["accuracy"]
    right, wrong = sample(acc, [1] * 30, [1] * 30), sample(acc, [0] * 30, [1] * 30)
    same = right.minus(sample(acc, [1] * 30, [1] * 30))
    assert same.low is not None and same.high is not None
    assert (same.value, round(same.low, 3), round(same.high, 3)) == (0.0, -0.114, 0.114)  # no disagreement seen of 30
    apart = right.minus(wrong)
    assert apart.low is not None
    assert (apart.value, round(apart.low, 3), apart.high) == (1.0, 0.773, 1.0)
    flipped = wrong.minus(right)
    assert flipped.high is not None
    assert (flipped.low, round(flipped.high, 3)) == (-1.0, -0.773)
