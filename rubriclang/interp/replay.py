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
from rubriclang.interp.backend import Judgment
from rubriclang.interp.compose import Composer, Composition
from rubriclang.interp.graphset import GraphSet
from rubriclang.interp.items import ItemError
from rubriclang.interp.readout import Decision, describe
from rubriclang.interp.trace import ItemsNow, criterion_hashes, decision_of, judgment_from_json, read_traces


@attrs.frozen
class Replayed:
    """One record replayed: its recorded decision and the one recomputed,
    with the recomputed composition (None when replayed for decisions only)."""

    item: str
    mode: str
    old: Decision
    new: Decision
    composition: Composition | None

    @property
    def changed(self) -> bool:
        return (self.old.status, self.old.decision) != (self.new.status, self.new.decision)

    def transition(self) -> str:
        return f"{describe(self.old)} -> {describe(self.new)}"


@attrs.frozen
class Replayer:
    """One graph, ready to recompose trace records from their recorded
    judgments: the one replay, for `rbg replay` and `rbg diff`'s verdict
    impact (which compares two graphs' replays of the same records)."""

    graph: CheckedGraph
    _composer: Composer = attrs.field(init=False, default=attrs.Factory(lambda s: Composer(s.graph), takes_self=True))
    _hashes: dict[str, str] = attrs.field(
        init=False, default=attrs.Factory(lambda s: criterion_hashes(s.graph), takes_self=True)
    )

    def unfit(self, rec: dict[str, Any]) -> tuple[tuple[str, str], ...]:
        """Why `rec` cannot be replayed under this graph, each as (kind,
        name): `unjudged` (a criterion the record has no judgments for),
        `redefined` (a criterion defined differently from when it was judged)
        or `mode` (a mode the graph has no readout for). Empty when it can."""
        recorded = rec["graph"].get("criteria", {})
        out = []
        for name, h in self._hashes.items():
            if name not in rec["criteria"]:
                out.append(("unjudged", name))
            elif recorded.get(name) not in (None, h):
                out.append(("redefined", name))
        if rec["mode"] not in self.graph.readouts:
            out.append(("mode", rec["mode"]))
        return tuple(out)

    def compose(self, rec: dict[str, Any]) -> Composition:
        """Recompose a record that is not `unfit`."""
        return self._composer.compose(rec["mode"], *self._judgments(rec))

    def decide(self, rec: dict[str, Any]) -> Decision:
        """The decision of a record that is not `unfit`, as `compose(rec).decision`."""
        return self._composer.decide(rec["mode"], *self._judgments(rec))

    def _judgments(self, rec: dict[str, Any]) -> tuple[tuple[str, ...], dict[str, dict[str, Judgment]]]:
        cids = tuple(rec["candidates"])
        crits = rec["criteria"]
        return cids, {
            c.name: {cid: judgment_from_json(crits[c.name][cid]) for cid in cids} for c in self.graph.criteria
        }

    def replay(self, rec: dict[str, Any], where: str, values: bool = True) -> Replayed:
        """Replay one record; an ItemError at `where` when it is unfit.
        `values=False`: the decision only (no composition)."""
        for kind, name in self.unfit(rec):
            if kind == "unjudged":
                raise ItemError(
                    where,
                    f"the trace has no judgments for criterion `{name}`",
                    "replay needs the same criteria; run the new graph to judge new criteria",
                )
            if kind == "redefined":
                raise ItemError(
                    where,
                    f"criterion `{name}` is defined differently from when it was judged",
                    "its recorded judgments do not apply; rerun it",
                )
            try:
                self._composer.check_mode(name)
            except Exception as exc:
                raise ItemError(where, str(exc)) from None
        if not values:
            return Replayed(rec["item"], rec["mode"], decision_of(rec), self.decide(rec), None)
        comp = self.compose(rec)
        return Replayed(rec["item"], rec["mode"], decision_of(rec), comp.decision, comp)


def replay(
    graph: CheckedGraph, traces_path: str, values: bool = True, items: ItemsNow | None = None
) -> Iterator[Replayed]:
    """Replay every record of a trace file under `graph` (`values=False`:
    decisions only, each `Replayed.composition` None).

    Raises ItemError (at the record's line) when a record lacks a criterion of
    the graph, or when a shared criterion was redefined (its recorded
    judgments would not answer the new question); with `items`, once every
    record is replayed, when any judged other content than `items` holds now
    (`read_traces`).
    """
    replayer = Replayer(graph)
    for line, rec in read_traces(traces_path, items):
        yield replayer.replay(rec, f"{traces_path}:{line}", values)


def replay_set(
    gs: GraphSet, traces_path: str, values: bool = True, items: ItemsNow | None = None
) -> Iterator[Replayed]:
    """Replay a trace of a folder of compiled graphs (`rbg run GRAPHS/`):
    each record under the graph of the set with its hash; a record of an
    item that no graph judged keeps its recorded decision. A record of a
    graph the set does not have is an ItemError at its line; `items` as
    for `replay`."""
    from rubriclang.interp.graphset import UNCOMPILED
    from rubriclang.interp.trace import graph_hash

    by_hash = {graph_hash(g): Replayer(g) for g in gs.all_graphs()}
    for line, rec in read_traces(traces_path, items):
        where = f"{traces_path}:{line}"
        h = rec["graph"]["hash"]
        if h == UNCOMPILED:
            d = decision_of(rec)
            yield Replayed(rec["item"], rec["mode"], d, d, Composition((), {}, {}, d) if values else None)
            continue
        if h not in by_hash:
            raise ItemError(
                where,
                f"no graph in `{gs.folder}` has the hash this record was judged with ({h[:19]}...)",
                "replay a trace with the folder (and --fallback) that wrote it",
            )
        yield by_hash[h].replay(rec, where, values)
