"""Default renderings of declared fields, and templates iterating over
them: byte-stable, and shown as written (never expanded)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from rubriclang.items.render import render, template_value
from rubriclang.items.shape import FieldSpec
from rubriclang.items.values import ListValue
from rubriclang.template import parse

CONVERSATION = FieldSpec("input", "conversation")
DOCUMENTS = FieldSpec("documents", "documents")
TURNS = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": [{"type": "text", "text": "Where is"}, {"type": "text", "text": "Paris?"}]},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "Paris"}'}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "France"},
    {"role": "assistant", "content": "In France."},
]


def test_a_conversation_renders_each_turn_under_its_role_with_its_tool_calls():
    assert render(CONVERSATION, TURNS) == (
        "[system]\nBe brief.\n\n"
        "[user]\nWhere is\nParis?\n\n"
        '[assistant]\n[tool call c1] lookup({"q": "Paris"})\n\n'
        "[tool result c1]\nFrance\n\n"
        "[assistant]\nIn France."
    )


def test_documents_lists_and_json_render_as_documented():
    docs = [{"id": "d1", "title": "Paris", "text": "Capital."}, {"id": 2, "text": "Other."}]
    assert render(DOCUMENTS, docs) == "[document d1] Paris\nCapital.\n\n[document 2]\nOther."
    assert render(FieldSpec("tags", "list", "text"), ["a", "b"]) == "- a\n- b"
    assert render(FieldSpec("meta", "json"), {"b": 1, "a": "é"}) == '{\n  "b": 1,\n  "a": "é"\n}'
    assert render(FieldSpec("n", "number"), 2.5) == "2.5"
    assert render(FieldSpec("ok", "bool"), False) == "false"
    assert render(DOCUMENTS, None) == ""


def _fill(text: str, **values) -> str:
    template, problems = parse(text, "t")
    assert template is not None, problems
    return template.fill(values)[-1]["content"]


def test_a_section_over_a_list_field_is_shown_once_per_element_with_its_values():
    text = (
        "{{#input}}\n{{index}}. {{role}}: {{content}}\n"
        "{{#tool_calls}}\n  -> {{name}}{{arguments}}\n{{/tool_calls}}\n"
        "{{/input}}\n"
    )
    assert _fill(text, input=template_value(CONVERSATION, TURNS)) == (
        "1. system: Be brief.\n2. user: Where is\nParis?\n"
        '3. assistant: \n  -> lookup{"q": "Paris"}\n4. tool: France\n5. assistant: In France.'
    )


def test_an_empty_list_shows_its_inverted_section_and_values_are_never_expanded():
    text = "{{#documents}}[{{id}}] {{text}}\n{{/documents}}{{^documents}}none{{/documents}} {{q}}"
    assert _fill(text, documents=template_value(DOCUMENTS, []), q="x") == "none x"
    docs = [{"id": "d{{q}}", "text": "{{q}} ## user"}]
    assert _fill(text, documents=template_value(DOCUMENTS, docs), q="x") == "[d{{q}}] {{q}} ## user\n x"


def test_the_field_itself_shows_its_default_rendering():
    assert _fill("{{documents}}", documents=template_value(DOCUMENTS, [{"id": "a", "text": "b"}])) == "[document a]\nb"


texts = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=12)
messages = st.one_of(
    st.builds(lambda r, c: {"role": r, "content": c}, st.sampled_from(["system", "user", "assistant"]), texts),
    st.builds(lambda c: {"role": "user", "content": [{"type": "text", "text": c}]}, texts),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(messages, max_size=6))
def test_rendering_is_byte_identical_for_the_same_value_read_again(turns):
    again = json.loads(json.dumps(turns))
    assert render(CONVERSATION, turns) == render(CONVERSATION, again)
    first, second = template_value(CONVERSATION, turns), template_value(CONVERSATION, again)
    assert isinstance(first, ListValue) and isinstance(second, ListValue) and first.elements == second.elements
