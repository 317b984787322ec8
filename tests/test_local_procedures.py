"""The non-LLM criterion procedures, one behaviour per test, through the
real backend interface."""

import asyncio

import pytest

from rubriclang.catalog import load_catalog
from rubriclang.catalog.types import JType
from rubriclang.checker.graph import Criterion
from rubriclang.interp.backend import JudgmentRequest
from rubriclang.interp.items import item_from_json
from rubriclang.interp.local import LocalBackend
from rubriclang.interp.tables import ValueTable
from stdlib_ops.judges import final_number

BOOL = JType("bool")


def _criterion(procedure, type_=BOOL, **params):
    cat = load_catalog(plugins=False)
    spec = cat.procedures[procedure]
    full = {p.name: p.default for p in cat.procedure_params(spec)}
    full.update(params)
    return Criterion("c", type_, procedure, full)


def judge(procedure, item=None, type_=BOOL, backend=None, candidate="response", **params):
    item = item_from_json(item or {"id": "1", "input": "the input", "response": "the response"}, "t")
    request = JudgmentRequest(item, candidate, _criterion(procedure, type_, **params))
    return asyncio.run((backend or LocalBackend()).judge(request))


def _item(response, **extra):
    return {"id": "1", "input": "Question?", "response": response, **extra}


# -- rule.regex ------------------------------------------------------------------


def test_regex_searches_the_response():
    assert judge("rule.regex", _item("see [12]"), pattern=r"\[\d+\]").value is True
    assert judge("rule.regex", _item("see twelve"), pattern=r"\[\d+\]").value is False


def test_regex_ignore_case_and_other_fields():
    assert judge("rule.regex", _item("HELLO"), pattern="hello", ignore_case=True).value is True
    assert judge("rule.regex", _item("x"), pattern="Question", field="input").value is True
    failed = judge("rule.regex", _item("x"), pattern="a", field="reference")
    assert failed.value is None and "no `reference`" in failed.error


def test_regex_is_linear_time_on_a_pathological_pattern():
    # (a+)+$ backtracks exponentially in a backtracking engine; RE2 answers at once.
    assert judge("rule.regex", _item("a" * 5000 + "b"), pattern="(a+)+$").value is False


def test_invalid_regex_at_run_time_is_a_criterion_error():
    j = judge("rule.regex", _item("x"), pattern="(?<=a)b")
    assert j.value is None and j.error.startswith("invalid pattern")


# -- rule.length -----------------------------------------------------------------


def test_length_over_and_under_in_each_unit():
    text = "one two three\nfour"
    assert judge("rule.length", _item(text), over=3).value is True
    assert judge("rule.length", _item(text), over=4).value is False
    assert judge("rule.length", _item(text), under=5, unit="lines").value is True
    assert judge("rule.length", _item(text), over=17, unit="characters").value is True
    assert judge("rule.length", _item(text), over=3).raw == 4


def test_numeric_length_is_the_count():
    j = judge("rule.length", _item("a b c"), type_=JType("ordinal", 0, 1000))
    assert j.value == 3


# -- rule.contains ---------------------------------------------------------------


def test_contains_any_or_all_with_case_folding():
    item = _item("We apologise for the delay.")
    assert judge("rule.contains", item, phrases=["sorry", "APOLOGISE"]).value is True
    assert judge("rule.contains", item, phrases=["sorry", "apologise"], mode="all").value is False
    assert judge("rule.contains", item, phrases=["APOLOGISE"], ignore_case=False).value is False


# -- rule.json_valid -------------------------------------------------------------


def test_json_valid_with_and_without_a_schema():
    schema = {"type": "object", "required": ["answer"]}
    assert judge("rule.json_valid", _item('{"answer": 4}')).value is True
    bad = judge("rule.json_valid", _item("{answer: 4}"))
    assert bad.value is False and bad.raw.startswith("invalid JSON")
    assert judge("rule.json_valid", _item('{"answer": 4}'), schema=schema).value is True
    wrong = judge("rule.json_valid", _item('{"other": 4}'), schema=schema)
    assert wrong.value is False and "answer" in wrong.raw


