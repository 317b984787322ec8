"""Verdict impact: which decisions NEW would change, from recorded judgments.

Each trace record is composed under both graphs from its criterion judgments
alone, with no calls. That is only sound when both graphs ask exactly the
questions the traces answered: a criterion the traces never judged, or one
redefined since (another prompt asks another question), makes the impact
unknowable, and `Impact.reasons` says why instead of guessing. Either side
may be a folder of graphs compiled per instance, each record then composed
by its own item's graph (or the folder's fallback policy).
"""

from __future__ import annotations

import collections
from typing import Any

import attrs

from rubriclang.checker.graph import CheckedGraph
from rubriclang.interp.graphset import ABSTAIN, UNCOMPILED, GraphSet
from rubriclang.interp.readout import describe
from rubriclang.interp.replay import Replayer
from rubriclang.interp.trace import ItemsNow, read_traces


@attrs.frozen
class ItemImpact:
    """One item whose decision differs: OLD's and NEW's, in a few words."""

    item: str
    old: str
    new: str
    # Each per-element criterion's element judgments behind both decisions
    # (criterion -> candidate -> [{"key", "value"}]), as the trace holds them.
    elements: dict[str, dict[str, list[dict[str, Any]]]] = attrs.field(factory=dict)

    @property
    def transition(self) -> str:
        return f"{self.old} -> {self.new}"


@attrs.frozen
class Impact:
    """The decisions that differ over `items` traced items, or, when `reasons`
    is not empty, why the traces cannot tell."""

    traces: str
    items: int
    differences: tuple[ItemImpact, ...]
    reasons: tuple[str, ...] = ()

    @property
    def available(self) -> bool:
        return not self.reasons

    def transitions(self) -> tuple[tuple[str, int], ...]:
        """(`old -> new`, how many items), most frequent first."""
        counts = collections.Counter(d.transition for d in self.differences)
        return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


# How a side with no graph for an item decides it (a folder's fallback policy).
COMPILE_FAILURE = "compile failure"


def verdict_impact(
    old: CheckedGraph | GraphSet, new: CheckedGraph | GraphSet, traces_path: str, items: ItemsNow | None = None
) -> Impact:
    """Replay `traces_path` under both sides, each a CheckedGraph or a
    folder of compiled graphs (rubriclang.interp.graphset.GraphSet; one
    graph is the one-graph case). Under a folder a record is composed by the
    graph of its id, else by the folder's fallback; with none it is a
    `compile failure` (or `abstain`, under that policy), counted in the
    transitions like any decision. Raises ItemError for a line that is not
    a trace record, and, with `items`, for records that judged other content
    than the item of their id now has (interp.trace.read_traces)."""
    sides = (("OLD", old), ("NEW", new))
    ids = _ids_by_hash(old, new)
    unfit: dict[str, dict[str, set[str]]] = {
        kind: {"OLD": set(), "NEW": set()} for kind in ("unjudged", "redefined", "mode")
    }
    uncompiled: dict[str, list[str]] = {"OLD": [], "NEW": []}
    replayers: dict[int, Replayer] = {}  # by the graph's identity: one per graph of a folder
    differences = []
    n = 0
    for _, rec in read_traces(traces_path, items):
        n += 1
        gid = _graph_id(rec, ids)
        judges = [(label, _judge(side, gid)) for label, side in sides]
        for label, g in judges:
            if not isinstance(g, CheckedGraph):
                continue
            if rec["graph"]["hash"] == UNCOMPILED:
                # No graph judged this item when the traces were written.
                uncompiled[label].append(rec["item"])
                continue
            if id(g) not in replayers:
                replayers[id(g)] = Replayer(g)
            for kind, name in replayers[id(g)].unfit(rec):
                unfit[kind][label].add(name)
        if any(s for d in unfit.values() for s in d.values()) or any(uncompiled.values()):
            continue  # keep reading: the reasons should name every problem
        decisions = []  # (what is compared: every digit, what is shown)
        for _label, g in judges:
            if not isinstance(g, CheckedGraph):
                decisions.append(((g, None), g))
                continue
            d = replayers[id(g)].decide(rec)
            decisions.append(((d.status, d.decision), describe(d)))
        (a, a_text), (b, b_text) = decisions
        if a != b:
            differences.append(ItemImpact(rec["item"], a_text, b_text, _elements(rec)))
    reasons = _reasons(unfit["unjudged"], unfit["redefined"], unfit["mode"]) + _uncompiled_reasons(uncompiled)
    return Impact(traces_path, n, () if reasons else tuple(differences), reasons)


