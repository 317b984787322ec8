"""A JSON file's top-level object read a value at a time, its large arrays
an element at a time, so that a document of a few hundred megabytes (a
sealed suite of a million items) is never decoded whole: `scan` keeps the
small values and the byte span of each element of the named arrays, and
`Elements` reads an element back from its span when it is needed.

The file is read forward in blocks; each value is decoded by the standard
library's decoder (`json.JSONDecoder.raw_decode`), so what is accepted, and
the values it gives, are `json.load`'s.
"""

from __future__ import annotations

import array
import codecs
import errno
import json
import os
import re
from collections.abc import Iterator, Sequence
from typing import Any

from rubriclang.safeio import open_regular

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_BLOCK = 1 << 20  # bytes read at a time


_NUMBER = frozenset("0123456789.eE+-")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class ScanError(ValueError):
    """The file is not one JSON object (`where` is a byte offset)."""


class _Reader:
    """A file's text read forward, with the byte offset of the position."""

    def __init__(self, fh):
        self.fh = fh
        self.buf = ""
        self.pos = 0
        self.offset = 0  # the byte offset of buf[pos] in the file
        self.eof = False
        self._utf8 = codecs.getincrementaldecoder("utf-8")()

    def _more(self) -> bool:
        """Read a block; False at the end of the file."""
        if self.eof:
            return False
        block = self.fh.read(_BLOCK)
        self.eof = not block
        self.buf = self.buf[self.pos :] + self._utf8.decode(block, final=self.eof)
        self.pos = 0
        return not self.eof

    def peek(self) -> str:
        """The next character that is not white space ("" at the end)."""
        while True:
            end = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]  # matches the empty string
            self.offset += end - self.pos  # white space is ASCII: a byte a character
            self.pos = end
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more():
                return ""

    def expect(self, chars: str) -> str:
        """The next character, which must be one of `chars`."""
        c = self.peek()
        if not c or c not in chars:
            wanted = " or ".join(f"`{x}`" for x in chars)
            raise ScanError(f"expected {wanted} at byte {self.offset}, found {f'`{c}`' if c else 'the end'}")
        self.pos += 1
        self.offset += 1
        return c

    def value(self) -> tuple[Any, int, int]:
        """The next JSON value, its byte offset and its size in bytes."""
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if not self._more():
                    raise ScanError(
                        f"{exc.msg} at byte {self.offset + len(self.buf[self.pos : exc.pos].encode())}"
                    ) from None
                continue
            # A number at the end of the block may go on in the next one
            # (`0.` decodes as 0 until the `5` of `0.5` is read).
            cut = end == len(self.buf) or (_is_number(value) and self.buf[end] in _NUMBER)
            if not cut or not self._more():
                break
        start, size = self.offset, len(self.buf[self.pos : end].encode("utf-8"))
        self.offset += size
        self.pos = end
        return value, start, size


def scan(path: str, arrays: tuple[str, ...]) -> tuple[dict, dict[str, array.array]]:
    """(the top-level object's values but the `arrays`, each array's element
    spans: offset and size in bytes, two numbers an element). Each element is
    decoded once, to be checked, and not kept. Raises ScanError, OSError."""
    spans: dict[str, array.array] = {}
    head: dict = {}
    with open_regular(path, "rb") as fh:
        r = _Reader(fh)
        r.expect("{")
        if r.peek() == "}":
            r.expect("}")
        else:
            while True:
                key, at, _ = r.value()
                if not isinstance(key, str):
                    raise ScanError(f"expected a key (a string) at byte {at}")
                r.expect(":")
                if key in arrays and r.peek() == "[":
                    spans[key] = _array(r)
                    head.pop(key, None)
                else:
                    head[key] = r.value()[0]
                    spans.pop(key, None)
                if r.expect(",}") == "}":
                    break
        if r.peek():
            raise ScanError(f"extra data at byte {r.offset}")
    return head, spans


def _stamp(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _array(r: _Reader) -> array.array:
    spans = array.array("q")
    r.expect("[")
    if r.peek() == "]":
        r.expect("]")
        return spans
    while True:
        _, start, size = r.value()
        spans.extend((start, size))
        if r.expect(",]") == "]":
            return spans


class Elements(Sequence):
    """The elements of an array of a JSON file (spans from `scan`), each
    decoded from the file when it is read; iterating reads them in order.
    A file changed since (another size, time or inode) is an OSError
    (ESTALE), never an element read from the wrong place."""

    def __init__(self, path: str, spans: array.array):
        self.path = path
        self.spans = spans
        self._stamp = _stamp(os.stat(path))

    def __len__(self) -> int:
        return len(self.spans) // 2

    def __getitem__(self, n):  # no slices: an element at a time
        if not -len(self) <= n < len(self):
            raise IndexError(n)
        with self._open() as fh:
            return self._read(fh, n % len(self))

    def __iter__(self) -> Iterator[Any]:
        with self._open() as fh:
            for n in range(len(self)):
                yield self._read(fh, n)

    def _open(self):
        fh = open_regular(self.path, "rb")
        if _stamp(os.fstat(fh.fileno())) != self._stamp:
            fh.close()
            raise OSError(errno.ESTALE, "the file changed since it was read", self.path)
        return fh

    def _read(self, fh, n: int) -> Any:
        fh.seek(self.spans[2 * n])
        return json.loads(fh.read(self.spans[2 * n + 1]))
