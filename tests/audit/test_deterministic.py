"""Deterministic perturbations and their structural checks."""

from __future__ import annotations

from random import Random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rubriclang.audit.perturb import deterministic
from rubriclang.audit.perturb.generate import rng_for

PROBLEM = (
    "Janet's ducks lay 16 eggs per day. She eats three for breakfast and bakes muffins with 4,000 grams of "
    "flour at 2.5 degrees."
)


def test_typos_keep_every_number_and_pass_their_check():
    noisy = deterministic.typo_noise(PROBLEM, Random(0), rate=0.3)
    assert noisy is not None and noisy != PROBLEM
    assert deterministic._NUMBER.findall(noisy) == ["16", "4,000", "2.5"]
    assert deterministic.check_typos(PROBLEM, noisy) is None


def test_typos_are_the_same_for_the_same_seed_item_and_operator():
    a = deterministic.typo_noise(PROBLEM, rng_for(0, "q1", "typo_noise", "input"), 0.2)
    b = deterministic.typo_noise(PROBLEM, rng_for(0, "q1", "typo_noise", "input"), 0.2)
    c = deterministic.typo_noise(PROBLEM, rng_for(1, "q1", "typo_noise", "input"), 0.2)
    assert a == b != c


@pytest.mark.parametrize(
    "variant, why",
    [
        (PROBLEM.replace("16", "61"), "number"),
        (PROBLEM.replace("ducks", "dukcs"), None),  # an inner swap is a typo
        (PROBLEM.replace("ducks", "udcks"), "inner letters"),  # the first letter moved
        (PROBLEM.replace("ducks", "ducs"), "inner letters"),  # a letter dropped
        (PROBLEM.replace("ducks lay", "ducks  lay"), "spacing"),
        (PROBLEM, "no word changed"),
    ],
)
def test_the_typo_check_accepts_only_inner_swaps(variant, why):
    problem = deterministic.check_typos(PROBLEM, variant)
    assert (problem is None) if why is None else (problem is not None and why in problem)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from("abcdeXYZ 0123456789.,\n'"), min_size=1, max_size=200), st.integers(0, 10**6))
def test_any_typo_the_rule_makes_passes_the_check(text, seed):
    noisy = deterministic.typo_noise(text, Random(seed), 0.2)
    assert noisy is None or deterministic.check_typos(text, noisy) is None


@pytest.mark.parametrize(
    "text, kept, unit",
    [
        ("Steps:\n- add 2\n- add 3\n  and carry\n- total 5", "Steps:\n- add 2\n- add 3\n  and carry", "list_item"),
        ("1. one\n2. two\n\nSo the answer is 2.", "1. one\n\nSo the answer is 2.", "list_item"),
        ("First part.\n\nSecond part. More.", "First part.", "paragraph"),
        ("She sells 9 eggs.\nShe makes $18.\nThe answer is 18.", "She sells 9 eggs.\nShe makes $18.", "sentence"),
        ('He said "go." Then 3.5 more! Done?', 'He said "go." Then 3.5 more!', "sentence"),
    ],
)
def test_partial_completion_drops_the_last_item_else_paragraph_else_sentence(text, kept, unit):
    assert deterministic.partial_completion(text) == (kept, unit)
    assert deterministic.check_partial(text, kept, unit) is None


def test_a_single_sentence_has_nothing_to_drop():
    assert deterministic.partial_completion("The answer is 18.") is None


@pytest.mark.parametrize(
    "text, variant, unit",
    [
        ("A. B. C.", "A.", "sentence"),  # two sentences removed
        ("A. B. C.", "A. B. C", "sentence"),  # not a sentence boundary
        ("A.\n\nB.\n\nC.", "A.", "paragraph"),
        ("- a\n- b\n- c", "- a\n- c", "list_item"),  # not the last item
        ("- a\n- b", "", "list_item"),
    ],
)
def test_the_partial_completion_check_rejects_other_cuts(text, variant, unit):
    assert deterministic.check_partial(text, variant, unit) is not None


def test_a_swap_is_exactly_a_swap():
    pair = [["a", "first"], ["b", "second"]]
    swapped = deterministic.position_swap(pair)
    assert swapped == [["b", "second"], ["a", "first"]]
    assert deterministic.check_swap(pair, swapped) is None
    assert deterministic.check_swap(pair, [["b", "first"], ["a", "second"]]) is not None  # texts moved, ids did not
    assert deterministic.check_swap(pair, pair) is not None
