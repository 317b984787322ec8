"""The interpreter: runs a checked graph over items.

For each item, every criterion is judged for every candidate first — these
are the only calls that may be slow or fail, so they run concurrently, at most
`concurrency` at a time across all items — then the operators run in the
graph's fixed topological order, then the readout. Records are emitted in
input order, so traces never depend on concurrency or completion order.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Coroutine, Iterable
from types import CoroutineType
from typing import Any, TypeVar

import attrs

from rubriclang.checker.graph import CheckedGraph
from rubriclang.interp.backend import CriterionBackend, Judgment, JudgmentRequest
from rubriclang.interp.compose import Composer, Composition, ModeError
from rubriclang.interp.each import element_requests, per_element
from rubriclang.interp.items import Item, ItemError
from rubriclang.interp.local import LocalBackend
from rubriclang.interp.slots import Slots
from rubriclang.interp.trace import Tracer

# The key of a judgment of the whole item (not of one element of a field).
_WHOLE = object()


class BackendError(Exception):
    """No backend can run one of the graph's procedures."""


@attrs.frozen
class ItemResult:
    item: Item
    mode: str
    judgments: dict[str, dict[str, Judgment]]
    composition: Composition
    record: dict[str, Any]


class Interpreter:
    """Evaluates one checked graph with a set of criterion backends."""

    def __init__(self, graph: CheckedGraph, backends: Iterable[CriterionBackend] = (), concurrency: int = 8):
        self.graph = graph
        self.tracer = Tracer(graph)
        self.composer = Composer(graph)
        # Rules need no configuration: a plain LocalBackend serves them unless
        # a given backend (say, one with annotation tables) does first.
        self.backends = [*(b for b in backends if b is not None), LocalBackend()]
        self.concurrency = max(1, concurrency)
        self._route: dict[str, CriterionBackend] = {}
        for crit in graph.criteria:
            backend = next((b for b in self.backends if b.handles(crit.procedure)), None)
            if backend is None:
                raise BackendError(
                    f"no backend runs `{crit.procedure}` (criterion `{crit.name}`); "
                    "LLM procedures need an LLM backend: pass `backends=[LLMBackend(client, cache, sampling)]` "
                    "(rubriclang.llm.backend; see docs/llm.md), or use `rbg run`, which starts one"
                )
            self._route[crit.name] = backend
        # (backend.judge_known, the indexes in graph.criteria of its criteria)
        by_backend: dict[int, tuple[Any, list[int]]] = {}
        for ci, crit in enumerate(graph.criteria):
            known = getattr(self._route[crit.name], "judge_known", None)
            if known is not None:
                by_backend.setdefault(id(self._route[crit.name]), (known, []))[1].append(ci)
        self._knowers: list[tuple[Callable[[list[JudgmentRequest]], list[Judgment | None]], list[int]]] = list(
            by_backend.values()
        )
        self._slots: Slots | None = None
        self._shared = False
        self._element_criteria = {c.name: per_element(c) for c in graph.criteria if c.each is not None}
        self._per_element = bool(self._element_criteria)
        # Each grouped criterion's place in its group (`group NAME = [...]`),
        # where its backend judges a group's members together.
        self._grouped = {
            c.name: c.group.members.index(c.name)
            for c in graph.criteria
            if c.group is not None and hasattr(self._route[c.name], "judge_group")
        }

    @property
    def hash(self) -> str:
        """The graph's content hash (`trace.graph_hash`), as its traces record it."""
        return self.tracer.hash

    @property
    def criterion_hashes(self) -> dict[str, str]:
        """Each criterion's definition hash (`trace.criterion_hashes`)."""
        return self.tracer.criterion_hashes

    def share_slots(self, slots: Slots) -> None:
        """Take criterion calls from `slots`, shared with other Interpreters:
        a folder of graphs run as one judge bounds its calls in flight in all,
        not per graph (rubriclang.interp.graphset.run_set)."""
        self._slots, self._shared = slots, True

    def mode_for(self, item: Item, mode: str | None) -> str:
        """The readout mode: as asked, or from the item's shape; checks it fits."""
        want = mode or item.mode
        n = len(item.candidates)
        if want == "pairwise" and n != 2:
            raise ItemError(f"item `{item.id}`", f"a pairwise item needs exactly two candidates, it has {n}")
        if want == "pointwise" and n != 1:
            raise ItemError(
                f"item `{item.id}`",
                f"a pointwise item has one `response`, this one has {n} candidates",
                "run it with --mode pairwise",
            )
        try:
            self.composer.check_mode(want)
        except ModeError as exc:
            raise ItemError(f"item `{item.id}`", str(exc)) from None
        return want

    async def evaluate_async(self, item: Item, mode: str | None = None) -> ItemResult:
        begun = self._begin(item, mode)
        return begun if isinstance(begun, ItemResult) else await begun

    def _begin(self, item: Item, mode: str | None) -> ItemResult | asyncio.Future[ItemResult]:
        """The item's result, when every judgment is known at once (rules,
        cache hits); else the future of it, its calls submitted."""
        mode = self.mode_for(item, mode)
        requests, owners = self._requests(item)
        results = self._known(requests, owners)
        if None not in results:
            return self._result(item, mode, requests, results, owners)
        if self._slots is None:
            self._slots = Slots(self.concurrency)
        units = self._units(requests, results) if self._grouped else {}
        return _Pending(self, self._slots, item, mode, requests, results, owners, units).future

    def _units(self, requests: list[JudgmentRequest], results: list[Judgment | None]) -> dict[int, list[int]]:
        """The calls that judge a group's members together: for each group
        and candidate with a judgment to make, its first such request's
        index -> the indexes of every member's request, in the group's order."""
        members: dict[tuple[str, str], list[int]] = {}
        for i, r in enumerate(requests):
            if r.criterion.name in self._grouped:
                members.setdefault((r.criterion.group.name, r.candidate), []).append(i)  # type: ignore[union-attr]
        units = {}
        for indexes in members.values():
            waiting = [i for i in indexes if results[i] is None]
            if waiting:
                indexes.sort(key=lambda i: self._grouped[requests[i].criterion.name])
                units[waiting[0]] = indexes
        return units

    def _requests(self, item: Item) -> tuple[list[JudgmentRequest], list[tuple[int, Any]]]:
        """Every judgment the item needs, criterion by criterion, candidate by
        candidate; beside each, its criterion's index and its element's key
        (`_WHOLE` for a criterion judged on the whole item)."""
        if not self._per_element:
            cids = item.candidate_ids
            requests = [JudgmentRequest(item, cid, c) for c in self.graph.criteria for cid in cids]
            return requests, [(ci, _WHOLE) for ci in range(len(self.graph.criteria)) for _ in cids]
        requests, owners = [], []
        for ci, c in enumerate(self.graph.criteria):
            for cid in item.candidate_ids:
                if c.each is None:
                    requests.append(JudgmentRequest(item, cid, c))
                    owners.append((ci, _WHOLE))
                    continue
                for key, request in element_requests(item, cid, self._element_criteria[c.name]):
                    requests.append(request)
                    owners.append((ci, key))
        return requests, owners

    def _result(
        self,
        item: Item,
        mode: str,
        requests: list[JudgmentRequest],
        results: list[Judgment | None],
        owners: list[tuple[int, Any]],
    ) -> ItemResult:
        criteria = self.graph.criteria
        judgments: dict[str, dict[str, Judgment]] = {c.name: {} for c in criteria}
        parts: dict[tuple[int, str], list[tuple[Any, Judgment]]] = {}
        for r, j, (ci, key) in zip(requests, results, owners, strict=True):
            assert j is not None
            if key is _WHOLE:
                judgments[r.criterion.name][r.candidate] = j
            else:
                parts.setdefault((ci, r.candidate), []).append((key, j))
        for ci, c in enumerate(criteria):
            if c.each is not None:  # each candidate's list, empty when its field has no elements
                abstains = c.params.get("on_error") == "abstain"
                backend = self._route[c.name].name
                for cid in item.candidate_ids:
                    judgments[c.name][cid] = Judgment.of_elements(tuple(parts.get((ci, cid), ())), abstains, backend)
        comp = self.composer.compose(mode, item.candidate_ids, judgments)
        record = self.tracer.record(item, mode, judgments, comp)
        return ItemResult(item, mode, judgments, comp, record)

    def _known(self, requests: list[JudgmentRequest], owners: list[tuple[int, Any]]) -> list[Judgment | None]:
        """The judgments the backends give at once (`judge_known`: rules, cache
        hits), one batch per backend; None for those to await. These need no
        task and no slot of the concurrency limit."""
        results: list[Judgment | None] = [None] * len(requests)
        for known, criteria in self._knowers:
            mine = set(criteria)
            indexes = [i for i, (ci, _) in enumerate(owners) if ci in mine]
            try:
                answers = known([requests[i] for i in indexes])
            except Exception:  # `judge` records what goes wrong with these
                continue
            for i, j in zip(indexes, answers, strict=True):
                results[i] = j
        return results

    async def run(self, items: Iterable[Item], mode: str | None = None) -> AsyncGenerator[ItemResult, None]:
        """Results in input order, with up to `concurrency` criterion calls in
        flight. Items are pulled lazily, so memory stays flat on long inputs;
        on bad input, the items before it are still yielded, then the error
        is raised."""
        if not self._shared:
            self._slots = Slots(self.concurrency)
        loop = asyncio.get_running_loop()

        def start(item: Item) -> asyncio.Future[ItemResult]:
            # An item known at once gets a finished future; its error, too,
            # is raised in its turn, after the items before it.
            try:
                begun = self._begin(item, mode)
            except Exception as exc:  # re-raised by `in_order`
                done = loop.create_future()
                done.set_exception(exc)
                return done
            if isinstance(begun, ItemResult):
                done = loop.create_future()
                done.set_result(begun)
                return done
            return begun

        async for result in in_order(items, start, window(self.concurrency)):
            yield result