def test_invalid_schema_is_a_criterion_error():
    j = judge("rule.json_valid", _item("{}"), schema={"type": "no-such-type"})
    assert j.value is None and "schema is invalid" in j.error


# -- rule.matches_reference ------------------------------------------------------


def test_exact_match_is_normalised():
    assert judge("rule.matches_reference", _item("  Paris. ", reference="paris")).value is True
    assert judge("rule.matches_reference", _item("Lyon", reference="Paris")).value is False


def test_numeric_match_reads_gsm8k_answers_and_the_last_number():
    ref = "48 / 2 = 24 clips in May.\n#### 72"
    assert judge("rule.matches_reference", _item("In all, 72 clips.", reference=ref), mode="numeric").value is True
    j = judge("rule.matches_reference", _item("She sold 24 clips.", reference=ref), mode="numeric")
    assert j.value is False and j.raw == {"reference": 72.0, "response": 24.0}
    assert (
        judge("rule.matches_reference", _item("It costs $1,234.50", reference="#### 1234.5"), mode="numeric").value
        is True
    )


def test_numeric_match_tolerance():
    item = _item("about 3.1416", reference="#### 3.14159")
    assert judge("rule.matches_reference", item, mode="numeric").value is False
    assert judge("rule.matches_reference", item, mode="numeric", tolerance=0.001).value is True


def test_reference_problems_are_criterion_errors():
    assert "no `reference`" in judge("rule.matches_reference", _item("4")).error
    assert "no number" in judge("rule.matches_reference", _item("4", reference="four"), mode="numeric").error


def test_final_number_prefers_the_gsm8k_marker():
    assert final_number("first 3 then #### 7 and 9", gsm8k=True) == 7.0
    assert final_number("first 3 then 9") == 9.0
    assert final_number("no digits") is None


# -- human.annotation and recorded.value -------------------------------------------


def test_annotation_from_the_item_or_a_table():
    item = _item("x", annotations={"fluency": 3})
    assert judge("human.annotation", item, type_=JType("ordinal", 1, 3), key="fluency").value == 3
    table = ValueTable({("1", "response", "fluency"): 2})
    j = judge(
        "human.annotation",
        _item("x"),
        type_=JType("ordinal", 1, 3),
        backend=LocalBackend(annotations=table),
        key="fluency",
    )
    assert j.value == 2


def test_missing_annotation_names_item_candidate_and_key():
    j = judge("human.annotation", _item("x"), key="fluency")
    assert j.value is None
    assert j.error == "no annotation `fluency` for item `1`, candidate `response`"


def test_recorded_distribution_reads_as_expected_value_or_mode():
    dist = {"1": 0.1, "2": 0.2, "3": 0.3, "4": 0.4}
    item = _item("x", recorded={"q": dist})
    t = JType("score", 1, 4)
    assert judge("recorded.value", item, type_=t, key="q").value == pytest.approx(3.0)
    assert judge("recorded.value", item, type_=JType("ordinal", 1, 4), key="q", read="mode").value == 4


def test_recorded_distribution_mode_ties_go_to_the_smallest_point():
    item = _item("x", recorded={"q": {"1": 0.5, "2": 0.5}})
    assert judge("recorded.value", item, type_=JType("ordinal", 1, 2), key="q", read="mode").value == 1


def test_malformed_distribution_is_a_criterion_error():
    item = _item("x", recorded={"q": {"1": -0.5, "2": 0.5}})
    assert "non-negative" in judge("recorded.value", item, type_=JType("score", 1, 2), key="q").error
    item = _item("x", recorded={"q": {"one": 1.0}})
    assert "malformed distribution" in judge("recorded.value", item, type_=JType("score", 1, 2), key="q").error
