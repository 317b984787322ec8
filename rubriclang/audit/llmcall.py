"""Asking the generator, validator and planner models for a JSON object.

Prompts are versioned template files in `prompts/` (the format of
`rubriclang/llm/prompts`: `## system` / `## user` sections, `{{name}}`
fields, `{{#name}} ... {{/name}}` kept only when `name` is not empty). Calls
go through the call cache, so a rerun asks nothing twice; an unreadable reply
is asked again, with a note, at most `retries` times. A server that cannot be
used makes the answer `unavailable`, never an exception.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.resources
import json
import re

import attrs

from rubriclang.llm.cache import CallCache, call_key
from rubriclang.llm.client import (
    ChatRequest,
    Completion,
    LLMError,
    OpenAIClient,
    Sampling,
)
from rubriclang.llm.parsing import json_objects_from_end

_SECTION = re.compile(r"\{\{#(\w+)\}\}\n?(.*?)\{\{/\1\}\}\n?", re.DOTALL)
_FIELD = re.compile(r"\{\{(\w+)\}\}")
_COMMENT = re.compile(r"\A\s*<!--.*?-->\s*", re.DOTALL)
_HEADING = re.compile(r"^## (system|user|assistant)[ \t]*$", re.MULTILINE)


@functools.cache
def template(stem: str) -> tuple[tuple[str, str], ...]:
    """The (role, text) sections of `prompts/STEM.md`."""
    text = importlib.resources.files("rubriclang.audit").joinpath("prompts", f"{stem}.md").read_text(encoding="utf-8")
    parts = _HEADING.split(_COMMENT.sub("", text))
    return tuple((role, body.strip()) for role, body in zip(parts[1::2], parts[2::2]))


def messages(stem: str, values: dict[str, str]) -> tuple[dict, ...]:
    """The chat messages of a template with `values` filled in, in one pass
    (a value containing `{{...}}` is shown as written)."""

    def fill(text: str) -> str:
        text = _SECTION.sub(lambda m: m.group(2) if values[m.group(1)] else "", text)
        return _FIELD.sub(lambda m: values[m.group(1)], text).strip()

    return tuple({"role": role, "content": fill(body)} for role, body in template(stem))


@attrs.frozen
class Answer:
    """`status`: ok (`value` holds the object), unavailable (no usable reply:
    the server could not be reached or answered nothing readable)."""

    status: str
    value: dict | None = None
    error: str | None = None
    model: str | None = None


def last_object(text: str, fields: dict[str, dict]) -> tuple[dict | None, str | None]:
    """The last JSON object in `text` with every field of the right JSON
    type, or (None, what was wrong)."""
    problem = f"no JSON object with {', '.join(f'`{k}`' for k in fields)}"
    for obj in json_objects_from_end(text):
        if not all(k in obj for k in fields):
            continue
        bad = [k for k, schema in fields.items() if not _fits(obj[k], schema)]
        if not bad:
            return obj, None
        problem = f"`{bad[0]}` is not {_describe(fields[bad[0]])}"
    return None, problem


def _fits(value, schema: dict) -> bool:
    kind = schema.get("type")
    if "enum" in schema:
        return value in schema["enum"]
    if kind == "string":
        return isinstance(value, str) and bool(value.strip())
    if kind == "object":
        return isinstance(value, dict) and all(isinstance(v, str) and v.strip() for v in value.values())
    if kind == "array":
        return isinstance(value, list)
    return True


def _describe(schema: dict) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"])
    return {"string": "a non-empty string", "object": "an object of strings", "array": "a list"}.get(schema.get("type"), "valid")


class JsonAsker:
    """One model in one role (generator, validator, planner)."""

    def __init__(self, client: OpenAIClient, cache: CallCache | None, sampling: Sampling, retries: int = 2):
        self.client = client
        self.cache = cache
        self.sampling = sampling
        self.retries = retries
        self._ready: asyncio.Future | None = None
        self._structured = True

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
        request = ChatRequest(msgs, self.sampling, fmt)
        reply, error = "", None
        for _ in range(self.retries + 1):
            try:
                completion = await self._complete(request)
            except LLMError as err:
                return Answer("unavailable", error=f"{err.kind}: {err.message}")
            reply = completion.text
            obj, error = last_object(reply, fields)
            if obj is not None:
                return Answer("ok", obj, model=completion.model)
            note = {"role": "user", "content": f"Your reply could not be read: {error}. Reply again with the JSON object only."}
            request = attrs.evolve(request, messages=request.messages + ({"role": "assistant", "content": reply}, note))
        return Answer("unavailable", error=f"unreadable reply after {self.retries + 1} tries: {error}", model=self.client.model)

    async def _complete(self, request: ChatRequest) -> Completion:
        if not self._structured:
            request = attrs.evolve(request, response_format=None)
        try:
            return await self._cached(request)
        except LLMError as err:
            if err.kind != "unsupported" or request.response_format is None:
                raise
        self._structured = False  # the server refuses structured output: ask in words only
        return await self._cached(attrs.evolve(request, response_format=None))

    async def _cached(self, request: ChatRequest) -> Completion:
        key = call_key(self.client.identity, self.client.model, request)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return hit
        completion = await self.client.chat(request)
        if self.cache is not None:
            self.cache.put(key, self.client.identity, completion)
        return completion
