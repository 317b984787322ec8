"""A folder of graphs compiled per instance, run as one judge (docs/compiler.md).

`rbg compile --out-dir GRAPHS/` leaves `ID.rbg` for each spec that compiled
and `ID.compile.jsonl` for every spec. An item is judged by the graph named
by its `graph` field, else by the one of its own id. An item with no graph
(its spec failed to compile within the budget, its compilation stopped, or
it was never compiled) is not skipped: the fallback policy decides. With no
fallback its trace record is a compile failure (readout status `error`);
with `abstain` it abstains; with a fallback graph (a direct judge, say) that
graph judges it. Either way the record's `compile` field says why
(docs/traces.md).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterable
from typing import TYPE_CHECKING, Any

import attrs

from rubriclang.checker.graph import CheckedGraph
from rubriclang.errors import LocatedError
from rubriclang.interp.compose import Composition
from rubriclang.interp.items import Item
from rubriclang.interp.readout import Decision
from rubriclang.interp.trace import SCHEMA, item_hash

if TYPE_CHECKING:
    from rubriclang.interp.engine import Interpreter

ABSTAIN = "abstain"
# The graph hash of a compile failure's record: no graph judged the item.
UNCOMPILED = "uncompiled"


class GraphSetError(LocatedError):
    """A graph folder that cannot be used: a graph in it with errors, no graph and no log."""


def graph_id(item: Item) -> str:
    """The id of the graph that judges `item`: its `graph` field (an id or `ID.rbg`), else its own id."""
    if item.graph is None:
        return item.id
    return item.graph.removesuffix(".rbg")


@attrs.frozen
class Missing:
    """Why an item has no compiled graph: the graph id, the reason, the log."""

    graph: str
    reason: str
    log: str | None


@attrs.frozen
class Resolved:
    """How one item is judged under a set: by `graph` (id `gid`: its own,
    or, when its own is `missing`, the fallback graph its policy names), or
    by no graph (`graph` None: a compile failure, or an abstention under the
    `abstain` policy)."""

    gid: str | None
    graph: CheckedGraph | None
    missing: Missing | None = None
    policy: str | None = None

    @property
    def route(self) -> str:
        """`compiled`, `fallback`, `abstain` or `failed`."""
        if self.missing is None:
            return "compiled"
        if self.graph is not None:
            return "fallback"
        return ABSTAIN if self.policy == ABSTAIN else "failed"

    def mark(self, record: dict[str, Any]) -> dict[str, Any]:
        """A judged item's trace record, with the `compile` field of a fallback."""
        return record if self.missing is None else {**record, "compile": compile_field(self.missing, self.policy)}

    def unjudged(self, item: Item, mode: str) -> dict[str, Any]:
        """The record of an item that no graph judges (`graph` is None)."""
        assert self.missing is not None
        return missing_record(item, mode, self.missing, self.policy)


