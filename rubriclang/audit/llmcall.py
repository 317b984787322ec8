"""Asking the generator, validator and planner models for a JSON object.

Prompts are versioned template files in `prompts/`, filled by the one
template engine (`rubriclang.template`), and calls go through the one
call path (`rubriclang.llm.calls.Caller`: the call cache, calls in flight
shared, structured output dropped, and remembered, where a server refuses
it), so a rerun asks nothing twice. An unreadable reply is asked again, with
a note, at most `retries` times (`rubriclang.llm.reask`); a reply is read
by jsonschema. A server that cannot be used makes the
answer `unavailable`, never an exception.
"""

from __future__ import annotations

import asyncio
import functools
import json
from typing import Any, Protocol

import attrs

from rubriclang.canonical import canonical_json
from rubriclang.llm.cache import CallCache
from rubriclang.llm.calls import Caller
from rubriclang.llm.client import ChatRequest, LLMError, OpenAIClient, Sampling
from rubriclang.llm.parsing import json_objects_from_end
from rubriclang.llm.reask import ask_until_read
from rubriclang.template import Template, load_packaged


@functools.cache
def template(stem: str) -> Template:
    """The audit's prompt `prompts/STEM.md`."""
    return load_packaged("rubriclang.audit", stem)


def messages(stem: str, values: dict[str, str]) -> tuple[dict, ...]:
    """The chat messages of a template with `values` filled in, in one pass
    (a value containing `{{...}}` is shown as written)."""
    return template(stem).fill(values)


@attrs.frozen
class Answer:
    """`status`: ok (`value` holds the object), unavailable (no usable reply:
    the server could not be reached or answered nothing readable)."""

    status: str
    value: dict | None = None
    error: str | None = None
    model: str | None = None

    @property
    def fields(self) -> dict:
        """`value`, of an ok answer (which has one)."""
        assert self.value is not None, self.status
        return self.value


def last_object(text: str, fields: dict[str, dict]) -> tuple[dict | None, str | None]:
    """The last JSON object in `text` with every field of the right JSON
    type, or (None, what was wrong)."""
    problem = f"no JSON object with {', '.join(f'`{k}`' for k in fields)}"
    for obj in json_objects_from_end(text):
        if not all(k in obj for k in fields):
            continue
        bad = [k for k, schema in fields.items() if not _validator(canonical_json(schema)).is_valid(obj[k])]
        if not bad:
            return obj, None
        problem = f"`{bad[0]}` is not {_describe(fields[bad[0]])}"
    return None, problem


# A text the model gives must say something: its strings are not blank.
_SAID = {"type": "string", "pattern": r"\S"}


@functools.cache
def _validator(schema_json: str) -> Any:
    """A jsonschema validator of a field's schema (as canonical JSON, so it
    can be cached), read as the answer must be: each string, and each value
    of an object, a string that is not blank. The schema sent with the
    request is the field's own (a server's structured output knows fewer
    keywords)."""
    import jsonschema  # only where a model is asked

    schema = json.loads(schema_json)
    if schema.get("type") == "string" and "enum" not in schema:
        schema = {**schema, **_SAID}
    elif schema.get("type") == "object":
        schema = {**schema, "additionalProperties": _SAID}
    return jsonschema.Draft202012Validator(schema)


def _describe(schema: dict) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"])
    return {"string": "a non-empty string", "object": "an object of strings", "array": "a list"}.get(
        str(schema.get("type")), "valid"
    )


class Asker(Protocol):
    """What the generator, validator and planner need: a JsonAsker, or an
    `Unavailable` stand-in that answers every question `unavailable`."""

    async def ask(self, msgs: tuple[dict, ...], fields: dict[str, dict], name: str) -> Answer: ...


class JsonAsker:
    """One model in one role (generator, validator, planner)."""

    def __init__(self, client: OpenAIClient, cache: CallCache | None, sampling: Sampling, retries: int = 2):
        self.client = client
        self.caller = Caller(client, cache)
        self.sampling = sampling
        self.retries = retries
        self._ready: asyncio.Future | None = None

    async def _check(self) -> str | None:
        """Why the server cannot be used (checked once), or None."""
        if self._ready is None:
            self._ready = asyncio.ensure_future(self._check_once())
        return await self._ready

    async def _check_once(self) -> str | None:
        if self.client.model is not None:
            return None
        try:
            await self.client.check_model()
        except LLMError as err:
            return f"{err.kind}: {err.message}"
        return None

    async def ask(self, msgs: tuple[dict, ...], fields: dict[str, dict], name: str) -> Answer:
        """The reply's JSON object holding `fields` (name -> JSON schema)."""
        problem = await self._check()
        if problem:
            return Answer("unavailable", error=problem)
        schema = {"type": "object", "properties": fields, "required": list(fields), "additionalProperties": False}
        fmt = {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}
        outcome = await ask_until_read(
            self.caller,
            ChatRequest(msgs, self.sampling, fmt),
            lambda _, completion: last_object(completion.text, fields),
            _again,
            self.retries + 1,
        )
        if outcome.failure is not None:
            return Answer("unavailable", error=f"{outcome.failure.kind}: {outcome.failure.message}")
        if outcome.problem is None:
            assert outcome.completion is not None  # a readable reply came
            return Answer("ok", outcome.value, model=outcome.completion.model)
        return Answer(
            "unavailable",
            error=f"unreadable reply after {outcome.tries} tries: {outcome.problem}",
            model=self.client.model,
        )


def _again(request: ChatRequest, reply: str, problem: str) -> ChatRequest:
    """The request after the unreadable `reply` and a note of what was wrong."""
    note = {
        "role": "user",
        "content": f"Your reply could not be read: {problem}. Reply again with the JSON object only.",
    }
    return attrs.evolve(request, messages=(*request.messages, {"role": "assistant", "content": reply}, note))
