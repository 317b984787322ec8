"""Cost before running: the calls a command would make and their tokens,
counted on the rendered requests, without calling a model.

`Connections(estimate=Estimate())` hands out `DryClient`s instead of real
clients: each request goes through the one call path (`llm/calls.py`) and
is tallied here, and answered with a reply no parser reads, as long as the
request's `max_tokens` allows, so the caller asks again after a note as a
run does with an unreadable reply (its parse retries); nothing is sent and
no embedded model is started. Each phase has two tallies: `expected`, the
first ask of every call (every reply readable the first time), and
`at_most`, every ask, re-asks included (their prompts carry the longest
reply and the note): a bound on the calls and the completion tokens a run
can spend, whatever its replies. Prompt tokens are counted with the
documented rule `tokens(text) = ceil(len(text) / 4)` (characters, not
bytes) on each message's content, summed over the messages of a request:
the same rule on what a server receives gives the same count. Completion
tokens are bounded by the request's `max_tokens` (None: not bounded).
Transport retries (`max_retries`) re-send a request that got no reply: they
are not calls (`usage` counts a call once, with the tokens of its reply),
so neither tally counts them. The cache is not consulted: an estimate is
what a fresh run would send, where a request identical to one made before
(the same server, model and body) is counted once, since the run's call
cache answers it.
"""

from __future__ import annotations

import hashlib
import math

import attrs

from rubriclang.canonical import canonical_json
from rubriclang.llm.client import ChatRequest, Completion

CHARS_PER_TOKEN = 4
RULE = "ceil(characters / 4) per message"
# The reply a DryClient gives: read by no parser (no digit, letter, bracket
# or brace), so every caller asks again as it would after an unreadable reply.
_UNREADABLE = "\u2042"
# Its last characters spell its request's key in marks no parser reads
# either: a re-ask that carries it then differs from the ask before, as a
# run's repairs differ, so the bound counts every one of them.
_MARKS = "\u2042\u2051\u2055\u2058\u2059\u205a\u205b\u205c\u205d\u205e\u203b\u203c\u2047\u2048\u2049\u204e"
_KEY_MARKS = 8


def count_tokens(messages) -> int:
    """Prompt tokens of a request's messages by the chars/4 rule."""
    return sum(math.ceil(len(str(m.get("content") or "")) / CHARS_PER_TOKEN) for m in messages)


@attrs.define
class Phase:
    """Calls and tokens of one phase: `expected` (the first ask of every
    call) and `at_most` (every ask, re-asks of unreadable replies
    included); mutable, a running tally."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int | None = 0  # the bound of the expected calls; None once a call has no max_tokens
    most_calls: int = 0
    most_prompt_tokens: int = 0
    most_completion_tokens: int | None = 0

    def add(self, calls: int, prompt: int, completion: int | None, first: bool = True) -> None:
        """A request (or `calls` of them): a first ask counts in both
        tallies, a re-ask only in `at_most`."""
        if first:
            self.calls += calls
            self.prompt_tokens += prompt
            self.completion_tokens = _plus(self.completion_tokens, completion)
        self.most_calls += calls
        self.most_prompt_tokens += prompt
        self.most_completion_tokens = _plus(self.most_completion_tokens, completion)

    def merge(self, other: Phase) -> None:
        """Add another phase's two tallies."""
        self.add(other.calls, other.prompt_tokens, other.completion_tokens)
        self.add(
            other.most_calls - other.calls,
            other.most_prompt_tokens - other.prompt_tokens,
            _minus(other.most_completion_tokens, other.completion_tokens),
            first=False,
        )

    def scaled(self, k: int) -> Phase:
        values: list = [None if v is None else v * k for v in attrs.astuple(self)]
        return Phase(*values)

    def with_completion(self, max_tokens: int | None) -> Phase:
        """The same calls, each answered with at most `max_tokens` (another
        model's replies: the validator's, counted on the generator's calls)."""
        return attrs.evolve(
            self,
            completion_tokens=None if max_tokens is None else self.calls * max_tokens,
            most_completion_tokens=None if max_tokens is None else self.most_calls * max_tokens,
        )

    def to_json(self, models: tuple[str | None, ...] = (), prices: dict | None = None) -> dict:
        """Both tallies with their cost (`usd`, None without a price, and
        `price_note` saying why), and whether the calls are exact: no call
        can be asked again, so `expected` is what a run makes."""
        expected = {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }
        most = {
            "calls": self.most_calls,
            "prompt_tokens": self.most_prompt_tokens,
            "completion_tokens": self.most_completion_tokens,
        }
        return {
            **expected,
            "usd": cost(expected, models, prices),
            "calls_exact": self.most_calls == self.calls,
            "price_note": price_note(most, models, prices),
            "at_most": {**most, "usd": cost(most, models, prices)},
        }


