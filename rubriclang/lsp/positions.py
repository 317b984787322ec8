"""Positions: the parser's (line, column) and the protocol's (line, character).

The parser counts 1-based lines and 1-based columns in code points, after
dropping a leading byte order mark. The protocol counts 0-based lines and
0-based characters in the code units of the negotiated encoding: UTF-16 by
default, so an emoji is two characters, while UTF-8 counts bytes and UTF-32
code points. Lines end at `\\n`; a `\\r` before it is not part of the line.
"""

from __future__ import annotations

import bisect

import attrs

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def units(ch: str, encoding: str) -> int:
    """How many code units of `encoding` one code point takes."""
    if encoding == UTF16:
        return 2 if ord(ch) > 0xFFFF else 1
    if encoding == UTF8:
        return len(ch.encode("utf-8", "surrogatepass"))
    if encoding == UTF32:
        return 1
    raise ValueError(f"unknown position encoding {encoding!r}")


@attrs.frozen
class Position:
    """A protocol position: 0-based line, 0-based character in code units."""

    line: int
    character: int


class LineIndex:
    """Converts positions for one text, in one encoding."""

    def __init__(self, text: str, encoding: str = UTF16):
        units("a", encoding)  # reject an unknown encoding now, not on first use
        self.encoding = encoding
        self.text = text
        # A byte order mark is a character to the editor but not to the parser.
        self._bom = 1 if text.startswith("\ufeff") else 0
        self._starts = [0, *(i + 1 for i, ch in enumerate(text) if ch == "\n")]

    def line_text(self, line: int) -> str:
        """The text of a 0-based line, without its line ending."""
        start = self._starts[line]
        if line + 1 == len(self._starts):
            return self.text[start:]
        text = self.text[start : self._starts[line + 1] - 1]
        return text[:-1] if text.endswith("\r") else text

    # -- offsets (code-point indices into the text) ----------------------------

    def offset(self, position: Position) -> int:
        """The text index of a protocol position. A line past the end is the
        end of the text; a character past the line's end is its end; one in
        the middle of a code point is that code point's start."""
        if position.line >= len(self._starts):
            return len(self.text)
        line = self.line_text(max(position.line, 0))
        start = self._starts[max(position.line, 0)]
        budget = max(position.character, 0)
        for i, ch in enumerate(line):
            budget -= units(ch, self.encoding)
            if budget < 0:
                return start + i
        return start + len(line)

    def position_at(self, offset: int) -> Position:
        """The protocol position of a text index (clamped to the text)."""
        offset = min(max(offset, 0), len(self.text))
        line = bisect.bisect_right(self._starts, offset) - 1
        start = self._starts[line]
        # An index on the `\r` of a `\r\n` is the end of the line.
        prefix = self.text[start:offset][: len(self.line_text(line))]
        return Position(line, sum(units(ch, self.encoding) for ch in prefix))

    # -- the parser's positions -------------------------------------------------

    def offset_of(self, line: int, column: int) -> int:
        """The text index of the parser's 1-based (line, column)."""
        if line > len(self._starts):
            return len(self.text)
        shift = self._bom if line == 1 else 0
        start = self._starts[line - 1] + shift
        return start + min(max(column - 1, 0), len(self.line_text(line - 1)) - shift)
