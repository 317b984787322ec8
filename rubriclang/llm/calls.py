"""The one LLM call path: look in the cache, share a call already in flight,
else ask the server; and fall back from structured output once a server has
refused it. The judge's backend, the audit's generator, validator, planner
and summary, and the compiler all call models through a `Caller`.

A server's refusal of `response_format` is remembered in the cache's notes
(across runs too), so discovering it costs one refused call per server, not
one per criterion.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
from typing import Any

import attrs

from rubriclang.llm.cache import CallCache, call_key, call_keys, prompt_key, prompt_key_text
from rubriclang.llm.client import ChatClient, ChatRequest, Completion, LLMError, Sampling

# The cache note that says a server refuses `response_format`.
_NO_STRUCTURED = "no_response_format"
# Keys of answered requests kept to tell a shared request from a cache hit:
# identical requests of a run come close together (an item's candidates).
_ANSWERED_KEPT = 65536


@attrs.define
class Usage:
    """What a run spent, one accounting whether the answers came live or
    from the cache: `calls` made to a server (failed ones included), their
    tokens, and the requests answered without a server: `cache_hits`, from
    the cache, and `shared`, by an identical request of this run, in flight
    or answered already (the two candidates of an `llm.compare` share each
    call). Every request is one of the three, so `requests` = calls +
    cache_hits + shared, live or cached alike. Mutable: a running tally."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    shared: int = 0

    @property
    def requests(self) -> int:
        return self.calls + self.cache_hits + self.shared

    def to_json(self) -> dict[str, Any]:
        return {**attrs.asdict(self), "requests": self.requests}

    def add(self, other: Usage) -> None:
        for f in attrs.fields(Usage):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


