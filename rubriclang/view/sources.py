"""What the viewer shows: the inputs named on the command line, read once
at start-up, never written."""

from __future__ import annotations

import collections
import json
from collections.abc import Iterator, Mapping

import attrs

from rubriclang.checker.graph import CheckedGraph
from rubriclang.interp.items import Item, ItemError, item_from_json, read_items
from rubriclang.interp.readout import describe
from rubriclang.interp.trace import decision_of, read_traces
from rubriclang.items.render import render
from rubriclang.items.shape import ItemShape
from rubriclang.review.impact import Impact, ItemImpact
from rubriclang.view.table import TraceTable, line_offsets


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


_BOM = b"\xef\xbb\xbf"
_FILES = 1 << 16  # items files an `Items` can index: a line and a file are one int


class Items(Mapping[str, Item]):
    """The items of items files by id, a later file's item replacing an
    earlier one's: each file is read once to index where each item is (its
    line; a few dozen bytes an item, not the item), and an item is read
    again from its line when asked for, so the viewer and its export hold
    no item for long."""

    def __init__(self, shape: ItemShape | None = None):
        self.shape = shape
        self._paths: list[str] = []
        self._offsets: list = []  # per file, each line's byte offset
        self._at: dict[str, int] = {}  # id -> line * _FILES + file

    def add(self, path: str) -> None:
        """Index the items of `path`, each checked as `read_items` checks it."""
        n = len(self._paths)
        if n >= _FILES:
            raise ItemError(path, f"more than {_FILES} items files", "give the items in fewer files")
        for it in read_items(path, self.shape):
            self._at[it.id] = it.line * _FILES + n
        self._paths.append(path)
        self._offsets.append(line_offsets(path))

    def __getitem__(self, item_id: str) -> Item:
        line, n = divmod(self._at[item_id], _FILES)
        path = self._paths[n]
        where = f"{path}:{line}"
        with open(path, "rb") as fh:
            fh.seek(self._offsets[n][line - 1])
            raw = fh.readline()
        try:
            it = item_from_json(json.loads(raw.removeprefix(_BOM) if line == 1 else raw), where, line, self.shape)
        except (ValueError, ItemError):  # not JSON, or not an item, any more
            it = None
        if it is None or it.id != item_id:
            raise ItemError(
                where, f"the item `{item_id}` changed since it was read", "keep the items file as it is while viewing"
            )
        return it

    def __iter__(self) -> Iterator[str]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._at


class ItemTexts(Mapping[str, str]):
    """Per item, its text for the search (`item_text`), made when asked for."""

    def __init__(self, items: Items):
        self._items = items

    def __getitem__(self, item_id: str) -> str:
        return item_text(self._items[item_id], self._items.shape)

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._items


@attrs.define
class Sources:
    graph: CheckedGraph | None = None
    items: Mapping[str, Item] = attrs.field(factory=dict)
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


def item_text(i: Item, shape: ItemShape | None = None) -> str:
    """The item's input and candidate texts, and the default renderings of
    the other fields `shape` declares, lower-cased, for the text search."""
    extra = shape.extra if shape is not None else ()
    return " ".join([i.input, *i.candidates.values(), *(render(f, i.fields.get(f.name)) for f in extra)]).lower()
