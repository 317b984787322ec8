"""Reading JSON Lines with errors that name the file and line."""

from __future__ import annotations

import json
import math
from typing import Any, Callable, Iterator


def _no_constant(name: str):
    raise ValueError(f"`{name}` is not a JSON number")


def _finite_float(text: str) -> float:
    x = float(text)
    if math.isinf(x):
        raise ValueError(f"`{text}` is too large for a number")
    return x


def read_jsonl(path: str, error: Callable[[str, str], Exception], what: str = "JSON") -> Iterator[tuple[str, Any]]:
    """(`path:line`, decoded value) for each non-blank line, lazily.

    A line that is not JSON raises `error(where, message)`, so each caller
    reports it with its own exception type; `what` names the line's kind in
    the message ("malformed trace line: ..."); so does a line that is not
    UTF-8. `NaN`, `Infinity` and numbers
    too large for a float (1e400) are errors too: no reader downstream can
    use them, and traces cannot hold them."""
    with open(path, "rb") as fh:
        for n, raw in enumerate(fh, 1):
            where = f"{path}:{n}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise error(where, f"not UTF-8 text (byte 0x{raw[exc.start]:02x}, byte {exc.start + 1} of the line)") from None
            if not line.strip():
                continue
            try:
                value = json.loads(line, parse_constant=_no_constant, parse_float=_finite_float)
            except json.JSONDecodeError as exc:
                raise error(where, f"malformed {what}: {exc.msg} (column {exc.colno})") from None
            except ValueError as exc:
                raise error(where, f"malformed {what}: {exc}") from None
            yield where, value