class Caller:
    """Calls one model on one server (`client`), through `cache` (None: no
    cache). `profile` names the model profile it serves, if any: it is part
    of the cache key, so two profiles never answer for each other."""

    def __init__(self, client: ChatClient, cache: CallCache | None, profile: str | None = None):
        self.client = client
        self.cache = cache
        self.profile = profile
        self.usage = Usage()
        self._structured: bool | None = None  # unknown until the cache or a server says
        self._in_flight: dict[str | tuple[str, str, str], asyncio.Future[Completion]] = {}
        self._fingerprints: dict[tuple[Any, ...], str] = {}  # (sampling, server, model) -> fingerprint
        # The keys this run answered lately (bounded): an identical request
        # after them is `shared`, as one made while they were in flight is,
        # not a cache hit of its own.
        self._answered: collections.OrderedDict[str | tuple[str, str, str], None] = collections.OrderedDict()

    def fingerprint(self, sampling: Sampling) -> str:
        """A short hash of what answers a call: the server, the model, the
        profile and the sampling. Judgments record it, so a resumed run can
        refuse to mix answers from different judges."""
        memo = (sampling, self.client.identity, self.client.model)  # the model may be found late (check_model)
        known = self._fingerprints.get(memo)
        if known is not None:
            return known
        # Not canonical_json: this text escapes non-ASCII (\uXXXX) where
        # canonical_json keeps it, and traces store the hash, which a resume
        # compares, so switching would refuse every resumed run on a server,
        # model or profile named with a non-ASCII character.
        blob = json.dumps(
            {
                "server": self.client.identity,
                "model": self.client.model,
                "profile": self.profile,
                "sampling": attrs.asdict(sampling),
            },
            sort_keys=True,
            separators=(",", ":"),
        )
        self._fingerprints[memo] = known = hashlib.sha256(blob.encode()).hexdigest()[:16]
        return known

    def _structured_output(self) -> bool:
        """Whether to ask for structured output: not where the cache says the server refuses it."""
        if self._structured is None:
            self._structured = not (self.cache and self.cache.note(self.client.identity, _NO_STRUCTURED))
        return self._structured

    def _as_sent(self, request: ChatRequest) -> ChatRequest:
        """`request` without structured output where the server refuses it."""
        return request if self._structured_output() else attrs.evolve(request, response_format=None)

    async def complete(self, request: ChatRequest) -> Completion:
        """The completion of `request`, without structured output where the
        server refuses it: from the cache, from an identical call already in
        flight, or from the server."""
        request = self._as_sent(request)
        try:
            return await self._cached(request)
        except LLMError as err:
            if err.kind != "unsupported" or request.response_format is None:
                raise
        self._structured = False
        if self.cache is not None:
            self.cache.set_note(self.client.identity, _NO_STRUCTURED, "1")
        return await self._cached(attrs.evolve(request, response_format=None))

    def cached(self, prompts: list[tuple[Sampling, dict[str, Any] | None, str]]) -> list[Completion | None]:
        """The cached completion of each of the judge's prompts, given as
        (sampling, response format, prompt digest), as `complete` would find
        the request of it, in one cache query; None where there is none
        under the current key, and for every prompt without a cache. It adds
        nothing to `usage`: the caller counts the hits it uses."""
        if self.cache is None or not prompts:
            return [None] * len(prompts)
        keys = [self._prompt_key(*p) for p in prompts]
        found = self.cache.get_many(keys)
        return [found.get(k) for k in keys]

    def reused(self, sampling: Sampling, response_format: dict[str, Any] | None, digest: str) -> None:
        """Count a cached answer of the judge's prompt (from `cached`) that
        the caller uses: a cache hit, or shared when this run answered it."""
        self._count_reuse(self._prompt_key(sampling, response_format, digest))

    def _prompt_key(self, sampling: Sampling, response_format: dict[str, Any] | None, digest: str) -> str:
        """The key `complete` looks a judge's prompt up under."""
        structured = self._structured_output()
        return prompt_key(
            self.client.identity,
            self.client.model,
            sampling,
            response_format if structured else None,
            digest,
            self.profile,
        )

    def _count_reuse(self, key: str | tuple[str, str, str]) -> None:
        if key in self._answered:
            self.usage.shared += 1
            self._answered.move_to_end(key)
        else:
            self.usage.cache_hits += 1
            self._remember(key)

    def _remember(self, key: str | tuple[str, str, str]) -> None:
        self._answered[key] = None
        if len(self._answered) > _ANSWERED_KEPT:
            self._answered.popitem(last=False)

    def key(self, request: ChatRequest) -> str:
        return call_key(self.client.identity, self.client.model, request, self.profile)

    async def _cached(self, request: ChatRequest) -> Completion:
        key: str | tuple[str, str, str]
        if self.cache is None:
            # Only the calls in flight are looked up by it: what the cache key
            # would hash does as well, unhashed.
            digest = request.prompt_digest
            key = (
                self.key(request)
                if digest is None
                else prompt_key_text(
                    self.client.identity,
                    self.client.model,
                    request.sampling,
                    request.response_format,
                    digest,
                    self.profile,
                )
            )
        else:
            key = self.key(request)
            hit = self.cache.get(key)
            if hit is None and request.prompt_digest is not None and self.cache.version_1_keys:
                # A cache from before prompt keys holds the call under its
                # messages' key: read it there, and keep it under this key too.
                hit = self.cache.get(call_keys(self.client.identity, self.client.model, request, self.profile)[1])
                if hit is not None:
                    self.cache.put(key, self.client.identity, attrs.evolve(hit, prompt_hash=request.prompt_hash))
            if hit is not None:
                self._count_reuse(key)
                return hit
        shared = self._in_flight.get(key)
        if shared is not None:  # the same call is being made: wait for it
            self.usage.shared += 1
            return await asyncio.shield(shared)
        future = asyncio.get_running_loop().create_future()
        self._in_flight[key] = future
        self.usage.calls += 1
        try:
            completion = await self.client.chat(request)
        except Exception as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no warning when no one else waits on it
            raise
        except BaseException:
            future.cancel()
            raise
        finally:
            del self._in_flight[key]
        self.usage.prompt_tokens += completion.prompt_tokens
        self.usage.completion_tokens += completion.completion_tokens
        self._remember(key)
        if self.cache is not None and isinstance(key, str):  # always a string with a cache
            self.cache.put(key, self.client.identity, attrs.evolve(completion, prompt_hash=request.prompt_hash))
        future.set_result(completion)
        return completion
