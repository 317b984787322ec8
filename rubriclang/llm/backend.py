"""The criterion backend for `llm.rate`, `llm.check` and `llm.choose`.

One chat-completion call per criterion per candidate, through the call cache:
a call made before (same server, model, prompt, sampling and response
format) is answered from the cache, so reruns and resumed runs repeat no
call. A reply that cannot be read is asked again at most `parse_retries`
times, each time after a note saying what was wrong (a different request, so
never the same cached answer); then the judgment fails with the reason, under
the criterion's `on_error` policy. A failure is a Judgment, never an exception.

A judgment's `raw` is the model's last reply; a criterion with a `template`
other than the default records it as `{"template": "prometheus@v1", "text": ...}`,
so the trace names the prompt the feedback answers.
"""

from __future__ import annotations

import asyncio

import attrs

from rubriclang.checker.graph import Criterion
from rubriclang.interp.backend import Judgment, JudgmentRequest
from rubriclang.llm.cache import CallCache, call_key
from rubriclang.llm.client import ChatRequest, Completion, LLMError, OpenAIClient, Sampling
from rubriclang.llm.parsing import ParseResult, parse, weighted_points
from rubriclang.llm.prompting import PromptError, Rendered, nudge, render, template_choice

# The cache note that says a server refuses `response_format`.
_NO_STRUCTURED = "no_response_format"
_TOP_LOGPROBS = 20  # the most OpenAI allows; enough to see every one-digit point


@attrs.define
class Usage:
    """What a run spent: calls made to a server (failed ones included, cache
    hits excluded), their tokens, and the calls answered without a server
    (from the cache, or shared with an identical call in flight). Mutable:
    it is a running tally."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def to_json(self) -> dict:
        return attrs.asdict(self)


def _raw(criterion: Criterion, rendered: Rendered, reply: str) -> str | dict:
    """What the trace keeps of a reply: the text, with the template's name
    and version when the criterion chose a template other than the default."""
    if template_choice(criterion) == "default":
        return reply
    return {"template": rendered.template, "text": reply}


class LLMBackend:
    """Judges LLM criteria with an OpenAI-compatible server."""

    name = "openai"
    PROCEDURES = ("llm.rate", "llm.check", "llm.choose")

    def __init__(
        self,
        client: OpenAIClient,
        cache: CallCache | None,
        sampling: Sampling,
        parse_retries: int = 2,
        use_logprobs: bool = False,
    ):
        self.client = client
        self.cache = cache
        self.sampling = sampling
        self.parse_retries = parse_retries
        self.use_logprobs = use_logprobs
        self.usage = Usage()
        self._structured: bool | None = None  # unknown until the cache or a server says
        self._in_flight: dict[str, asyncio.Future] = {}

    def handles(self, procedure: str) -> bool:
        return procedure in self.PROCEDURES

    async def aclose(self) -> None:
        await self.client.aclose()

    def _sampling_for(self, criterion) -> Sampling:
        if self.use_logprobs and weighted_points(criterion):
            return attrs.evolve(self.sampling, logprobs=True, top_logprobs=_TOP_LOGPROBS)
        return self.sampling

    async def judge(self, request: JudgmentRequest) -> Judgment:
        crit = request.criterion
        meta = {"backend": self.name, "model": self.client.model}
        try:
            rendered = render(crit, request.item, request.candidate)
        except PromptError as exc:
            return Judgment.failed(str(exc), attempts=0, **meta)
        meta["prompt_hash"] = rendered.prompt_hash
        call = attrs.evolve(rendered.request, sampling=self._sampling_for(crit))
        attempts, latency = 0, 0.0
        result: ParseResult | None = None
        reply = ""
        for _ in range(self.parse_retries + 1):
            try:
                completion = await self._complete(call)
            except LLMError as err:
                return Judgment.failed(
                    f"{err.kind}: {err.message}",
                    raw=_raw(crit, rendered, reply) if reply else None,
                    attempts=attempts + err.attempts,
                    latency_ms=None,
                    **meta,
                )
            attempts += completion.attempts
            latency += completion.latency_ms or 0.0
            meta["model"] = completion.model or self.client.model
            reply = completion.text
            result = parse(crit, reply, completion.logprobs if call.sampling.logprobs else None)
            if result.error is None:
                raw = _raw(crit, rendered, reply)
                if result.method == "logprobs":
                    raw = {"text": reply, "method": "logprobs", "distribution": result.distribution}
                return Judgment(result.value, raw=raw, attempts=attempts, latency_ms=round(latency, 1), **meta)
            call = nudge(call, reply, result.error, rendered.nudge)
        assert result is not None and result.error is not None
        n = self.parse_retries + 1
        return Judgment.failed(
            f"unreadable answer after {n} {'reply' if n == 1 else 'replies'}: {result.error}",
            raw=_raw(crit, rendered, reply),
            attempts=attempts,
            latency_ms=round(latency, 1),
            **meta,
        )

    async def _complete(self, request: ChatRequest) -> Completion:
        """The completion of `request`, without structured output where the
        server refuses it: from the cache, from an identical call already in
        flight, or from the server."""
        if self._structured is None:
            self._structured = not (self.cache and self.cache.note(self.client.identity, _NO_STRUCTURED))
        if not self._structured:
            request = attrs.evolve(request, response_format=None)
        try:
            return await self._cached_call(request)
        except LLMError as err:
            if err.kind != "unsupported" or request.response_format is None:
                raise
        # Remembered for this server (in the cache, across runs too), so the
        # discovery costs one refused call, not one per criterion.
        self._structured = False
        if self.cache is not None:
            self.cache.set_note(self.client.identity, _NO_STRUCTURED, "1")
        return await self._cached_call(attrs.evolve(request, response_format=None))

    async def _cached_call(self, request: ChatRequest) -> Completion:
        key = call_key(self.client.identity, self.client.model, request)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.usage.cache_hits += 1
                return hit
        shared = self._in_flight.get(key)
        if shared is not None:  # the same call is being made: wait for it
            self.usage.cache_hits += 1
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
        if self.cache is not None:
            self.cache.put(key, self.client.identity, completion)
        future.set_result(completion)
        return completion
