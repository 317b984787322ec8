"""The one "did you mean" search (`rubriclang.nearest.difflib_match`): the
matches difflib finds, and no search at all for a name too long to match
any option (difflib indexes every character of it first); and the search over
names with their aliases (`nearest_named`), which the checker runs over the
catalog's operators and procedures."""

from __future__ import annotations

import difflib
import tracemalloc

import pytest

from rubriclang.nearest import difflib_match, nearest_named

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


# -- names with their aliases (the catalog's `aliases`) -----------------------------------


def test_an_alias_written_out_finds_its_entry_over_a_closer_name():
    # By letters `reduce.midrange` is nearer `reduce.average` (0.76) than `reduce.mean` (0.64).
    spellings = {"reduce.mean": ["average"], "reduce.midrange": [], "reduce.median": []}
    assert difflib_match("reduce.average", spellings) == ["reduce.midrange"]
    assert nearest_named("reduce.average", spellings) == ["reduce.mean"]


def test_a_misspelt_alias_still_finds_its_entry():
    assert nearest_named("reduce.averge", {"reduce.mean": ["average"], "reduce.midrange": []}) == ["reduce.mean"]


def test_an_alias_keeps_its_entrys_prefix():
    spellings = {"reduce.mean": ["average"], "transform.rescale": ["average"]}
    assert nearest_named("transform.average", spellings) == ["transform.rescale"]
    assert nearest_named("average", {"mean": ["average"]}) == ["mean"]  # undotted names stay undotted


def test_each_entry_is_named_once_however_many_of_its_spellings_match():
    spellings = {"reduce.mean": ["mean_value", "means"], "reduce.median": []}
    assert nearest_named("reduce.meann", spellings, n=3) == ["reduce.mean", "reduce.median"]


def test_without_aliases_it_ranks_as_difflib_does():
    assert nearest_named("jduge", dict.fromkeys(OPTIONS, ())) == difflib_match("jduge", OPTIONS) == ["judge"]
    assert nearest_named("zzz", dict.fromkeys(OPTIONS, ())) == []


def test_the_catalog_suggests_by_meaning_even_beside_a_closer_new_operator():
    from rubriclang.catalog import load_catalog

    catalog = load_catalog(plugins=False)
    operators = {name: spec.aliases for name, spec in catalog.operators.items()}
    assert nearest_named("reduce.average", {**operators, "reduce.midrange": ()}) == ["reduce.mean"]
    assert nearest_named("reduce.avg", operators) == ["reduce.mean"]  # by letters: `reduce.max`
    procedures = {name: spec.aliases for name, spec in catalog.procedures.items()}
    assert nearest_named("llm.classify", procedures) == ["llm.choose"]  # by letters: nothing


def test_every_alias_is_a_plain_word_that_names_no_other_entry():
    """An alias is another name for its entry, never a name of another one
    (the entry would hide behind it), and has no prefix of its own."""
    from rubriclang.catalog import load_catalog

    catalog = load_catalog(plugins=False)
    for entries in (catalog.operators, catalog.procedures):
        for name, spec in entries.items():
            prefix = name.rpartition(".")[0]
            for alias in spec.aliases:
                assert alias.isidentifier() and f"{prefix}.{alias}" not in entries, (name, alias)
