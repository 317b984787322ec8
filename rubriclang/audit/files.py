"""Writing the audit's files atomically (a temporary file renamed into
place), so an interrupted audit never leaves half a file behind."""

from __future__ import annotations

import json
import os
import tempfile


def write_text(path: str, text: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_json(path: str, doc, indent: int | None = 1) -> None:
    """`doc` with sorted keys and no non-finite numbers."""
    write_text(path, json.dumps(doc, sort_keys=True, ensure_ascii=False, indent=indent, allow_nan=False) + "\n")


def write_lines(path: str, rows) -> None:
    """JSON Lines, one sorted-key object a line."""
    write_text(path, "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows))
