"""Positions in the source text: offsets, comments, and what lies between tokens.

The AST gives spans for nodes but not for punctuation, and the formatter needs
to know where brackets are and which lines are blank, so it reads those from
the text itself. The text has already parsed, so between two tokens there is
only whitespace, commas and comments.
"""

from __future__ import annotations

import bisect

import attrs

from rubriclang.diagnostics.span import Span
from rubriclang.syntax import ast

_BETWEEN_TOKENS = frozenset(" \t\f\r\n,")


@attrs.frozen
class Note:
    """A comment with its place: `at` is its offset, `own_line` says nothing
    but indentation precedes it on its line."""

    text: str
    at: int
    line: int
    own_line: bool


class SourceMap:
    """Offsets, blank lines and comment positions of one source text."""

    def __init__(self, text: str, comments: tuple[ast.Comment, ...]):
        self.text = text
        self._lines = text.split("\n")
        starts = [0]
        for line in self._lines[:-1]:
            starts.append(starts[-1] + len(line) + 1)
        self._line_starts = starts
        notes = []
        self._comment_end: dict[int, int] = {}
        for c in comments:
            at = self.offset(c.span.line, c.span.column)
            before = text[starts[c.span.line - 1] : at]
            notes.append(Note(c.text, at, c.span.line, not before.strip()))
            self._comment_end[at] = self.offset(c.span.end_line, c.span.end_column)
        self.notes = tuple(sorted(notes, key=lambda n: n.at))
        self._note_offsets = [n.at for n in self.notes]

    def offset(self, line: int, column: int) -> int:
        return self._line_starts[line - 1] + column - 1

    def start(self, span: Span | None) -> int | None:
        return None if span is None else self.offset(span.line, span.column)

    def end(self, span: Span | None) -> int | None:
        return None if span is None else self.offset(span.end_line, span.end_column)

    def next_code(self, at: int | None) -> int | None:
        """The offset of the first character at or after `at` that is not
        whitespace, a comma or part of a comment."""
        if at is None:
            return None
        text = self.text
        while at < len(text):
            if text[at] in _BETWEEN_TOKENS:
                at += 1
            elif at in self._comment_end:
                at = self._comment_end[at]
            else:
                break
        return at

    def has_note_inside(self, lo: int | None, hi: int | None) -> bool:
        """Whether a comment starts strictly between offsets `lo` and `hi`."""
        if lo is None or hi is None:
            return False
        i = bisect.bisect_right(self._note_offsets, lo)
        return i < len(self._note_offsets) and self._note_offsets[i] < hi

    def blank_between(self, above: int | None, below: int | None) -> bool:
        """Whether a blank line lies strictly between 1-based lines `above` and `below`."""
        if above is None or below is None:
            return False
        return any(not self._lines[i].strip() for i in range(above, below - 1))
