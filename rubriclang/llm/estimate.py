"""Cost before running: the calls a command would make and their tokens,
counted on the rendered requests, without calling a model.

`Connections(estimate=Estimate())` hands out `DryClient`s instead of real
clients: each request goes through the one call path (`llm/calls.py`) and
is tallied here, then fails with `LLMError("estimate", ...)`, so nothing is
sent and no embedded model is started. Prompt tokens are counted with the
documented rule `tokens(text) = ceil(len(text) / 4)` (characters, not
bytes) on each message's content, summed over the messages of a request:
the same rule on what a server receives gives the same count. Completion
tokens are bounded by the request's `max_tokens` (None: not bounded). The
cache is not consulted: an estimate is what a fresh run would send, where a
request identical to one made before (the same server, model and body) is
counted once, since the run's call cache answers it.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import attrs

from rubriclang.llm.client import ChatRequest, Completion, LLMError

CHARS_PER_TOKEN = 4
RULE = "ceil(characters / 4) per message"


def count_tokens(messages) -> int:
    """Prompt tokens of a request's messages by the chars/4 rule."""
    return sum(math.ceil(len(str(m.get("content") or "")) / CHARS_PER_TOKEN) for m in messages)


@attrs.define
class Phase:
    """Calls and tokens of one phase; mutable, a running tally."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int | None = 0  # the bound; None once a call has no max_tokens

    def add(self, calls: int, prompt: int, completion: int | None) -> None:
        self.calls += calls
        self.prompt_tokens += prompt
        self.completion_tokens = (
            None if completion is None or self.completion_tokens is None else self.completion_tokens + completion
        )

    def scaled(self, k: int) -> Phase:
        return Phase(
            self.calls * k,
            self.prompt_tokens * k,
            None if self.completion_tokens is None else self.completion_tokens * k,
        )

    def to_json(self, models: tuple[str | None, ...] = (), prices: dict | None = None) -> dict:
        out: dict[str, Any] = {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }
        out["usd"] = cost(out, models, prices)
        return out


class Estimate:
    """Tallies of the requests made through `DryClient`s, by phase, and the
    models they were meant for."""

    def __init__(self):
        self.phases: dict[str, Phase] = {}
        self.models: dict[str, set] = {}
        self.phase = "judge"
        self._seen: set[str] = set()

    def record(self, request: ChatRequest, model: str | None, identity: str) -> None:
        key = hashlib.sha256(json.dumps([identity, request.body(model or "")], sort_keys=True).encode()).hexdigest()
        if key in self._seen:
            return
        self._seen.add(key)
        self.phases.setdefault(self.phase, Phase()).add(1, count_tokens(request.messages), request.sampling.max_tokens)
        self.models.setdefault(self.phase, set()).add(model)

    def get(self, phase: str) -> Phase:
        return self.phases.get(phase, Phase())


class DryClient:
    """Stands in for an `OpenAIClient`: tallies each request, sends nothing."""

    def __init__(self, estimate: Estimate, model: str | None, identity: str):
        self.estimate = estimate
        self.model = model
        self.identity = identity

    async def check_model(self) -> None:
        return None

    async def chat(self, request: ChatRequest) -> Completion:
        self.estimate.record(request, self.model, self.identity)
        raise LLMError("estimate", "not sent: this is an estimate")

    async def aclose(self) -> None:
        return None


def cost(phase: dict, models: tuple[str | None, ...], prices: dict | None) -> float | None:
    """USD of a phase by the project config's `[prices."MODEL"]` (USD per
    million tokens), or None when the phase's model has no price (or several
    models serve it). The completion side is the bound, so the cost is one too."""
    if not prices or len(models) != 1 or models[0] not in prices or phase["completion_tokens"] is None:
        return None
    p = prices[models[0]]
    return round((phase["prompt_tokens"] * p["prompt"] + phase["completion_tokens"] * p["completion"]) / 1e6, 6)
