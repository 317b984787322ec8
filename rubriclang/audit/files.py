"""Writing the audit's files atomically (see rubriclang.safeio), so an
interrupted audit never leaves half a file behind."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping

from rubriclang.safeio import atomic_file, write_atomic

_BLOCK = 1 << 16  # characters encoded before they are written


def write_json(path: str, doc, indent: int | None = 1) -> None:
    """`doc` with sorted keys and no non-finite numbers: the text of
    `json.dumps`, written as it is encoded rather than built whole first (a
    report's pieces took about 5 KB an item before they were joined). A
    value of `doc` that is a Mapping but not a dict (the report's
    `by_item`) is encoded entry by entry as it is read (`json_chunks`)."""
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
    of its values that is a Mapping but not a dict is a table made entry by
    entry: it is written in key order, each entry read (made) when it is
    written and dropped after, never the whole table at once."""
    encoder = json.JSONEncoder(sort_keys=True, ensure_ascii=False, indent=indent, allow_nan=False)
    if not isinstance(doc, dict) or not any(_streamed(v) for v in doc.values()):
        yield from encoder.iterencode(doc)
        return
    yield from _table(doc, 1, encoder, indent)


def _streamed(value) -> bool:
    return isinstance(value, Mapping) and not isinstance(value, dict)


def _table(table: Mapping, level: int, encoder: json.JSONEncoder, indent: int | None) -> Iterator[str]:
    """A table's text at nesting `level`, as `json.JSONEncoder` lays it out:
    its values are at `level`, each encoded whole unless it is itself a
    streamed table (`_streamed`)."""
    keys = sorted(table)
    if not keys:
        yield "{}"
        return
    inner = "\n" + " " * (indent * level) if indent is not None else ""
    outer = "\n" + " " * (indent * (level - 1)) if indent is not None else ""
    separator = "," if indent is not None else ", "
    for n, key in enumerate(keys):
        yield ("{" if n == 0 else separator) + inner + encoder.encode(key) + ": "
        value = table[key]
        if _streamed(value):
            yield from _table(value, level + 1, encoder, indent)
        elif inner:
            # JSON strings hold no raw newline: each one lays out the value's nesting.
            for chunk in encoder.iterencode(value):
                yield chunk.replace("\n", inner)
        else:
            yield from encoder.iterencode(value)
    yield outer + "}"


def write_lines(path: str, rows) -> None:
    """JSON Lines, one sorted-key object a line."""
    write_atomic(path, "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows))
