"""The gold reader's API: canonical values per judge type, label maps."""

from __future__ import annotations

import pytest

from rubriclang.catalog.types import JType
from rubriclang.evaluation.gold import GoldType, GoldValueError, parse_gold, parse_label_map

ORD = GoldType("ordinal", JType("ordinal", 1, 5))
SCORE = GoldType("score", JType("score", 0, 1))
BOOL = GoldType("bool", JType("bool"))
LABEL = GoldType("label", JType("label", labels=("good", "bad")))
PAIR = GoldType("pairwise", candidates=("output_1", "output_2"))


@pytest.mark.parametrize(
    "gtype, raw, canonical",
    [
        (ORD, 3, 3), (ORD, 3.0, 3), (ORD, "4", 4), (ORD, " 5 ", 5),
        (SCORE, 0.25, 0.25), (SCORE, "0.5", 0.5), (SCORE, 1, 1),
        (BOOL, True, True), (BOOL, "No", False), (BOOL, "YES", True),
        (LABEL, "bad", "bad"),
        (PAIR, "output_2", "output_2"), (PAIR, "tie", "tie"),
    ],
)  # fmt: skip
def test_gold_is_read_as_the_judges_canonical_value(gtype, raw, canonical):
    got = parse_gold(raw, gtype)
    assert got == canonical and type(got) is type(canonical)


@pytest.mark.parametrize(
    "gtype, raw",
    [
        (ORD, 0),
        (ORD, "3.5"),
        (ORD, float("nan")),
        (ORD, 10**400),
        (SCORE, 1.5),
        (SCORE, "inf"),
        (BOOL, 0),
        (BOOL, "y"),
        (LABEL, "Bad"),
        (PAIR, 1),
        (PAIR, "Tie"),
        (PAIR, None),
    ],
)
def test_gold_that_does_not_fit_raises_with_what_was_expected(gtype, raw):
    with pytest.raises(GoldValueError) as exc:
        parse_gold(raw, gtype)
    assert exc.value.message.startswith("gold ") and gtype.expected() in exc.value.message


def test_a_label_map_turns_data_set_codes_into_gold_and_misses_no_code():
    pandalm = parse_label_map(["1=output_1,2=output_2", "0=tie"])
    assert [parse_gold(c, PAIR, pandalm) for c in (1, 2, 0, "1", 2.0)] == [
        "output_1",
        "output_2",
        "tie",
        "output_1",
        "output_2",
    ]
    with pytest.raises(GoldValueError, match="not a code of the label map"):
        parse_gold(3, PAIR, pandalm)
    assert parse_gold(1, BOOL, parse_label_map("1=true,0=false")) is True