class _Pending:
    """An item whose judgments are being made: each call not known at once
    is submitted to the slots, and the last to land composes the item and
    resolves `future`. Cancelling `future` cancels the item's calls, as
    cancelling a gather of them would."""

    __slots__ = ("future", "interp", "item", "left", "mode", "owners", "requests", "results", "slots", "units")

    def __init__(
        self,
        interp: Interpreter,
        slots: Slots,
        item: Item,
        mode: str,
        requests: list[JudgmentRequest],
        results: list[Judgment | None],
        owners: list[tuple[int, Any]],
        units: dict[int, list[int]],
    ):
        self.interp, self.slots, self.item, self.mode = interp, slots, item, mode
        self.requests, self.results, self.owners = requests, results, owners
        # A group's call (`Interpreter._units`) is submitted once, under its first waiting member.
        self.units = units
        self.future: asyncio.Future[ItemResult] = asyncio.get_running_loop().create_future()
        waiting = [i for i, j in enumerate(results) if j is None]
        self.left = len(waiting)
        self.future.add_done_callback(self._settled)
        joined = {i for unit in units.values() for i in unit}
        for i in waiting:
            if i in units or i not in joined:
                slots.submit(self, i)

    def wanted(self) -> bool:
        return not self.future.done()

    def call(self, index: int) -> Coroutine[Any, Any, Judgment]:
        """The backend's `judge` coroutine itself; a `judge` that is not a
        coroutine function (a plugin's bug) is awaited in one, so what it
        raises or returns lands as an error of this judgment (`landed`),
        never in the slots."""
        request = self.requests[index]
        unit = self.units.get(index)
        try:
            backend = self.interp._route[request.criterion.name]
            if unit is not None:
                judging = backend.judge_group([self.requests[i] for i in unit])  # type: ignore[attr-defined]
            else:
                judging = backend.judge(request)
        except Exception as exc:
            return _raise(exc)
        return judging if type(judging) is CoroutineType else _await(judging)

    def landed(self, index: int, task: asyncio.Task[Any]) -> None:
        if self.future.done():
            return
        if task.cancelled():
            self.future.cancel()
            return
        failure = task.exception()
        if failure is not None and not isinstance(failure, Exception):
            self.future.set_exception(failure)
            return
        unit = self.units.get(index)
        if unit is None:
            landed = [(index, task.result() if failure is None else None)]
        else:  # a group's call: each member still waiting gets its judgment
            judged = task.result() if failure is None else [None] * len(unit)
            landed = [(i, j) for i, j in zip(unit, judged, strict=True) if self.results[i] is None]
        for i, j in landed:
            # A backend bug must not unwind the run: record it.
            self.results[i] = (
                j if failure is None else Judgment.failed(f"backend error: {type(failure).__name__}: {failure}")
            )
        self.left -= len(landed)
        if self.left:
            return
        try:
            self.future.set_result(self.interp._result(self.item, self.mode, self.requests, self.results, self.owners))
        except Exception as exc:
            self.future.set_exception(exc)

    def _settled(self, future: asyncio.Future[ItemResult]) -> None:
        if future.cancelled():
            self.slots.cancel(self)


