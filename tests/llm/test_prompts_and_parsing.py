"""Prompt rendering (what the judge is shown, the response schema, the
hash) and answer parsing (JSON, then end-anchored text; never clamped)."""

from __future__ import annotations

import re
from importlib import resources

import attrs
import pytest

from rubriclang.catalog import load_catalog
from rubriclang.checker.graph import PromptSource
from rubriclang.interp.items import Item
from rubriclang.llm.parsing import parse
from rubriclang.llm.prompting import (
    ANSWER_FIRST,
    COMPARE_RATINGS,
    REASON_MAX_CHARS,
    PromptError,
    builtin_prompt,
    load_template,
    render,
)

from .conftest import criterion

RATE = criterion(
    'criterion c: ordinal[1, 5] = llm.rate { question = "How correct?", anchors = { 5: "Fully.", 1: "Not at all." } }'
)
SCORE = criterion('criterion c: score[0, 1] = llm.rate { question = "How fluent?" }')
CHECK = criterion('criterion c: bool = llm.check { question = "Is it polite?" }')
CHOOSE = criterion(
    'criterion c: label{formal, casual, mixed} = llm.choose { question = "Tone?", descriptions = { formal: "Stiff.", '
    'mixed: "Both." } }'
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
    assert fmt is not None and fmt["type"] == "json_schema"
    body = fmt["json_schema"]["schema"]
    assert body["properties"][key] == schema and body["required"] == [key, "reason"]
    # The answer comes before a bounded reason: a constrained reply reaches it whatever its token limit.
    assert list(body["properties"]) == [key, "reason"]
    assert body["properties"]["reason"] == {"type": "string", "maxLength": REASON_MAX_CHARS}


@pytest.mark.parametrize(
    "procedure", sorted(n for n, p in load_catalog(plugins=False).procedures.items() if p.hooks.prompt)
)
def test_each_built_in_prompt_asks_in_words_for_the_json_its_schema_asks_for(procedure):
    """The reply-format sentence names the schema's keys in the schema's order."""
    crit = {"llm.rate": RATE, "llm.check": CHECK, "llm.choose": CHOOSE}.get(procedure)
    stems = [builtin_prompt(procedure)[0]] + ([COMPARE_RATINGS] if procedure == "llm.compare" else [])
    for stem in stems:
        assert load_template(stem).id in ANSWER_FIRST
        example = (
            resources.files("rubriclang.llm").joinpath("prompts", f"{stem}.md").read_text().rstrip().splitlines()[-1]
        )
        keys = re.findall(r'"(\w+)": ', example)
        if crit is not None:
            fmt = render(crit, ITEM, "response").request.response_format
            assert fmt is not None and keys == list(fmt["json_schema"]["schema"]["properties"])
        assert keys[-1] == "reason" and len(keys) >= 2


def test_a_criterion_with_its_own_template_keeps_the_reason_first_schema():
    own = attrs.evolve(
        RATE,
        prompt=PromptSource(
            '## user\nRate {{response}} on {{question}} as {{scale}}. JSON: {"reason": "...", "score": n}', None
        ),
    )
    fmt = render(own, ITEM, "response").request.response_format
    assert fmt is not None
    body = fmt["json_schema"]["schema"]
    assert list(body["properties"]) == ["reason", "score"] and body["properties"]["reason"] == {"type": "string"}


def test_the_prompt_hash_depends_on_what_is_shown():
    a = render(RATE, ITEM, "response")
    assert a.prompt_hash == render(RATE, ITEM, "response").prompt_hash
    assert a.prompt_hash != render(RATE, Item("1", "What is 2 + 2?", {"response": "5"}), "response").prompt_hash
    assert a.template == "rate@v2"


def test_every_template_has_a_system_and_a_user_message():
    for stem in ("rate.v1", "check.v1", "choose.v1", "rate.v2", "check.v2", "choose.v2"):
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
    assert result.value is None and result.error is not None and result.error.startswith(error)


@pytest.mark.parametrize("item", [ITEM, Item("2", "", {"response": "Four."})])
def test_built_in_prompts_of_one_candidate_share_everything_before_the_criterion(item):
    """A server's prompt cache can reuse the system message, task, response and
    reference across every criterion of a candidate."""
    rendered = [render(c, item, "response").request.messages for c in (RATE, SCORE, CHECK, CHOOSE)]
    assert len({m[0]["content"] for m in rendered}) == 1
    users = [m[1]["content"] for m in rendered]
    shared = users[0][: users[0].index("</response>") + len("</response>\n")]
    assert all(u.startswith(shared) for u in users)
    assert all(c.params["question"] not in shared for c in (RATE, SCORE, CHECK, CHOOSE))
