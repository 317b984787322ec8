"""Ask, read, and ask again with what was wrong: the one loop for an LLM
call whose reply must be read into something (the audit's JSON objects,
`rbg compile`'s programs).

Each try goes through a `Caller` (the call cache, calls in flight shared,
usage tallied in `Caller.usage`), so a rerun asks nothing twice. `read`
turns a reply into its value, or says what was wrong with it; `again` makes
the next request from the last one, the reply and that problem. After
`tries` unreadable replies the outcome holds the last problem. A call that
fails (`LLMError`) ends the loop with it in `failure`, beside what the
calls before it cost, for the caller to report in its own way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

import attrs

from rubriclang.llm.calls import Caller
from rubriclang.llm.client import ChatRequest, Completion, LLMError

T = TypeVar("T")


@attrs.frozen
class Outcome(Generic[T]):
    """`value` and `problem`: what the last reply read as, and what was
    wrong with it (None when it could be read: then `value` is the answer).
    `completion`: the last reply (None when no call answered); `failure`:
    the error of a call that failed, which ended the loop. `tries`: the
    calls made; `attempts` and `latency_ms`: the HTTP attempts and time of
    those that answered."""

    value: T | None
    problem: str | None
    completion: Completion | None
    tries: int
    attempts: int
    latency_ms: float
    failure: LLMError | None = None


async def ask_until_read(
    caller: Caller,
    request: ChatRequest,
    read: Callable[[ChatRequest, Completion], tuple[T | None, str | None]],
    again: Callable[[ChatRequest, str, str], ChatRequest],
    tries: int,
) -> Outcome[T]:
    """Ask `request`, then, while `read(request, completion)` gives a
    problem, `again(request, reply, problem)`, at most `tries` calls in all."""
    if tries < 1:
        raise ValueError("at least one try")
    attempts, latency = 0, 0.0
    value: T | None = None
    problem: str | None = None
    completion: Completion | None = None
    for n in range(1, tries + 1):
        try:
            completion = await caller.complete(request)
        except LLMError as err:
            return Outcome(value, problem, completion, n, attempts, latency, err)
        attempts += completion.attempts
        latency += completion.latency_ms or 0.0
        value, problem = read(request, completion)
        if problem is None:
            return Outcome(value, None, completion, n, attempts, latency)
        if n < tries:
            request = again(request, completion.text, problem)
    return Outcome(value, problem, completion, tries, attempts, latency)
