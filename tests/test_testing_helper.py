"""The pytest helper pins verdicts and explains a wrong one."""

import pytest

import rubriclang
from rubriclang.testing import assert_verdict

GRAPH = """rubric math { version = 1 }
contract { scale = bool }
criterion correct: bool = rule.matches_reference { mode = numeric }
sink correct
readout pointwise { output = bool }
"""


def _item(response):
    return {"id": "1", "input": "2+2?", "response": response, "reference": "#### 4"}


def test_assert_verdict_passes_on_the_right_decision():
    rubric = rubriclang.loads(GRAPH)
    assert_verdict(rubric, _item("It is 4"), True)
    assert_verdict(rubric, _item("It is 5"), False)


def test_assert_verdict_explains_a_wrong_decision():
    rubric = rubriclang.loads(GRAPH)
    with pytest.raises(AssertionError) as info:
        assert_verdict(rubric, _item("It is 5"), True)
    assert "decided false on item `1`, expected True" in str(info.value)
    assert "correct: response=False" in str(info.value)


def test_assert_verdict_does_not_confuse_true_with_1():
    rubric = rubriclang.loads(GRAPH)
    with pytest.raises(AssertionError):
        assert_verdict(rubric, _item("It is 4"), 1)
