"""The one ask-read-re-ask loop (`rubriclang.llm.reask`), and the audit's
JSON asker over it, whose replies jsonschema reads."""

from __future__ import annotations

import asyncio

import attrs
import pytest

from rubriclang.audit.llmcall import JsonAsker, last_object
from rubriclang.llm.calls import Caller
from rubriclang.llm.client import ChatRequest, Completion, LLMError, Sampling
from rubriclang.llm.reask import ask_until_read


class Scripted:
    """A chat client answering `replies` in order; an LLMError where a reply is one."""

    identity = "scripted"

    def __init__(self, *replies: str | LLMError, model: str | None = "m"):
        self.replies = list(replies)
        self.model = model
        self.requests: list[ChatRequest] = []

    async def chat(self, request: ChatRequest) -> Completion:
        self.requests.append(request)
        reply = self.replies.pop(0)
        if isinstance(reply, LLMError):
            raise reply
        return Completion(reply, self.model or "m", latency_ms=2.5, attempts=2)

    async def check_model(self) -> None:
        self.model = "m"


def _ask(client: Scripted, tries: int):
    def read(_, completion):
        return (int(completion.text), None) if completion.text.isdigit() else (None, f"`{completion.text}`")

    def again(request, reply, problem):
        return attrs.evolve(request, messages=(*request.messages, {"role": "user", "content": f"{reply}: {problem}"}))

    request = ChatRequest(({"role": "user", "content": "a number?"},), Sampling())
    return asyncio.run(ask_until_read(Caller(client, None), request, read, again, tries))  # type: ignore[arg-type]


def test_the_first_readable_reply_is_the_value_and_each_unreadable_one_is_asked_again_with_its_problem():
    client = Scripted("no", "still no", "42")
    outcome = _ask(client, 3)
    assert (outcome.value, outcome.problem, outcome.tries) == (42, None, 3)
    assert (outcome.attempts, outcome.latency_ms) == (6, 7.5)
    assert [r.messages[-1]["content"] for r in client.requests] == ["a number?", "no: `no`", "still no: `still no`"]


def test_no_more_calls_than_tries_and_the_last_reply_and_problem_are_kept():
    client = Scripted("no", "nope", "42")
    outcome = _ask(client, 2)
    assert (outcome.value, outcome.problem, outcome.tries, outcome.failure) == (None, "`nope`", 2, None)
    assert outcome.completion is not None and outcome.completion.text == "nope"
    assert len(client.requests) == 2


def test_a_failed_call_ends_the_loop_with_its_error_and_what_the_calls_before_it_cost():
    down = LLMError("http", "down")
    outcome = _ask(Scripted("no", down), 3)
    assert (outcome.failure, outcome.tries, outcome.attempts, outcome.problem) == (down, 2, 2, "`no`")
    assert outcome.completion is not None and outcome.completion.text == "no"
    first = _ask(Scripted(down), 3)
    assert (first.failure, first.completion, first.attempts) == (down, None, 0)


def test_at_least_one_try():
    with pytest.raises(ValueError):
        _ask(Scripted("1"), 0)


@pytest.mark.parametrize(
    "reply, problem",
    [
        ('{"reason": "fine", "verdict": "accept"}', None),
        ('{"reason": "  ", "verdict": "accept"}', "`reason` is not a non-empty string"),
        ('{"reason": "ok", "verdict": "maybe"}', '`verdict` is not one of "accept", "reject"'),
        ('{"reason": 3, "verdict": "reject"}', "`reason` is not a non-empty string"),
        ('{"verdict": "reject"}', "no JSON object with `reason`, `verdict`"),
        ("not JSON", "no JSON object with `reason`, `verdict`"),
    ],
)
def test_a_reply_is_read_by_its_fields_schemas(reply, problem):
    fields: dict[str, dict] = {
        "reason": {"type": "string"},
        "verdict": {"type": "string", "enum": ["accept", "reject"]},
    }
    assert last_object(reply, fields)[1] == problem


@pytest.mark.parametrize(
    "value, ok",
    [({"a": "x"}, True), ({}, True), ({"a": ""}, False), ({"a": 1}, False), ([], False), ("x", False)],
)
def test_an_object_field_holds_strings_that_say_something(value, ok):
    import json

    obj, _ = last_object(json.dumps({"changes": value}), {"changes": {"type": "object"}})
    assert (obj is not None) == ok


def test_the_asker_asks_again_with_a_note_and_gives_up_unavailable():
    client = Scripted("{}", '{"x": ""}', "{}")
    asker = JsonAsker(client, None, Sampling(), retries=2)  # type: ignore[arg-type]
    answer = asyncio.run(asker.ask(({"role": "user", "content": "x?"},), {"x": {"type": "string"}}, "x"))
    assert answer.status == "unavailable"
    assert answer.error == "unreadable reply after 3 tries: no JSON object with `x`"
    notes = [r.messages[-1]["content"] for r in client.requests[1:]]
    assert notes == [
        "Your reply could not be read: no JSON object with `x`. Reply again with the JSON object only.",
        "Your reply could not be read: `x` is not a non-empty string. Reply again with the JSON object only.",
    ]
    assert client.requests[2].messages[-2] == {"role": "assistant", "content": '{"x": ""}'}


def test_the_asker_answers_unavailable_when_the_call_fails():
    asker = JsonAsker(Scripted(LLMError("http", "down")), None, Sampling())  # type: ignore[arg-type]
    answer = asyncio.run(asker.ask(({"role": "user", "content": "x?"},), {"x": {"type": "string"}}, "x"))
    assert (answer.status, answer.error) == ("unavailable", "http: down")
