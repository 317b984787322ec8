"""One JSON Lines reader for items, value tables, traces and batch results.

The file is read once, line by line, in constant memory (so a pipe such as
`/dev/stdin` or `<(...)` works, and a huge file costs one line at a time).
Every problem is an error naming `path:line`, raised as the caller's own
`LocatedError` subclass: a line that is not JSON, not UTF-8, longer than
`MAX_LINE_BYTES`, nested deeper than `MAX_DEPTH`, holding a non-finite number
(`NaN`, `Infinity`, `1e400`) or a string with an unpaired surrogate (which no
UTF-8 output could hold), or, in what users write (`read_jsonl`: items,
value tables, specs, batch results), an object with one key twice (JSON
readers differ in which value they keep, so one of them would be lost
unseen). A UTF-8 byte order mark at the start is skipped, as it is for
`.rbg` files.

A last line with no newline is "torn" when a killed writer left it. Each
kind of file reads it by one of three policies, chosen where it is read:

- What users write (`read_jsonl`: items, value tables, specs, batch
  results; also the audit's `validation.jsonl`, written whole): it is a line
  like any other, since editors often leave the newline off; one that is
  not JSON is an error at `path:line`.
- What rubriclang appends to (`JsonLines(keep_torn=True)`: traces, the
  audit's `runs.jsonl`): it is not decoded but kept in `torn`, for the
  caller to report or cut; every complete line must read.
- What rubriclang records only to save work later (`readable_prefix`: the
  compiler's logs): the records before the first line that is torn or
  cannot be read, or none for a file that cannot be opened; the rest reads
  as not done, so it is done again.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

from rubriclang.errors import decode_utf8

MAX_DEPTH = 200  # arrays and objects inside each other; no real record comes close
MAX_LINE_BYTES = 64 << 20
_BOM = b"\xef\xbb\xbf"
# A `\uD800`-`\uDFFF` escape: only then can a decoded string hold a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
# A JSON string (possibly unterminated), or a bracket.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]')

ErrorType = Callable[..., Exception]


class _NotFinite(Exception):
    pass


def _finite(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise _NotFinite(text)
    return x


def _constant(text: str) -> NoReturn:
    raise _NotFinite(text)


class DuplicateKey(Exception):
    """An object of the JSON text holds `key` twice."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An `object_pairs_hook` that refuses a key given twice (DuplicateKey)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return obj


def duplicate_message(what: str, exc: DuplicateKey) -> tuple[str, str]:
    """(message, hint) of a DuplicateKey in a `what`."""
    return (
        f"malformed {what}: the key `{exc.key}` is given twice in one object",
        "keep one of them: which value a JSON reader keeps differs, so the other would be lost unseen",
    )


# Built once: json.loads with hooks would build a decoder per line. Checking
# keys costs a call per object: traces, which only rubriclang writes, skip it.
_DECODER = json.JSONDecoder(parse_constant=_constant, parse_float=_finite)
_UNIQUE_DECODER = json.JSONDecoder(parse_constant=_constant, parse_float=_finite, object_pairs_hook=unique_object)


def read_jsonl(path: str, error: ErrorType, what: str = "JSON") -> Iterator[tuple[str, Any]]:
    """(`path:line`, decoded value) for each non-blank line, lazily.

    A bad line raises `error(where, message, hint)`, so each caller reports
    it with its own exception type; `what` names the line's kind in the
    message ("malformed trace line: ..."). A file that cannot be opened or
    read raises `error(path, ...)`. A key given twice in one object is an
    error."""
    return iter(JsonLines(path, error, what, unique_keys=True))


class _Unreadable(Exception):
    pass


def _unreadable(*_: Any) -> Exception:
    return _Unreadable()


def readable_prefix(path: str) -> list[Any]:
    """The decoded lines of `path` before the first one that is torn or
    cannot be read (the third policy above); [] for a file that cannot be
    opened."""
    out: list[Any] = []
    try:
        for _, value in JsonLines(path, _unreadable, keep_torn=True):
            out.append(value)
    except _Unreadable:
        pass
    return out