def _elements(rec: dict[str, Any]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """The record's element judgments, by criterion and candidate (only criteria judged per element)."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for name, per in rec["criteria"].items():
        for cid, j in per.items():
            if "elements" in j:
                keyed = [{"key": e["key"], "value": e["value"]} for e in j["elements"]]
                out.setdefault(name, {})[cid] = keyed
    return out


def _ids_by_hash(*sides: CheckedGraph | GraphSet) -> dict[str, str]:
    """The graph id (file name) of each graph hash of the folders among `sides`."""
    from rubriclang.interp.trace import graph_hash

    return {graph_hash(g): gid for side in sides if isinstance(side, GraphSet) for gid, g in side.graphs.items()}


def _graph_id(rec: dict[str, Any], ids: dict[str, str]) -> str:
    """The id of the graph compiled for a record's item: the one its
    `compile` field names (no graph judged it), else the folder graph with
    its hash, else the item's id."""
    if rec.get("compile"):
        compiled: str = rec["compile"]["graph"]
        return compiled
    item: str = rec["item"]
    return ids.get(rec["graph"]["hash"], item)


def _judge(side: CheckedGraph | GraphSet, gid: str) -> CheckedGraph | str:
    """The graph that decides item graph `gid` on a side, or the decision
    (`compile failure`, `abstain`) of a folder without one."""
    if isinstance(side, CheckedGraph):
        return side
    if gid in side.graphs:
        return side.graphs[gid]
    fallback = side.fallback_for(gid)
    if isinstance(fallback, CheckedGraph):
        return fallback
    return "abstain" if fallback == ABSTAIN else COMPILE_FAILURE


def _uncompiled_reasons(uncompiled: dict[str, list[str]]) -> tuple[str, ...]:
    out = []
    for label in ("OLD", "NEW"):
        items = uncompiled[label]
        if items:
            first = ", ".join(f"`{i}`" for i in items[:3]) + (", ..." if len(items) > 3 else "")
            out.append(
                f"{label} has a graph for {len(items)} item(s) ({first}) that no graph judged in the traces"
                f" (they did not compile then); judge them first (`rbg run {label} ITEMS --out TRACES`)"
            )
    return tuple(out)


def _reasons(
    unjudged: dict[str, set[str]], redefined: dict[str, set[str]], no_readout: dict[str, set[str]]
) -> tuple[str, ...]:
    out = []
    added = unjudged["NEW"] - unjudged["OLD"]
    if added:
        out.append(
            f"NEW adds {_names(added)}, which the traces never judged; "
            f"judge {'it' if len(added) == 1 else 'them'} first (`rbg run NEW ITEMS --out TRACES`)"
        )
    if unjudged["OLD"]:
        out.append(
            f"the traces have no judgments for {_names(unjudged['OLD'])} of OLD; were they written by another rubric?"
        )
    for label in ("OLD", "NEW"):
        if redefined[label]:
            out.append(
                f"{label} defines {_names(redefined[label])} differently from when the traces judged them: "
                "their recorded judgments answer another question; rerun them"
            )
    for label in ("OLD", "NEW"):
        for mode in sorted(no_readout[label]):
            out.append(f"{label} has no `{mode}` readout, and the traces hold {mode} items")
    return tuple(out)


def _names(names: set[str]) -> str:
    word = "criterion" if len(names) == 1 else "criteria"
    return f"{word} " + ", ".join(f"`{n}`" for n in sorted(names))
