"""Text safe to show: no control character from data reaches a terminal or
a text report.

An item id, a response, a model's reply or a rubric's string can hold ESC,
other C0 and C1 controls, bidirectional overrides, invisible characters or
lone surrogates; printed raw they would move the cursor, retitle or clear
the terminal, reorder or hide text, or fail to encode. `printable` writes
each as a `\\uXXXX` escape, keeping the newlines and tabs that lay text out;
in JSON output such a character can only stand inside a string, where the
escape means exactly it, so JSON on standard output stays exact. The `rbg`
command guards its standard output and error with it
(`guard_standard_streams`), so every message, summary and listing is
covered whatever it quotes: through the guard, every character is data.
The program's own terminal codes never pass through it, so it has no list
of exceptions that data could forge: the progress printer draws its status
line with `redraw_line` (the carriage return and clear-to-end-of-line codes
written beside the escaped text, never inside it), and renderers that
colour their output sanitize the data they paint and write `unguarded`, as
does `rbg fmt -`, whose output is the user's own file. Data files (traces,
caches, JSON Lines) keep the exact text.
"""

from __future__ import annotations

import io
import re
import sys
import unicodedata
from typing import TextIO

# What a source excerpt shows for an unsafe character: one column wide, so
# the caret line stays under the span.
REPLACEMENT = "\ufffd"
# Besides controls (C0, DEL, C1) and surrogates: the format characters that
# reorder or hide text. Others (zero-width joiners, Arabic number signs,
# emoji tags) are part of the text they appear in, and harmless to show.
_HIDDEN = frozenset("\u061c\u200b\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2066\u2067\u2068\u2069\ufeff")


def is_unsafe(ch: str) -> bool:
    """Whether the character is never shown raw."""
    return ch in _HIDDEN or unicodedata.category(ch) in ("Cc", "Cs")


def _escape(ch: str) -> str:
    return f"\\u{ord(ch):04x}"


def printable(text: str, keep: str = "\n\t") -> str:
    """`text` with every unsafe character not in `keep` written as `\\uXXXX`."""
    probe = text
    for ch in keep:
        probe = probe.replace(ch, "")
    if probe.isprintable():  # the common case, at C speed
        return text
    return "".join(_escape(ch) if ch not in keep and is_unsafe(ch) else ch for ch in text)


# Characters of a `quoted` part of a message shown at most (and of a source
# line an excerpt shows): a quoted name or value may be megabytes.
EXCERPT_WIDTH = 120
ELLIPSIS = "..."
_LONG_QUOTE = re.compile(f"`([^`\\n]{{{EXCERPT_WIDTH + 1},}})`")


def capped(text: str) -> str:
    """`text` with every `quoted` part longer than `EXCERPT_WIDTH` cut to
    that width, ending in an ellipsis (a name or a value may be megabytes)."""
    return _LONG_QUOTE.sub(lambda m: f"`{m[1][: EXCERPT_WIDTH - len(ELLIPSIS)]}{ELLIPSIS}`", text)


def one_line(text: str) -> str:
    """`text` for a place that must stay on one line (a heading, a label, a
    table cell): newlines and tabs are escaped too."""
    return printable(text, keep="")


# The status line's own codes: back to the line's start, and clear what an
# earlier, longer status left after the new one.
_LINE_START = "\r"
_CLEAR_TO_END = "\x1b[K"


class _Guarded(io.TextIOBase):
    """A text stream that writes `printable` text to another: every
    character written here is taken as data."""

    def __init__(self, stream: TextIO) -> None:
        self.raw_stream = stream

    def write(self, s: str) -> int:
        if not isinstance(s, str):  # click probes for binary streams with b""
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        self.raw_stream.write(printable(s))
        return len(s)

    def flush(self) -> None:
        self.raw_stream.flush()

    def isatty(self) -> bool:
        return self.raw_stream.isatty()

    def fileno(self) -> int:
        return self.raw_stream.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str | None:  # type: ignore[override]  # the wrapped stream's, read-only as on a real stream
        encoding: str | None = getattr(self.raw_stream, "encoding", None)
        return encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]  # the wrapped stream's, read-only as on a real stream
        errors: str | None = getattr(self.raw_stream, "errors", None)
        return errors


def guard_standard_streams() -> None:
    """Route `sys.stdout` and `sys.stderr` through `printable` (once)."""
    if not isinstance(sys.stdout, _Guarded):
        sys.stdout = _Guarded(sys.stdout)
    if not isinstance(sys.stderr, _Guarded):
        sys.stderr = _Guarded(sys.stderr)


def redraw_line(stream: TextIO | _Guarded, text: str) -> None:
    """Draw `text` as a terminal's status line in place of the one before:
    `text` is escaped as data (on one line), the codes that redraw it are
    written as they are."""
    unguarded(stream).write(_LINE_START + one_line(text) + _CLEAR_TO_END)


def unguarded(stream: TextIO | _Guarded) -> TextIO:
    """The stream under a guard, for output that carries its own colour codes
    and has sanitized its data already."""
    return stream.raw_stream if isinstance(stream, _Guarded) else stream
