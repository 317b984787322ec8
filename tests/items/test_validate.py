"""The item validator: OpenAI chat messages read as they are, every
malformed value refused with its path, and never a Python exception."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rubriclang.items.shape import KINDS, FieldSpec
from rubriclang.items.validate import ShapeError, check_value

CONVERSATION = FieldSpec("input", "conversation")
DOCUMENTS = FieldSpec("documents", "documents")


def _call(call_id: str, name: str = "get_user", arguments: str = '{"user_id": "mia_li_3668"}') -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# A tau-bench style trajectory: null content beside tool calls, a named tool result.
TRAJECTORY = [
    {"role": "system", "content": "# Airline Agent Policy"},
    {"role": "user", "content": [{"type": "text", "text": "Book me a flight."}]},
    {"content": None, "role": "assistant", "tool_calls": [_call("call_1")]},
    {"role": "tool", "tool_call_id": "call_1", "name": "get_user", "content": '{"name": "Mia"}'},
    {"role": "assistant", "content": "Done.", "refusal": None},
]


def _error(spec: FieldSpec, value) -> ShapeError:
    with pytest.raises(ShapeError) as info:
        check_value(spec, value, spec.name)
    return info.value


def test_an_openai_trajectory_with_tool_calls_is_a_conversation_as_it_is():
    check_value(CONVERSATION, TRAJECTORY, "input")


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (
            lambda t: t[2]["tool_calls"][0]["function"].update(arguments="{bad"),
            "input[2].tool_calls[0].function.arguments",
            "not valid JSON",
        ),
        (
            lambda t: t[2]["tool_calls"][0]["function"].update(arguments="[1]"),
            "input[2].tool_calls[0].function.arguments",
            "not a JSON object",
        ),
        (lambda t: t[3].update(tool_call_id="call_9"), "input[3].tool_call_id", "no earlier assistant message"),
        (lambda t: t[1].update(tool_calls=[_call("call_2")]), "input[1].tool_calls", "`user` message"),
        (lambda t: t[1]["content"].append({"type": "image_url"}), "input[1].content[1].type", "only text parts"),
        (lambda t: t[0].update(role="developer"), "input[0]", "role"),
        (lambda t: t[4].update(content=None), "input[4].content", "is missing"),
        (lambda t: t[2]["tool_calls"].append(_call("call_1")), "input[2].tool_calls[1].id", "earlier tool call"),
        (lambda t: t[2]["tool_calls"][0]["function"].update(name=""), "input[2].tool_calls[0].function.name", "empty"),
        (lambda t: t.append("hello"), "input[5]", "chat message"),
    ],
)
def test_a_malformed_trajectory_is_refused_naming_the_path_of_what_is_wrong(change, path, words):
    trajectory = json.loads(json.dumps(TRAJECTORY))
    change(trajectory)
    error = _error(CONVERSATION, trajectory)
    assert error.path == path
    assert words in error.message


def test_documents_need_unique_ids_and_text():
    check_value(DOCUMENTS, [{"id": 1, "text": "a"}, {"id": "d2", "title": "T", "text": "b"}], "documents")
    assert _error(DOCUMENTS, [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]).path == "documents[1].id"
    assert _error(DOCUMENTS, [{"id": "a"}]).message == "has no `text`"
    assert _error(DOCUMENTS, [{"id": True, "text": "x"}]).path == "documents[0].id"
    assert _error(DOCUMENTS, [{"id": "a", "text": "x", "title": 3}]).path == "documents[0].title"


@pytest.mark.parametrize(
    ("spec", "value", "words"),
    [
        (FieldSpec("n", "number"), True, "finite number"),
        (FieldSpec("n", "number"), float("inf"), "finite number"),
        (FieldSpec("b", "bool"), 1, "`true` or `false`"),
        (FieldSpec("t", "text"), ["a"], "a string"),
        (FieldSpec("l", "list", "text"), ["a", 2], "a string"),
        (FieldSpec("d", "documents"), None, "is missing"),
    ],
)
def test_scalars_and_lists_are_refused_when_they_do_not_fit(spec, value, words):
    assert words in _error(spec, value).message


def test_an_optional_field_may_be_absent():
    check_value(FieldSpec("d", "documents", optional=True), None, "d")


def test_a_json_value_is_checked_against_its_schema_at_the_failing_path():
    spec = FieldSpec(
        "response",
        "json",
        schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    )
    check_value(spec, {"city": "Paris"}, "responses.a")
    error = _error(spec, {"city": 3})
    assert error.path == "response.city"
    assert "JSON Schema" in error.message


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "role",
                    "content",
                    "tool_calls",
                    "id",
                    "function",
                    "name",
                    "arguments",
                    "text",
                    "type",
                    "tool_call_id",
                    "title",
                ]
            )
            | st.text(max_size=4),
            children,
            max_size=5,
        )
    ),
    max_leaves=25,
)
SPECS = [FieldSpec("f", kind, "text" if kind == "list" else None) for kind in KINDS]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=json_values, spec=st.sampled_from(SPECS))
def test_the_validator_raises_nothing_but_shape_errors_on_any_json(value, spec):
    try:
        check_value(spec, value, "f")
    except ShapeError as exc:
        assert exc.path.startswith("f")
