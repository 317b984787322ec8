"""Writing the audit's files atomically (see rubriclang.safeio), so an
interrupted audit never leaves half a file behind."""

from __future__ import annotations

import json

from rubriclang.safeio import write_atomic


def write_json(path: str, doc, indent: int | None = 1) -> None:
    """`doc` with sorted keys and no non-finite numbers."""
    write_atomic(path, json.dumps(doc, sort_keys=True, ensure_ascii=False, indent=indent, allow_nan=False) + "\n")


def write_lines(path: str, rows) -> None:
    """JSON Lines, one sorted-key object a line."""
    write_atomic(path, "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows))
