"""What the viewer shows: the inputs named on the command line, read once
at start-up, never written."""

from __future__ import annotations

import collections

import attrs

from rubriclang.checker.graph import CheckedGraph
from rubriclang.interp.items import Item
from rubriclang.interp.readout import describe
from rubriclang.interp.trace import decision_of, read_traces
from rubriclang.items.render import render
from rubriclang.items.shape import ItemShape
from rubriclang.review.impact import Impact, ItemImpact
from rubriclang.view.table import TraceTable


@attrs.frozen
class TraceSource:
    label: str
    table: TraceTable


@attrs.frozen
class EvalSource:
    label: str
    data: dict


@attrs.frozen
class AuditSource:
    label: str
    folder: str
    report: dict


@attrs.frozen
class CompareSource:
    """Two sides over the same items: their transitions (`Impact`)."""

    label: str
    old: str
    new: str
    impact: Impact


@attrs.define
class Sources:
    graph: CheckedGraph | None = None
    items: dict[str, Item] = attrs.field(factory=dict)
    traces: list[TraceSource] = attrs.field(factory=list)
    evals: list[EvalSource] = attrs.field(factory=list)
    audits: list[AuditSource] = attrs.field(factory=list)
    compares: list[CompareSource] = attrs.field(factory=list)

    def trace(self, label: str) -> TraceSource | None:
        return next((t for t in self.traces if t.label == label), None)


def compare_traces(old: str, new: str) -> Impact:
    """The decisions that differ between two traces of the same items, as
    `rbg diff --traces` reports them (`Impact`); items in only one are named
    in `reasons` when no item is shared."""
    before = {rec["item"]: describe(decision_of(rec)) for _, rec in read_traces(old)}
    differences, shared = [], 0
    for _, rec in read_traces(new):
        was = before.get(rec["item"])
        if was is None:
            continue
        shared += 1
        now = describe(decision_of(rec))
        if now != was:
            differences.append(ItemImpact(rec["item"], was, now))
    reasons = () if shared else (f"`{old}` and `{new}` have no item in common",)
    return Impact(new, shared, tuple(differences), reasons)


def items_by_transition(impact: Impact) -> dict[str, list[str]]:
    out: dict[str, list[str]] = collections.defaultdict(list)
    for d in impact.differences:
        out[d.transition].append(d.item)
    return out


def item_text(items: dict[str, Item], shape: ItemShape | None = None) -> dict[str, str]:
    """Lower-cased input and candidate texts per item, and the default
    renderings of the other fields `shape` declares, for the text search."""
    extra = shape.extra if shape is not None else ()
    return {
        i.id: " ".join([i.input, *i.candidates.values(), *(render(f, i.fields.get(f.name)) for f in extra)]).lower()
        for i in items.values()
    }
