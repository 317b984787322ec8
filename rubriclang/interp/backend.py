"""The criterion backend interface: how a criterion's judgment is obtained.

A backend is anything with `handles(procedure)` and an async `judge(request)`;
it may also have `judge_known(requests)`, a list of the judgments it can give
at once (None for the others), which the interpreter asks first so that those
need no task (rules, the LLM backend's cache hits).
Local procedures (rules, annotations, recorded values) are judged by their
catalog entries' functions through `rubriclang.interp.local.LocalBackend`; LLM
backends implement the same Protocol. A failure is a value (`Judgment.error`),
never an exception that unwinds the run.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

if TYPE_CHECKING:  # the catalog's judging functions import this module: it imports no checker or items code
    from rubriclang.checker.graph import Criterion
    from rubriclang.interp.items import Item


class JudgmentRequest(NamedTuple):
    """One criterion's judgment of one candidate of an item (a named tuple:
    the interpreter makes one per judgment, a cache hit's included)."""

    item: Item
    candidate: str
    criterion: Criterion

    @property
    def response(self) -> str:
        return self.item.candidates[self.candidate]


class _JudgmentFields(NamedTuple):
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
    # A per-element criterion's judgment (`each`): each element's key and judgment,
    # in the field's order; `value` is then the tuple of their values.
    elements: tuple[tuple[Any, Judgment], ...] | None = None


_new = tuple.__new__
_J = TypeVar("_J", bound="Judgment")


class Judgment(_JudgmentFields):
    """One criterion's judgment of one candidate.

    `value` is None when the judgment failed (`error` says why) or is absent:
    a judgment made with an error keeps no value, however it is made (so
    compositions need not read the error of a judgment that has a value).
    `latency_ms` is measured for backend calls; local procedures are not timed,
    so that traces of local judgments are byte-identical between runs. A named
    tuple, not an attrs class: replays build one per criterion per candidate.
    """

    __slots__ = ()

    def __new__(
        cls,
        value: Any,
        raw: Any = None,
        error: str | None = None,
        backend: str = "local",
        model: str | None = None,
        prompt_hash: str | None = None,
        attempts: int = 1,
        latency_ms: float | None = None,
        profile: str | None = None,
        fingerprint: str | None = None,
        elements: tuple[tuple[Any, Judgment], ...] | None = None,
    ) -> Judgment:
        if error:
            value = None
        fields = (value, raw, error, backend, model, prompt_hash, attempts, latency_ms, profile, fingerprint, elements)
        return _new(cls, fields)

    @classmethod
    def _make(cls: type[_J], iterable: Iterable[Any]) -> _J:  # type: ignore[override]  # the base's is any named tuple
        # `_replace` makes its copy with `_make`: through `__new__`, too.
        return cls(*iterable)

    @classmethod
    def failed(cls, message: str, raw: Any = None, **kw: Any) -> Judgment:
        """A judgment that produced no value, and why."""
        return cls(None, raw=raw, error=message, **kw)

    @classmethod
    def of_elements(cls, elements: tuple[tuple[Any, Judgment], ...], abstains: bool, backend: str) -> Judgment:
        """A per-element criterion's judgment of one candidate: the list of
        its elements' values. An element that failed fails it, as any
        failed judgment does, unless the criterion abstains on error (the
        element is then absent)."""
        failed = [f"element {key!r}: {j.error}" for key, j in elements if j.error]
        first = elements[0][1] if elements else None
        common: dict[str, Any] = {
            "backend": first.backend if first else backend,
            "model": first.model if first else None,
            # The judge that answered (an LLM's), so a resumed run can refuse another one.
            "profile": first.profile if first else None,
            "fingerprint": first.fingerprint if first else None,
            "attempts": sum(j.attempts for _, j in elements),
            "elements": elements,
        }
        if failed and not abstains:
            return cls(None, error="; ".join(failed), **common)
        return cls(tuple(j.value for _, j in elements), **common)


class CriterionBackend(Protocol):
    """What the interpreter needs from a source of judgments."""

    name: str

    def handles(self, procedure: str) -> bool: ...

    async def judge(self, request: JudgmentRequest) -> Judgment: ...
