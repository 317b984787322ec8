"""Writing the audit's files atomically (see rubriclang.safeio), so an
interrupted audit never leaves half a file behind."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from rubriclang.safeio import atomic_file

_BLOCK = 1 << 16  # characters encoded before they are written


def write_json(path: str, doc, indent: int | None = 1) -> None:
    """`doc` with sorted keys and no non-finite numbers: the text of
    `json.dumps`, written as it is encoded rather than built whole first (a
    report's pieces took about 5 KB an item before they were joined). A
    value of `doc` made entry by entry (the report's `by_item`, a sealed
    suite's items) is encoded as it is read (`json_chunks`)."""
    with atomic_file(path) as fh:
        pending: list[str] = []
        size = 0
        for chunk in json_chunks(doc, indent):
            pending.append(chunk)
            size += len(chunk)
            if size >= _BLOCK:
                fh.write("".join(pending).encode("utf-8"))
                pending, size = [], 0
        pending.append("\n")
        fh.write("".join(pending).encode("utf-8"))


def json_chunks(doc, indent: int | None = 1) -> Iterator[str]:
    """The text of `json.dumps(doc, sort_keys=True, ensure_ascii=False,
    indent=indent, allow_nan=False)`, in pieces. Where `doc` is a dict, each
    of its values that is a Mapping but not a dict (or a Sequence but not a
    list or tuple, as `Lazy`) is made entry by entry: it is written in key
    order, each entry read (made) when it is written and dropped after,
    never the whole table at once."""
    encoder = json.JSONEncoder(sort_keys=True, ensure_ascii=False, indent=indent, allow_nan=False)
    if not isinstance(doc, dict) or not any(_streamed(v) for v in doc.values()):
        yield from encoder.iterencode(doc)
        return
    yield from _table(doc, 1, encoder, indent)


class Lazy(Sequence):
    """`source`'s elements, each made by `make` when it is read: a
    document's list written (`write_json`) or hashed an element at a time."""

    def __init__(self, source: Sequence, make: Callable[[Any], Any]):
        self.source = source
        self.make = make

    def __len__(self) -> int:
        return len(self.source)

    def __getitem__(self, n):  # no slices: an element at a time
        return self.make(self.source[n])

    def __iter__(self) -> Iterator[Any]:
        return map(self.make, self.source)


def _streamed(value) -> bool:
    """A table (a Mapping but not a dict) or a list (a Sequence but not a
    list, tuple or string) whose entries are made as they are read."""
    if isinstance(value, Mapping):
        return not isinstance(value, dict)
    return isinstance(value, Sequence) and not isinstance(value, (list, tuple, str, bytes))


def _table(table: Mapping | Sequence, level: int, encoder: json.JSONEncoder, indent: int | None) -> Iterator[str]:
    """A table's (or a list's) text at nesting `level`, as `json.JSONEncoder`
    lays it out: its values are at `level`, each encoded whole unless it is
    itself streamed (`_streamed`)."""
    keyed = isinstance(table, Mapping)
    opening, closing = "{}" if keyed else "[]"
    inner = "\n" + " " * (indent * level) if indent is not None else ""
    outer = "\n" + " " * (indent * (level - 1)) if indent is not None else ""
    separator = "," if indent is not None else ", "
    entries = ((key, table[key]) for key in sorted(table)) if keyed else ((None, v) for v in table)
    n = -1
    for n, (key, value) in enumerate(entries):
        yield (opening if n == 0 else separator) + inner + (encoder.encode(key) + ": " if keyed else "")
        if _streamed(value):
            yield from _table(value, level + 1, encoder, indent)
        elif inner:
            # JSON strings hold no raw newline: each one lays out the value's nesting.
            for chunk in encoder.iterencode(value):
                yield chunk.replace("\n", inner)
        else:
            yield from encoder.iterencode(value)
    yield opening + closing if n < 0 else outer + closing


def write_lines(path: str, rows) -> None:
    """JSON Lines, one sorted-key object a line, written in blocks as they are encoded."""
    with atomic_file(path) as fh:
        pending: list[str] = []
        for r in rows:
            pending.append(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n")
            if len(pending) >= 1024:
                fh.write("".join(pending).encode("utf-8"))
                pending = []
        fh.write("".join(pending).encode("utf-8"))
