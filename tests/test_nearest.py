"""The one "did you mean" search (`rubriclang.nearest.difflib_match`): the
matches difflib finds, and no search at all for a name too long to match
any option (difflib indexes every character of it first)."""

from __future__ import annotations

import difflib
import tracemalloc

import pytest

from rubriclang.nearest import difflib_match

OPTIONS = ["judge", "items", "repeats", "operators", "tolerance", "concurrency"]


@pytest.mark.parametrize(
    ("name", "n", "cutoff"),
    [("jduge", 1, 0.6), ("operatrs", 3, 0.6), ("zzz", 1, 0.6), ("repeat", 2, 0.8), ("itemsitemsitem", 1, 0.5)],
)
def test_it_finds_what_difflib_finds(name, n, cutoff):
    assert difflib_match(name, OPTIONS, n=n, cutoff=cutoff) == difflib.get_close_matches(
        name, OPTIONS, n=n, cutoff=cutoff
    )


def test_the_longest_name_that_can_still_match_is_searched():
    # 7/3 of `judge` (5) is 11.7: an 11-character name can reach 0.6 (10/16), a 12-character one cannot (10/17).
    assert difflib_match("judgejudgej", ["judge"]) == ["judge"]
    assert difflib_match("judgejudgeju", ["judge"]) == []
    assert difflib.get_close_matches("judgejudgeju", ["judge"]) == []


def test_a_huge_name_costs_no_index():
    name, upper = "k" * 4_000_000, "K" * 4_000_000
    tracemalloc.start()
    try:
        assert difflib_match(name, OPTIONS) == []
        assert difflib_match(upper, OPTIONS, n=3, cutoff=0.8) == []
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, peak  # difflib's index of it took about 150 bytes a character


def test_a_ratio_exactly_at_the_cutoff_still_matches():
    # 2 * 3 / (7 + 3) is 0.6: `maximum` is close enough to `max`, as difflib says.
    assert difflib_match("maximum", ["max", "min"]) == ["max"] == difflib.get_close_matches("maximum", ["max", "min"])


def test_no_options_no_match():
    assert difflib_match("", []) == [] == difflib_match("x", [])
