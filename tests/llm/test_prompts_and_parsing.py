"""Prompt rendering (what the judge is shown, the response schema, the
hash) and answer parsing (JSON, then end-anchored text; never clamped)."""

from __future__ import annotations

import pytest

from rubriclang.interp.items import Item
from rubriclang.llm.parsing import parse
from rubriclang.llm.prompting import PromptError, load_template, render

from .conftest import criterion

RATE = criterion('criterion c: ordinal[1, 5] = llm.rate { question = "How correct?", anchors = { 5: "Fully.", 1: "Not at all." } }')
SCORE = criterion('criterion c: score[0, 1] = llm.rate { question = "How fluent?" }')
CHECK = criterion('criterion c: bool = llm.check { question = "Is it polite?" }')
CHOOSE = criterion(
    'criterion c: label{formal, casual, mixed} = llm.choose { question = "Tone?", descriptions = { formal: "Stiff.", mixed: "Both." } }'
)
REF = criterion('criterion c: bool = llm.check { question = "Same as the reference?", with_reference = true }')
ITEM = Item("1", "What is 2 + 2?", {"response": "It is {{input}} 4."}, reference="#### 4")


def user_text(crit, item=ITEM):
    return render(crit, item, "response").request.messages[-1]["content"]


def test_the_prompt_shows_input_response_question_and_anchors_in_order():
    text = user_text(RATE)
    assert "<task>\nWhat is 2 + 2?\n</task>" in text
    assert "How correct?" in text and "an integer from 1 to 5" in text
    assert text.index("1: Not at all.") < text.index("5: Fully.")
    assert '"score": <an integer from 1 to 5>' in text


def test_a_response_is_shown_as_written_never_expanded():
    assert "<response>\nIt is {{input}} 4.\n</response>" in user_text(RATE)


def test_the_reference_is_shown_only_when_asked_for():
    assert "#### 4" not in user_text(CHECK)
    assert "<reference_answer>\n#### 4\n</reference_answer>" in user_text(REF)
    with pytest.raises(PromptError, match="no `reference`"):
        render(REF, Item("2", "Q", {"response": "x"}), "response")


def test_labels_are_listed_with_their_descriptions():
    text = user_text(CHOOSE)
    assert "- formal: Stiff.\n- casual\n- mixed: Both." in text
    assert "one of: formal, casual, mixed" in text


def test_an_empty_input_leaves_out_the_task_block():
    assert "<task>" not in user_text(CHECK, Item("3", "", {"response": "hi"}))


@pytest.mark.parametrize(
    ("crit", "key", "schema"),
    [
        (RATE, "score", {"type": "integer", "minimum": 1, "maximum": 5}),
        (SCORE, "score", {"type": "number", "minimum": 0, "maximum": 1}),
        (CHECK, "answer", {"type": "boolean"}),
        (CHOOSE, "label", {"type": "string", "enum": ["formal", "casual", "mixed"]}),
    ],
)
def test_the_response_schema_follows_the_criterion_type(crit, key, schema):
    fmt = render(crit, ITEM, "response").request.response_format
    assert fmt["type"] == "json_schema"
    body = fmt["json_schema"]["schema"]
    assert body["properties"][key] == schema and body["required"] == ["reason", key]


def test_the_prompt_hash_depends_on_what_is_shown():
    a = render(RATE, ITEM, "response")
    assert a.prompt_hash == render(RATE, ITEM, "response").prompt_hash
    assert a.prompt_hash != render(RATE, Item("1", "What is 2 + 2?", {"response": "5"}), "response").prompt_hash
    assert a.template == "rate@v1"


def test_every_template_has_a_system_and_a_user_message():
    for stem in ("rate.v1", "check.v1", "choose.v1"):
        assert list(load_template(stem).roles) == ["system", "user"]


@pytest.mark.parametrize(
    ("crit", "text", "value", "method"),
    [
        (RATE, '{"reason": "ok", "score": 4}', 4, "json"),
        (RATE, '```json\n{"reason": "ok", "score": 4.0}\n```', 4, "json"),
        (RATE, 'Thinking {a}... {"reason": "a {b} c", "score": 2} done', 2, "json"),
        (RATE, "Score: 2 at first.\nOn reflection, Score: 3", 3, "text"),
        (RATE, "It is mostly right.\n**Rating:** 4/5", 4, "text"),
        (RATE, "Mostly right.\n\n4", 4, "text"),
        (SCORE, "Final score = 0.75.", 0.75, "text"),
        (CHECK, '{"reason": "kind", "answer": true}', True, "json"),
        (CHECK, '{"answer": "no"}', False, "json"),
        (CHECK, "It thanks the user.\nAnswer: Yes", True, "text"),
        (CHECK, "It is rude.\n\nno.", False, "text"),
        (CHOOSE, '{"reason": "r", "label": "casual"}', "casual", "json"),
        (CHOOSE, "Label: **Formal**", "formal", "text"),
        (CHOOSE, "The tone is relaxed.\nmixed", "mixed", "text"),
    ],
)
def test_answers_are_read(crit, text, value, method):
    result = parse(crit, text)
    assert (result.value, result.error, result.method) == (value, None, method)


@pytest.mark.parametrize(
    ("crit", "text", "error"),
    [
        (RATE, '{"reason": "great", "score": 6}', "`score`: 6 lies outside `ordinal[1, 5]`"),
        (RATE, "Score: 0", "`score`: 0 lies outside `ordinal[1, 5]`"),
        (RATE, "Score: 3.5", "`score`: 3.5 is not an integer"),
        (RATE, "I would give it a four out of five.", "no `score` found"),
        (RATE, '{"score": true}', "`score`: True is not a number"),
        (SCORE, "Score: 1.2", "`score`: 1.2 lies outside `score[0, 1]`"),
        (CHECK, "Maybe.", "no `answer` found"),
        (CHOOSE, '{"label": "rude"}', "`label`: 'rude' is not one of the labels formal, casual, mixed"),
    ],
)
def test_unreadable_or_out_of_type_answers_are_failures_never_clamped(crit, text, error):
    result = parse(crit, text)
    assert result.value is None and result.error.startswith(error)
