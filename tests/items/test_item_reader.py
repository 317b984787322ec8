"""The item reader with a declared shape: pairwise trajectories, the
path of a bad value in the second candidate, a round trip through the
items format, and no exception but ItemError on any object."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rubriclang.checker import check_source
from rubriclang.interp.items import ItemError, item_from_json, item_to_json

_GRAPH = check_source(
    "rubric r { version = 1 }\ncontract { scale = score[0, 1] }\n"
    "item { input: text, response: conversation, documents: documents? }\n"
    'criterion c: score[0, 1] = llm.compare { prompt = """\n## user\n{{documents}} {{input}}\n'
    '{{response_a}} {{response_b}} Reply as {"preference": "A"}.\n""" }\n'
    "sink c\nreadout pairwise {}\n"
).graph
assert _GRAPH is not None
SHAPE = _GRAPH.item_shape


def _run(calls: int) -> list[dict]:
    turns: list[dict] = [{"role": "user", "content": "Book a flight."}]
    for i in range(calls):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "search", "arguments": '{"day": 1}'}}
        turns += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "ok"},
        ]
    return turns


def test_two_agent_runs_are_the_candidates_of_a_pairwise_item_and_round_trip():
    obj = {"id": "t1", "input": "task", "responses": [["agent", _run(2)], ["base", _run(1)]]}
    item = item_from_json(obj, "items.jsonl:1", 1, SHAPE)
    assert item.mode == "pairwise" and item.candidate_ids == ("agent", "base")
    assert item.fields["response"]["agent"] == _run(2)
    assert item.candidates["base"].startswith("[user]\nBook a flight.\n\n[assistant]\n[tool call c0] search(")
    again = item_from_json(json.loads(json.dumps(item_to_json(item))), "x", 1, SHAPE)
    assert again == item


def test_a_bad_tool_call_in_the_second_candidate_is_named_by_its_path():
    run = _run(4)
    run[7]["tool_calls"][0]["function"]["arguments"] = '{"day": }'
    obj = {"id": "t1", "input": "task", "responses": {"base": _run(1), "agent": run}}
    with pytest.raises(ItemError) as info:
        item_from_json(obj, "items.jsonl:9", 9, SHAPE)
    assert info.value.where == "items.jsonl:9"
    assert info.value.message.startswith("`responses.agent[7].tool_calls[0].function.arguments` is not valid JSON")


values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
    max_leaves=15,
)
objects = st.fixed_dictionaries(
    {},
    optional={
        "id": values,
        "input": values,
        "response": values,
        "responses": values,
        "documents": values,
        "reference": values,
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(objects)
def test_reading_any_object_for_a_shape_raises_nothing_but_item_errors(obj):
    try:
        item_from_json(obj, "items.jsonl:1", 1, SHAPE)
    except ItemError as exc:
        assert exc.where == "items.jsonl:1"


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_trajectory_with_any_one_part_replaced_is_read_or_refused_with_an_item_error(data):
    run = _run(2)
    path = data.draw(st.sampled_from(list(_paths(run))[1:]))
    replacement = data.draw(values)
    target = run
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = replacement
    try:
        item = item_from_json({"id": 1, "input": "task", "response": run}, "items.jsonl:1", 1, SHAPE)
    except ItemError as exc:
        assert exc.message.startswith("`response")
    else:
        assert item.fields["response"]["response"] == run
