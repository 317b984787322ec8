"""The criterion backend interface: how a criterion's judgment is obtained.

A backend is anything with `handles(procedure)` and an async `judge(request)`;
it may also have `judge_known(requests)`, a list of the judgments it can give
at once (None for the others), which the interpreter asks first so that those
need no task (rules, the LLM backend's cache hits).
Local procedures (rules, annotations, recorded values) ship here; LLM
backends implement the same Protocol. A failure is a value (`Judgment.error`),
never an exception that unwinds the run.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

import attrs

from rubriclang.checker.graph import Criterion
from rubriclang.interp.items import Item


@attrs.frozen
class JudgmentRequest:
    item: Item
    candidate: str
    criterion: Criterion

    @property
    def response(self) -> str:
        return self.item.candidates[self.candidate]


class Judgment(NamedTuple):
    """One criterion's judgment of one candidate.

    `value` is None when the judgment failed (`error` says why) or is absent.
    `latency_ms` is measured for backend calls; local procedures are not timed,
    so that traces of local judgments are byte-identical between runs. A named
    tuple, not an attrs class: replays build one per criterion per candidate.
    """

    value: Any
    raw: Any = None
    error: str | None = None
    backend: str = "local"
    model: str | None = None
    prompt_hash: str | None = None
    attempts: int = 1
    latency_ms: float | None = None
    # LLM judgments: the model profile that answered (None: the default) and a
    # hash of server, model, profile and sampling (None for local procedures).
    profile: str | None = None
    fingerprint: str | None = None

    @classmethod
    def failed(cls, message: str, raw: Any = None, **kw: Any) -> Judgment:
        """A judgment that produced no value, and why."""
        return cls(None, raw=raw, error=message, **kw)


class CriterionBackend(Protocol):
    """What the interpreter needs from a source of judgments."""

    name: str

    def handles(self, procedure: str) -> bool: ...

    async def judge(self, request: JudgmentRequest) -> Judgment: ...
