"""`loads`: `json.loads`, at less cost on the JSON this project reads most
(a server's answer, a cached response), which is UTF-8 with nothing around
its value.

`json.loads` costs about twice its scanner on a short text: it detects the
encoding of bytes, and matches whitespace before and after the value. Here
the scanner reads the text directly, and whatever it does not read whole
(whitespace around the value, another encoding, bad JSON) goes to
`json.loads` itself, so the value, and any error, is the same.
"""

from __future__ import annotations

import json
import json.scanner
from collections.abc import Callable
from typing import Any

from rubriclang.plainlibs import plain

# typeshed types make_scanner's argument as the class, not the decoder it is given.
_SCAN: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]
_PLAIN = plain("json")
_NOT_PLAIN_UTF8 = (b"\xef", b"\xfe", b"\xff", b"\x00")  # a BOM, or UTF-16/32 (`json.detect_encoding`)


def loads(data: str | bytes) -> Any:
    """What `json.loads(data)` returns, or the error it raises."""
    if _PLAIN:
        return json.loads(data)
    if type(data) is bytes:
        if data[:1] in _NOT_PLAIN_UTF8 or data[1:2] == b"\x00":
            return json.loads(data)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:  # json.loads lets surrogates through: it says what to do
            return json.loads(data)
    elif type(data) is str:
        text = data
    else:
        return json.loads(data)
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        return json.loads(data)
    if end != len(text):
        return json.loads(data)
    return value
