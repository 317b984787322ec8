"""Writing the audit's files atomically (see rubriclang.safeio), so an
interrupted audit never leaves half a file behind."""

from __future__ import annotations

import json

from rubriclang.safeio import atomic_file, write_atomic

_BLOCK = 1 << 16  # characters encoded before they are written


def write_json(path: str, doc, indent: int | None = 1) -> None:
    """`doc` with sorted keys and no non-finite numbers: the text of
    `json.dumps`, written as it is encoded rather than built whole first (a
    report's pieces took about 5 KB an item before they were joined)."""
    encoder = json.JSONEncoder(sort_keys=True, ensure_ascii=False, indent=indent, allow_nan=False)
    with atomic_file(path) as fh:
        pending: list[str] = []
        size = 0
        for chunk in encoder.iterencode(doc):
            pending.append(chunk)
            size += len(chunk)
            if size >= _BLOCK:
                fh.write("".join(pending).encode("utf-8"))
                pending, size = [], 0
        pending.append("\n")
        fh.write("".join(pending).encode("utf-8"))


def write_lines(path: str, rows) -> None:
    """JSON Lines, one sorted-key object a line."""
    write_atomic(path, "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows))
