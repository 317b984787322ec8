"""Operator semantics: each standard operator on ordinary and absent values."""

import pytest

from rubriclang.catalog import load_catalog
from rubriclang.catalog.types import JType

O5 = JType("ordinal", 1, 5)
S01 = JType("score", 0, 1)

CASES = [
    # operator, ports, params, input types of single ports, expected
    ("transform.rescale", {"value": 3}, {"to": S01}, {"value": O5}, 0.5),
    ("transform.rescale", {"value": None}, {"to": S01}, {"value": O5}, None),
    ("transform.threshold", {"value": 4}, {"at": 4, "inclusive": True}, {"value": O5}, True),
    ("transform.threshold", {"value": 4}, {"at": 4, "inclusive": False}, {"value": O5}, False),
    ("transform.map", {"value": True}, {"values": {True: 5, False: 1}}, {"value": JType("bool")}, 5),
    ("transform.map", {"value": "formal"}, {"values": {"formal": 1, "casual": 0}}, {}, 1),
    ("transform.invert", {"value": 2}, {}, {"value": O5}, 4),
    ("transform.not", {"value": True}, {}, {}, False),
    ("transform.not", {"value": None}, {}, {}, None),
    ("transform.clamp", {"value": 7}, {"lo": 1, "hi": 5}, {"value": JType("score", 0, 10)}, 5),
    ("reduce.mean", {"inputs": [1, 2, None, 6]}, {}, {}, 3.0),
    ("reduce.mean", {"inputs": [None, None]}, {}, {}, None),
    ("reduce.weighted_mean", {"inputs": [5, 1]}, {"weights": [3, 1]}, {}, 4.0),
    ("reduce.weighted_mean", {"inputs": [None, 1]}, {"weights": [3, 1]}, {}, 1.0),
    ("reduce.weighted_mean", {"inputs": [5, None]}, {"weights": [0, 1]}, {}, None),
    ("reduce.min", {"inputs": [3, None, 2]}, {}, {}, 2),
    ("reduce.max", {"inputs": [3, None, 2]}, {}, {}, 3),
    ("reduce.median", {"inputs": [5, 1, 3, 4]}, {}, {}, 3.5),
    ("reduce.median", {"inputs": [5, 1, 3]}, {}, {}, 3),
    ("reduce.sum", {"inputs": [1, 2, None]}, {}, {}, 3),
    ("reduce.sum", {"inputs": [0.1, 0.2]}, {}, {}, 0.30000000000000004),
    ("reduce.all", {"inputs": [True, None, True]}, {}, {}, True),
    ("reduce.all", {"inputs": [True, False]}, {}, {}, False),
    ("reduce.any", {"inputs": [False, None]}, {}, {}, False),
    ("reduce.any", {"inputs": [None, None]}, {}, {}, None),
    ("reduce.count", {"inputs": [True, False, True, None]}, {}, {}, 2),
    ("gate.cap", {"value": 5, "when": True}, {"max": 4}, {}, 4),
    ("gate.cap", {"value": 5, "when": False}, {"max": 4}, {}, 5),
    ("gate.floor", {"value": 1, "when": True}, {"min": 3}, {}, 3),
    ("gate.veto", {"value": 5, "when": True}, {"to": 1}, {}, 1),
    ("gate.veto", {"value": None, "when": True}, {"to": 1}, {}, None),
    ("gate.mask", {"value": 5, "when": True}, {}, {}, None),
    ("gate.mask", {"value": 5, "when": False}, {}, {}, 5),
    ("transform.default", {"value": None}, {"value": True}, {}, True),
    ("transform.default", {"value": False}, {"value": True}, {}, False),
    ("transform.default", {"value": None}, {"value": "fair"}, {}, "fair"),
    ("transform.default", {"value": 0}, {"value": 3}, {}, 0),
    ("reduce.majority", {"inputs": [True, False, True]}, {}, {}, True),
    ("reduce.majority", {"inputs": [True, False, None]}, {}, {}, None),
    ("reduce.majority", {"inputs": [False, None, None]}, {}, {}, False),
    ("reduce.majority", {"inputs": [None, None]}, {}, {}, None),
    ("reduce.majority", {"inputs": ["a", "b", "c"]}, {}, {}, None),
    ("reduce.majority", {"inputs": ["b", "a", "b", None]}, {}, {}, "b"),
]


@pytest.mark.parametrize("name, ports, params, types, expected", CASES)
def test_operator_computes_documented_value(name, ports, params, types, expected):
    got = load_catalog().operators[name].function(ports, params, types)
    assert got == expected and type(got) is type(expected)


def test_every_catalog_operator_has_a_function():
    assert all(callable(op.function) for op in load_catalog(plugins=False).operators.values())


def test_sum_of_integers_stays_integer_for_ordinal_sinks():
    assert load_catalog().operators["reduce.sum"].function({"inputs": [2, 3]}, {}, {}) == 5


VOTE = """rubric vote { version = 1 }
contract { scale = ordinal[1, 5] }
criterion quality: ordinal[1, 5] = human.annotation { key = "quality" }
criterion a: bool? = human.annotation { key = "a", on_error = abstain }
criterion b: bool? = human.annotation { key = "b", on_error = abstain }
node vote = reduce.majority(inputs: [a, b])
node harmful = transform.default(value: vote) { value = true }
node safe = gate.veto(value: quality, when: harmful) { to = 1 }
sink safe
readout pointwise { output = ordinal[1, 5] }
"""


@pytest.mark.parametrize(
    "votes, expected",
    [
        ({"a": False, "b": False}, 4),  # a majority for "not harmful": the quality stands
        ({"a": True, "b": False}, 1),  # a tie: no majority, the default (harmful) vetoes
        ({"a": False}, 4),  # `b` abstains (no annotation): the present vote decides
        ({}, 1),  # both abstain: the default
    ],
)
def test_an_abstaining_vote_with_a_default_drives_a_gate(votes, expected):
    import rubriclang

    item = {"id": "1", "input": "", "response": "", "annotations": {"quality": 4, **votes}}
    result = rubriclang.loads(VOTE).evaluate(item)
    assert result.composition.decision.decision == expected