@attrs.frozen
class GraphSet:
    """The graphs of a folder by id, the ids whose compilation left no graph
    (with the log's reason), and the fallback policy: per id as the compile
    logs record it (`contract.fallback` of its spec), unless the command
    line's `override` (a graph path or `abstain`) replaces them all. A
    policy is `abstain`, a path of `fallbacks` (the fallback graphs), or
    None (a compile failure)."""

    folder: str
    graphs: dict[str, CheckedGraph]
    failures: dict[str, str]
    policies: dict[str, str] = attrs.Factory(dict)
    fallbacks: dict[str, CheckedGraph] = attrs.Factory(dict)
    override: str | None = None

    def route(self, item: Item) -> CheckedGraph | Missing:
        """The graph compiled for `item`, or why it has none."""
        gid = graph_id(item)
        if gid in self.graphs:
            return self.graphs[gid]
        log = os.path.join(self.folder, gid + ".compile.jsonl")
        reason = self.failures.get(gid, f"`{gid}.rbg` is not in `{self.folder}` (its spec was not compiled)")
        return Missing(gid, reason, log if os.path.exists(log) else None)

    def resolve(self, item: Item) -> Resolved:
        """How `item` is judged: by its own graph, by the fallback graph its
        policy names, or by none (a compile failure, or an abstention)."""
        routed = self.route(item)
        if isinstance(routed, CheckedGraph):
            return Resolved(graph_id(item), routed)
        policy, fallback = self.policy(routed.graph), self.fallback_for(routed.graph)
        if isinstance(fallback, CheckedGraph):
            return Resolved(policy, fallback, routed, policy)
        return Resolved(None, None, routed, policy)

    def policy(self, gid: str) -> str | None:
        """What is done with graph id `gid` when it has no graph: `abstain`, a fallback graph's path, or None."""
        return self.override if self.override is not None else self.policies.get(gid)

    def fallback_for(self, gid: str) -> CheckedGraph | str | None:
        """The fallback graph that judges in place of `gid`, or `abstain`, or None."""
        p = self.policy(gid)
        return self.fallbacks[p] if p is not None and p != ABSTAIN else p

    def by_id(self) -> dict[str, CheckedGraph]:
        """Every graph that may judge an item, by id: a compiled graph's, or
        a fallback graph's path (which ends in `.rbg`, so never a compiled id)."""
        return {**self.graphs, **self.fallbacks}

    def all_graphs(self) -> list[CheckedGraph]:
        """Every graph that may judge an item: the compiled ones, then the fallbacks."""
        out = list(self.graphs.values())
        out += [self.fallbacks[p] for p in sorted(self.fallbacks)]
        return out

    def representative(self) -> CheckedGraph | None:
        """The graph whose type the set answers in (the first compiled, else a fallback)."""
        graphs = self.all_graphs()
        return graphs[0] if graphs else None

    def hashes(self) -> frozenset[str]:
        """The graph hashes a trace of this set may hold."""
        from rubriclang.interp.trace import graph_hash

        return frozenset({graph_hash(g) for g in self.all_graphs()} | {UNCOMPILED})


def load_graph_set(folder: str, fallback: str | None, load: Callable[[str], CheckedGraph]) -> GraphSet:
    """Read `folder` with `load(path) -> CheckedGraph` (which reports a
    graph with errors); `fallback`, the command line's policy (a .rbg path
    or `abstain`), overrides the one each compile log records; None keeps
    them."""
    from rubriclang.interp.compiled import COMPILED, recorded_policy, status

    names = sorted(os.listdir(folder))
    graphs = {n[: -len(".rbg")]: load(os.path.join(folder, n)) for n in names if n.endswith(".rbg")}
    failures: dict[str, str] = {}
    policies: dict[str, str] = {}
    for n in names:
        if not n.endswith(".compile.jsonl"):
            continue
        gid = n[: -len(".compile.jsonl")]
        state, records = status(folder, gid)
        policy = recorded_policy(records, folder)
        if policy is not None:
            policies[gid] = policy
        if state == COMPILED:
            continue
        # A graph beside a log that does not say it compiled (a kill between
        # the two) is not the log's spec's graph: it judges nothing.
        graphs.pop(gid, None)
        end = records[-1] if records and records[-1].get("event") == "end" else None
        if end is None:
            failures[gid] = "its compilation did not finish (run `rbg compile` again to resume)"
        else:
            failures[gid] = f"compilation {end.get('outcome')}: {end.get('message') or 'no graph was written'}"
    if not graphs and not failures:
        raise GraphSetError(
            folder,
            "the folder holds no compiled graphs (`ID.rbg`) and no compile logs",
            "compile into it with `rbg compile SPECS.jsonl --out-dir FOLDER`",
        )
    used: dict[str, str | None]  # policy -> an id that needs it (None: the command line's)
    if fallback is not None:
        used = {fallback: None}
    else:  # the recorded fallback graphs that some id without a graph needs
        used = {p: gid for gid, p in sorted(policies.items(), reverse=True) if gid not in graphs}
    for p, needs in used.items():
        if needs is not None and p != ABSTAIN and not os.path.isfile(p):
            raise GraphSetError(
                os.path.join(folder, needs + ".compile.jsonl"),
                f"the fallback graph `{p}` recorded for `{needs}` (its spec's `contract.fallback`) is not there",
                "put it back, or give --fallback GRAPH.rbg|abstain to replace the recorded policy",
            )
    fallbacks = {p: load(p) for p in sorted(used) if p != ABSTAIN}
    return GraphSet(folder, graphs, failures, policies, fallbacks, fallback)


