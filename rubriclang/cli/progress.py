"""Progress of a long command (`rbg run`, `eval`, `audit`, `batch import`) on
stderr, so that stdout stays the command's own output for scripts to read.

On a terminal one status line is redrawn in place. Elsewhere (a log, CI) a
full line is written every `every` items (a tenth of the total when it is
known) or every `INTERVAL_S` seconds, whichever comes first: a run of hours
is never silent, and its log stays short.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from rubriclang.safetext import redraw_line

INTERVAL_S = 10.0  # at most this long between two lines in a log (while items come)
REDRAW_S = 0.1  # how often a terminal's status line is redrawn
UNKNOWN_TOTAL_EVERY = 1000  # a line per this many items when the total is unknown


class Progress:
    """A counter of `unit`s done, with the rate and the time left.

    `done` is what an earlier run finished (resumed): it counts towards the
    total, not towards the rate. `lines=False` keeps a log silent (for a
    machine-readable format); a terminal still gets its status line.
    """

    def __init__(
        self,
        unit: str,
        total: int | None = None,
        *,
        done: int = 0,
        lines: bool = True,
        stream: TextIO | None = None,
        terminal: bool | None = None,
        every: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        command: str = "rbg",
    ):
        self.stream = stream if stream is not None else sys.stderr
        self.terminal = _isatty(self.stream) if terminal is None else terminal
        self.lines = lines and not self.terminal
        self.unit, self.clock, self._every, self.command = unit, clock, every, command
        self._drawn = False
        self._restart(total, done)

    def _restart(self, total: int | None, done: int) -> None:
        self.total, self.n, self._base = total, done, done
        self._started = self._last_line = self._last_draw = self.clock()
        self._last_n = done
        if self._every is not None:
            self.every = self._every
        else:
            self.every = max(1, -(-(total - done) // 10)) if total else UNKNOWN_TOTAL_EVERY

    def phase(self, name: str, total: int | None) -> None:
        """A new phase with its own count: a line naming it (after the command) in a log."""
        self._end_line()
        self._restart(total, 0)
        if self.lines:
            self._write(
                f"{self.command}: {name}" + (f": {total} {self.unit} to make" if total is not None else "") + "\n"
            )

    def tick(self, n: int = 1) -> None:
        """`n` more units done."""
        self.n += n
        now = self.clock()
        if self.terminal:
            if now - self._last_draw >= REDRAW_S or self.n == self.total:
                self._last_draw = now
                self._drawn = True
                redraw_line(self.stream, "  " + self.status(now))
                self.stream.flush()
        elif self.lines and (self.n - self._last_n >= self.every or now - self._last_line >= INTERVAL_S):
            self._last_line, self._last_n = now, self.n
            self._write("  " + self.status(now) + "\n")

    def status(self, now: float) -> str:
        """`120/1000 items, 4.2 items/s, about 3m29s left` (as far as known)."""
        text = f"{self.n}/{self.total} {self.unit}" if self.total is not None else f"{self.n} {self.unit}"
        elapsed, here = now - self._started, self.n - self._base
        if elapsed > 0 and here > 0:
            rate = here / elapsed
            text += f", {rate_text(rate)} {self.unit}/s"
            if self.total is not None and self.n < self.total:
                left = int((self.total - self.n) / rate)
                text += f", about {left // 60}m{left % 60:02d}s left"
        return text

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def _end_line(self) -> None:
        if self._drawn:
            self._write("\n")
            self._drawn = False

    def done(self) -> None:
        """The end: the terminal's status line is closed; nothing more is shown."""
        self._end_line()
        self.terminal = self.lines = False


def rate_text(rate: float) -> str:
    """A rate per second as people read it: `9,174`, `42.5`, `0.118` (three
    significant digits below a thousand, none dropped above)."""
    return f"{rate:,.0f}" if rate >= 1000 else f"{rate:.3g}"


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