class JsonLines:
    """A JSON Lines file as an iterable of (`path:line`, value), read once.

    With `keep_torn`, a last line with no newline (what a killed writer
    leaves) is not decoded but kept in `torn`; `end` is then the byte offset
    just after the last complete line, where an appender may cut the file,
    and `count` the number of complete lines (blank ones too). With
    `unique_keys`, an object with a key given twice is an error."""

    def __init__(
        self, path: str, error: ErrorType, what: str = "JSON", keep_torn: bool = False, unique_keys: bool = False
    ):
        self.path, self.error, self.what, self.keep_torn = path, error, what, keep_torn
        self._decoder = _UNIQUE_DECODER if unique_keys else _DECODER
        self.end = self.count = 0
        self.torn: bytes = b""

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        path, error = self.path, self.error
        try:
            fh = open(path, "rb")  # noqa: SIM115 (closed by the `with` below, once open succeeded)
        except OSError as exc:
            raise error(path, f"cannot read it: {exc.strerror or exc}") from None
        with fh:
            n = 0
            while True:
                try:
                    raw = fh.readline(MAX_LINE_BYTES + 1)
                except OSError as exc:
                    raise error(f"{path}:{n + 1}", f"cannot read it: {exc.strerror or exc}") from None
                if not raw:
                    return
                n += 1
                where = f"{path}:{n}"
                complete = raw.endswith(b"\n")
                if not complete and len(raw) > MAX_LINE_BYTES:
                    raise error(
                        where, f"the line is longer than {MAX_LINE_BYTES >> 20} MiB", "is this a JSON Lines file?"
                    )
                if not complete and self.keep_torn:
                    self.torn = raw
                    return
                self.end += len(raw)
                self.count = n
                line = raw[len(_BOM) :] if n == 1 and raw.startswith(_BOM) else raw
                if line.isspace() or not line:
                    continue
                yield where, self._decode(line, where, n)

    def _decode(self, line: bytes, where: str, n: int) -> Any:
        error, what = self.error, self.what
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            decode_utf8(line, self.path, error, n)  # raises, naming the line and column
        if text.count("[") + text.count("{") > MAX_DEPTH:
            _check_depth(text, where, error)
        try:
            value = self._decoder.decode(text)
        except DuplicateKey as exc:
            raise error(where, *duplicate_message(what, exc)) from None
        except json.JSONDecodeError as exc:
            raise error(where, f"malformed {what}: {exc.msg} (column {exc.colno})") from None
        except _NotFinite as exc:
            raise error(
                where,
                f"malformed {what}: `{exc}` is not a finite number",
                "write a finite number, or null for no value",
            ) from None
        except ValueError:  # an integer with more digits than Python converts
            raise error(
                where, f"malformed {what}: a number with too many digits to read", "write it as a string"
            ) from None
        if "\\u" in text and _SURROGATE_ESCAPE.search(text):
            _check_strings(value, where, error)
        return value


def _check_depth(text: str, where: str, error: ErrorType) -> None:
    """Refuse nesting deeper than MAX_DEPTH before the parser recurses into it."""
    # Strings are matched whole, so brackets inside them are not counted.
    depth = top = 0
    for m in _TOKENS.finditer(text):
        c = m.group()
        if c == "[" or c == "{":
            depth += 1
            if depth > top:
                top = depth
                if top > MAX_DEPTH:
                    raise error(where, f"the value is nested more than {MAX_DEPTH} levels deep", "flatten the data")
        elif c == "]" or c == "}":
            depth -= 1


def _check_strings(value: Any, where: str, error: ErrorType) -> None:
    """Refuse a string (or key) holding an unpaired surrogate such as `\\ud800`."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError as exc:
                code = ord(v[exc.start])
                raise error(
                    where,
                    f"a string holds an unpaired surrogate `\\u{code:04x}`, which is not a character",
                    "escape a character outside the BMP as a surrogate pair, or write it as UTF-8",
                ) from None