def _plus(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def _minus(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a - b


class Estimate:
    """Tallies of the requests made through `DryClient`s, by phase, and the
    models they were meant for."""

    def __init__(self):
        self.phases: dict[str, Phase] = {}
        self.models: dict[str, set] = {}
        self.phase = "judge"
        self._seen: set[str] = set()
        # Phase -> first asks identical to an earlier request, not tallied:
        # the calls an identical request answers (an audit's reused judgments).
        self.reused: dict[str, int] = {}

    def record(self, request: ChatRequest, model: str | None, identity: str) -> str:
        """Tally `request` unless an identical one was (the call cache
        answers it); its key, either way."""
        key = hashlib.sha256(canonical_json([identity, request.body(model or "")]).encode()).hexdigest()
        # A request that carries an unreadable reply of ours asks again.
        first = not any(str(m.get("content") or "").startswith(_UNREADABLE) for m in request.messages)
        if key in self._seen:
            self.reused[self.phase] = self.reused.get(self.phase, 0) + first
            return key
        self._seen.add(key)
        self.phases.setdefault(self.phase, Phase()).add(
            1, count_tokens(request.messages), request.sampling.max_tokens, first
        )
        self.models.setdefault(self.phase, set()).add(model)
        return key

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
        """Tally the request; answer with an unreadable reply as long as its
        `max_tokens` allows, so the caller's re-asks are tallied too."""
        key = self.estimate.record(request, self.model, self.identity)
        tokens = request.sampling.max_tokens or 1
        length = tokens * CHARS_PER_TOKEN
        marks = "".join(_MARKS[int(c, 16)] for c in key[:_KEY_MARKS]) if length > _KEY_MARKS else ""
        return Completion(
            _UNREADABLE * (length - len(marks)) + marks, self.model or "estimate", completion_tokens=tokens
        )

    async def aclose(self) -> None:
        return None


def cost(phase: dict, models: tuple[str | None, ...], prices: dict | None) -> float | None:
    """USD of a phase (`calls`, `prompt_tokens`, `completion_tokens`) by the
    project config's `[prices."MODEL"]` (USD per million tokens): 0 when it
    made no call, else None when `price_note` gives a reason. For an
    estimate the completion side is the bound, so the cost is one too; for
    a run, the tokens are the server's own counts."""
    if not phase["calls"]:
        return 0.0
    if price_note(phase, models, prices) is not None:
        return None
    assert prices is not None and phase["completion_tokens"] is not None  # price_note says so otherwise
    p = prices[models[0]]
    return round((phase["prompt_tokens"] * p["prompt"] + phase["completion_tokens"] * p["completion"]) / 1e6, 6)


def price_note(phase: dict, models: tuple[str | None, ...], prices: dict | None) -> str | None:
    """Why a phase that made calls has no cost (None: it has one, or made
    no call): its model has no price in the project config, several models
    served it, or its completion tokens are not bounded."""
    if not phase["calls"]:
        return None
    if len(models) != 1:
        named = ", ".join(f"`{m}`" for m in models)
        return f"served by {named}: a price is per model, so the phase has no one price"
    if models[0] is None:
        return "the model is named by the server once asked: give --model (or `model` in the profile) to price it"
    if not prices or models[0] not in prices:
        return (
            f"no price for model `{models[0]}` in rubriclang.toml: add "
            f'[prices."{models[0]}"] with `prompt` and `completion` (USD per million tokens)'
        )
    if phase["completion_tokens"] is None:
        return "its completion tokens are not bounded (a request without max_tokens)"
    return None
