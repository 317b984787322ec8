"""Replay: recompute composition and readout from recorded judgments, no calls.

With the graph that wrote the traces, every decision must come out identical.
With another version that shares the criteria, the differences are exactly
the decisions that version would change.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs

from rubriclang.checker.graph import CheckedGraph
from rubriclang.interp.compose import Composer, Composition
from rubriclang.interp.graphset import GraphSet
from rubriclang.interp.items import ItemError
from rubriclang.interp.readout import Decision, describe
from rubriclang.interp.trace import criterion_hashes, decision_of, judgment_from_json, read_traces


@attrs.frozen
class Replayed:
    item: str
    mode: str
    old: Decision
    new: Decision
    composition: Composition

    @property
    def changed(self) -> bool:
        return (self.old.status, self.old.decision) != (self.new.status, self.new.decision)

    def transition(self) -> str:
        return f"{describe(self.old)} -> {describe(self.new)}"


def replay(graph: CheckedGraph, traces_path: str) -> Iterator[Replayed]:
    """Replay every record of a trace file under `graph`.

    Raises ItemError (at the record's line) when a record lacks a criterion of
    the graph, or when a shared criterion was redefined (its recorded
    judgments would not answer the new question).
    """
    composer, want = Composer(graph), criterion_hashes(graph)
    for line, rec in read_traces(traces_path):
        yield _replay_record(graph, composer, want, rec, f"{traces_path}:{line}")


def replay_set(gs: GraphSet, traces_path: str) -> Iterator[Replayed]:
    """Replay a trace of a folder of compiled graphs (`rbg run GRAPHS/`):
    each record under the graph of the set with its hash; a record of an
    item that no graph judged keeps its recorded decision. A record of a
    graph the set does not have is an ItemError at its line."""
    from rubriclang.interp.graphset import UNCOMPILED
    from rubriclang.interp.trace import graph_hash

    by_hash = {graph_hash(g): (g, Composer(g), criterion_hashes(g)) for g in gs.all_graphs()}
    for line, rec in read_traces(traces_path):
        where = f"{traces_path}:{line}"
        h = rec["graph"]["hash"]
        if h == UNCOMPILED:
            d = decision_of(rec)
            yield Replayed(rec["item"], rec["mode"], d, d, Composition((), {}, {}, d))
            continue
        if h not in by_hash:
            raise ItemError(where, f"no graph in `{gs.folder}` has the hash this record was judged with ({h[:19]}...)", "replay a trace with the folder (and --fallback) that wrote it")
        g, composer, want = by_hash[h]
        yield _replay_record(g, composer, want, rec, where)


def _replay_record(graph: CheckedGraph, composer: Composer, want: dict[str, Any], rec: dict[str, Any], where: str) -> Replayed:
    recorded = rec["graph"].get("criteria", {})
    for name, h in want.items():
        if name not in rec["criteria"]:
            raise ItemError(where, f"the trace has no judgments for criterion `{name}`", "replay needs the same criteria; run the new graph to judge new criteria")
        if recorded.get(name) not in (None, h):
            raise ItemError(where, f"criterion `{name}` is defined differently from when it was judged", "its recorded judgments do not apply; rerun it")
    mode = rec["mode"]
    try:
        composer.check_mode(mode)
    except Exception as exc:
        raise ItemError(where, str(exc)) from None
    cids = tuple(rec["candidates"])
    judgments = {
        c.name: {cid: judgment_from_json(rec["criteria"][c.name][cid]) for cid in cids}
        for c in graph.criteria
    }
    comp = composer.compose(mode, cids, judgments)
    return Replayed(rec["item"], mode, decision_of(rec), comp.decision, comp)
