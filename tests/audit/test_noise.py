"""Repeat noise is measured leave-one-out, so a perturbation that changes
nothing shows no excess over it."""

import random
from typing import cast

import attrs

from rubriclang.audit.judge import JudgeInfo
from rubriclang.audit.metrics import Scorer


@attrs.frozen
class _Judge:
    type: str = "binary"


def _trace(value):
    return {"readout": {"status": "ok", "decision": value}}


def test_identical_repeats_have_no_noise():
    assert Scorer(cast(JudgeInfo, _Judge()), 0).repeat_flips([_trace(True)] * 3) == (0, 3)


def test_one_repeat_measures_no_noise():
    # Nothing to compare it with: 0 flips of 0 measured, not 0 of 1.
    assert Scorer(cast(JudgeInfo, _Judge()), 0).repeat_flips([_trace(True)]) == (0, 0)


def test_failed_repeats_are_neither_flips_nor_measured():
    failed = {"readout": {"status": "error", "decision": None}}
    scorer = Scorer(cast(JudgeInfo, _Judge()), 0)
    assert scorer.repeat_flips([_trace(True), failed, _trace(True)]) == (0, 2)
    assert scorer.loo_flips([failed, failed], [_trace(True), _trace(True)]) == (0, 0)
    assert scorer.repeat_flips([failed] * 3) == (0, 0)


def test_a_no_effect_perturbation_shows_no_excess_on_average():
    # A judge that says True with probability 0.7, independently each time:
    # a "variant" is just more draws of the same judge.
    scorer = Scorer(cast(JudgeInfo, _Judge()), 0)
    rng = random.Random(1)
    noise = excess = 0
    trials = 4000
    for _ in range(trials):
        base = [_trace(rng.random() < 0.7) for _ in range(3)]
        variant = [_trace(rng.random() < 0.7) for _ in range(3)]
        noise += scorer.repeat_flips(base)[0]
        excess += scorer.loo_flips(variant, base)[0]
    repeat_rate = noise / (3 * trials)
    variant_rate = excess / (9 * trials)
    # The first estimate (repeats against a summary they made, variants
    # against the whole baseline) gave 0.21 and 0.39 here: a spurious excess
    # of 0.18 for a perturbation that does nothing.
    assert abs(variant_rate - repeat_rate) < 0.01
