"""Verdict impact: which decisions NEW would change, from recorded judgments.

Each trace record is composed under both graphs from its criterion judgments
alone, with no calls. That is only sound when both graphs ask exactly the
questions the traces answered: a criterion the traces never judged, or one
redefined since (another prompt asks another question), makes the impact
unknowable, and `Impact.reasons` says why instead of guessing.
"""

from __future__ import annotations

import collections

import attrs

from rubriclang.checker.graph import CheckedGraph
from rubriclang.interp.readout import describe
from rubriclang.interp.replay import Replayer
from rubriclang.interp.trace import read_traces


@attrs.frozen
class ItemImpact:
    """One item whose decision differs: OLD's and NEW's, in a few words."""

    item: str
    old: str
    new: str

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


def verdict_impact(old: CheckedGraph, new: CheckedGraph, traces_path: str) -> Impact:
    """Replay `traces_path` under both graphs. Raises ItemError for a line
    that is not a trace record."""
    sides = (("OLD", Replayer(old)), ("NEW", Replayer(new)))
    unfit: dict[str, dict[str, set[str]]] = {
        kind: {"OLD": set(), "NEW": set()} for kind in ("unjudged", "redefined", "mode")
    }
    differences = []
    n = 0
    for _, rec in read_traces(traces_path):
        n += 1
        for label, replayer in sides:
            for kind, name in replayer.unfit(rec):
                unfit[kind][label].add(name)
        if any(s for d in unfit.values() for s in d.values()):
            continue  # keep reading: the reasons should name every problem
        a, b = (replayer.compose(rec).decision for _, replayer in sides)
        if (a.status, a.decision) != (b.status, b.decision):
            differences.append(ItemImpact(rec["item"], describe(a), describe(b)))
    reasons = _reasons(unfit["unjudged"], unfit["redefined"], unfit["mode"])
    return Impact(traces_path, n, () if reasons else tuple(differences), reasons)


def _reasons(unjudged, redefined, no_readout) -> tuple[str, ...]:
    out = []
    added = unjudged["NEW"] - unjudged["OLD"]
    if added:
        out.append(
            f"NEW adds {_names(added)}, which the traces never judged; "
            f"judge {'it' if len(added) == 1 else 'them'} first (`rbg run NEW ITEMS --out TRACES`)"
        )
    if unjudged["OLD"]:
        out.append(f"the traces have no judgments for {_names(unjudged['OLD'])} of OLD; were they written by another rubric?")
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
