"""The semantic diff of two checked graphs, keyed by names.

Small and boring on purpose: both graphs become keyed subjects
(`canonical.py`), and a diff is the subjects one side lacks plus, for the
subjects both have, the fields whose values differ.
"""

from __future__ import annotations

from typing import Any

import attrs

from rubriclang.catalog import Catalog
from rubriclang.checker.graph import CheckedGraph
from rubriclang.review.canonical import HEAD, SECTIONS, Path, Subject, subjects
from rubriclang.review.words import is_prose, word_diff


class _Missing:
    """The value of a field one side does not have."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

ADD, CHANGE, REMOVE = "add", "change", "remove"


@attrs.frozen
class FieldChange:
    """One field of a subject: `old -> new`; MISSING on the side without it.
    `words` is a word diff when both values are prose."""

    path: Path
    old: Any = MISSING
    new: Any = MISSING
    words: tuple[tuple[str, str], ...] | None = None

    @property
    def action(self) -> str:
        return ADD if self.old is MISSING else REMOVE if self.new is MISSING else CHANGE


@attrs.frozen
class Change:
    """A subject added, removed or changed.

    `head` says what it is (a node's kind, procedure or operator, and type;
    the rubric's name) on the side that has it, NEW preferred. `fields` are
    every changed field; of an added or removed subject, all its fields less
    the parameters at their default."""

    section: str
    name: str
    action: str
    head: dict[Path, Any]
    fields: tuple[FieldChange, ...]


@attrs.frozen
class GraphDiff:
    """Every change from OLD to NEW, sorted by section then name."""

    changes: tuple[Change, ...]

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def node_counts(self) -> dict[str, int]:
        """How many nodes are added, changed and removed."""
        counts = {ADD: 0, CHANGE: 0, REMOVE: 0}
        for c in self.changes:
            if c.section == "node":
                counts[c.action] += 1
        return counts


def diff_graphs(old: CheckedGraph | None, new: CheckedGraph | None, catalog: Catalog | None = None) -> GraphDiff:
    """The semantic diff from `old` to `new` (None: a side with no graph)."""
    a, b = subjects(old, catalog), subjects(new, catalog)
    changes = []
    for key in sorted(a.keys() | b.keys(), key=lambda k: (SECTIONS.index(k[0]), k[1])):
        if key not in a:
            changes.append(_whole(b[key], ADD))
        elif key not in b:
            changes.append(_whole(a[key], REMOVE))
        else:
            fields = _fields(a[key].fields, b[key].fields)
            if fields:
                changes.append(Change(*key, CHANGE, _head(b[key]), fields))
    return GraphDiff(tuple(changes))


def _head(s: Subject) -> dict[Path, Any]:
    return {p: s.fields[p] for p in (*HEAD, ("name",)) if p in s.fields}


def _whole(s: Subject, action: str) -> Change:
    listed = (p for p in sorted(s.fields, key=_path_key) if p not in s.defaults)
    side = "new" if action == ADD else "old"
    fields = tuple(FieldChange(p, **{side: s.fields[p]}) for p in listed)
    return Change(s.section, s.name, action, _head(s), fields)


def _fields(old: dict[Path, Any], new: dict[Path, Any]) -> tuple[FieldChange, ...]:
    out = []
    for p in sorted(old.keys() | new.keys(), key=_path_key):
        a, b = old.get(p, MISSING), new.get(p, MISSING)
        if a is MISSING or b is MISSING or not _same(a, b):
            words = word_diff(a, b) if is_prose(a, b) else None
            out.append(FieldChange(p, a, b, words))
    return tuple(out)


def _same(a: Any, b: Any) -> bool:
    # `true` is not `1` to a reader, though Python says True == 1.
    same: bool = _tagged(a) == _tagged(b)
    return same


def _tagged(x: Any) -> Any:
    if isinstance(x, bool):
        return ("bool", x)
    if isinstance(x, (list, tuple)):
        return [_tagged(v) for v in x]
    if isinstance(x, dict):
        return {k: _tagged(v) for k, v in x.items()}
    return x


def _path_key(p: Path) -> tuple[int, tuple[tuple[str, Any], ...]]:
    """What a node is first, then parameters, then ports; keys in their own
    order (integers as numbers), never `anchors[10]` before `anchors[2]`."""
    rank = HEAD.index(p) if p in HEAD else len(HEAD) + (p[0] == "ports")
    return (rank, tuple((type(x).__name__, x) for x in p))
