"""Reading JSON Lines with errors that name the file and line."""

from __future__ import annotations

import json
from typing import Any, Callable, Iterator


def read_jsonl(path: str, error: Callable[[str, str], Exception], what: str = "JSON") -> Iterator[tuple[str, Any]]:
    """(`path:line`, decoded value) for each non-blank line, lazily.

    A line that is not JSON raises `error(where, message)`, so each caller
    reports it with its own exception type; `what` names the line's kind in
    the message ("malformed trace line: ...")."""
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{n}"
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise error(where, f"malformed {what}: {exc.msg} (column {exc.colno})") from None
            yield where, value