def missing_record(item: Item, mode: str, missing: Missing, fallback: str | None) -> dict[str, Any]:
    """The trace record of an item that no compiled graph judged: a compile
    failure (readout `error`), or an abstention under the `abstain` policy."""
    cids = list(item.candidate_ids)
    if fallback == ABSTAIN:
        decision = Decision("abstain")
    else:
        decision = Decision("error", error=f"no compiled graph for this item: {missing.reason}")
    return {
        "schema": SCHEMA,
        "item": item.id,
        "graph": {"name": missing.graph, "hash": UNCOMPILED, "criteria": {}},
        "mode": mode,
        "contract": None,
        "candidates": cids,
        "criteria": {},
        "criterion_errors": {},
        "operators": {},
        "sink": None,
        "readout": decision.to_json(),
        "gold": item.gold,
        "item_hash": item_hash(item),
        "compile": compile_field(missing, fallback),
    }


def compile_field(missing: Missing, fallback: str | None) -> dict[str, Any]:
    """The `compile` field of a record: which graph was missing, why, and what the policy did."""
    return {
        "graph": missing.graph,
        "status": "missing",
        "reason": missing.reason,
        "log": missing.log,
        "fallback": fallback,
    }


@attrs.frozen
class SetResult:
    """One item's result under a graph set: as an Interpreter's ItemResult,
    plus how it was routed (`compiled`, `fallback`, `abstain` or `failed`)."""

    item: Item
    mode: str
    composition: Composition
    record: dict[str, Any]
    route: str


def interpreters(gs: GraphSet, make: Callable[[CheckedGraph], Interpreter]) -> dict[int, Interpreter]:
    """An Interpreter (`make(graph)`) for every graph of the set, by `id(graph)`."""
    return {id(g): make(g) for g in gs.all_graphs()}


async def run_set(
    gs: GraphSet, interps: dict[int, Interpreter], items: Iterable[Item], concurrency: int, mode: str | None = None
) -> AsyncIterator[SetResult]:
    """Each item judged by its own graph's Interpreter (`interpreters`),
    results in input order, with up to `concurrency` criterion calls in
    flight across all the graphs (as for one graph); bad input raises after
    the items before it are yielded."""
    from rubriclang.interp.engine import in_order, window
    from rubriclang.interp.slots import Slots

    slots = Slots(concurrency)
    for it in interps.values():
        it.share_slots(slots)

    def interp(g: CheckedGraph) -> Interpreter:
        return interps[id(g)]

    async def one(item: Item) -> SetResult:
        how = gs.resolve(item)
        if how.graph is not None:
            r = await interp(how.graph).evaluate_async(item, mode)
            return SetResult(item, r.mode, r.composition, how.mark(r.record), how.route)
        m = mode or item.mode
        record = how.unjudged(item, m)
        decision = Decision.from_json(record["readout"])
        return SetResult(item, m, Composition((), {}, {}, decision), record, how.route)

    async for result in in_order(items, one, window(concurrency)):
        yield result


@attrs.frozen
class Union:
    """Every criterion of a set's graphs, for opening one LLM backend for all."""

    criteria: tuple[Any, ...]
    path: str


def union(gs: GraphSet) -> Union:
    graphs = gs.all_graphs()
    return Union(tuple(c for g in graphs for c in g.criteria), graphs[0].path if graphs else gs.folder)