def window(concurrency: int) -> int:
    """How many items are started ahead with `concurrency` calls in flight:
    enough that a slow item does not leave the slots idle."""
    return max(1, concurrency) * 2 + 1


_R = TypeVar("_R")


async def in_order(items: Iterable[Item], start: Callable[[Item], Awaitable[_R]], limit: int) -> AsyncIterator[_R]:
    """`await start(item)` for each item, results in input order, with up to
    `limit` items in flight, pulled lazily. On bad input (an ItemError from
    the items or from `start`), the results before it are still yielded,
    then the error is raised. However it ends early (that error, a
    cancellation, the caller closing it), the items in flight are cancelled."""
    window: collections.deque[asyncio.Future[_R]] = collections.deque()
    it = iter(items)
    error: Exception | None = None
    try:
        while True:
            while len(window) < limit and error is None:
                try:
                    item = next(it)
                except StopIteration:
                    break
                except ItemError as exc:
                    error = exc
                    break
                window.append(asyncio.ensure_future(start(item)))
            if not window:
                break
            yield await window.popleft()
    finally:
        for future in window:
            if future.done() and not future.cancelled():
                future.exception()  # retrieved: the first error is the one reported
            future.cancel()
    if error is not None:
        raise error


async def _raise(exc: Exception) -> Judgment:
    raise exc


async def _await(judging: Awaitable[Judgment]) -> Judgment:
    return await judging
