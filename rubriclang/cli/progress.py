"""Progress of a long command (`rbg run`, `eval`, `audit`, `batch import`) on
stderr, so that stdout stays the command's own output for scripts to read.

On a terminal one status line is redrawn in place. Elsewhere (a log, CI) a
full line is written every `every` items (a tenth of the total when it is
known) or every `INTERVAL_S` seconds, whichever comes first: a run of hours
is never silent, and its log stays short. A phase is named when it starts,
on a terminal too.

Nothing is silent while no item finishes either (a model starting, the first
item, a phase that counts nothing): on the real clock a background thread
calls `beat` every `BEAT_S` seconds, which redraws the terminal's line with
the time so far, and writes a log line once `INTERVAL_S` has passed since
the last.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

from rubriclang.safetext import redraw_line

INTERVAL_S = 10.0  # at most this long between two lines in a log (while items come)
REDRAW_S = 0.1  # how often a terminal's status line is redrawn
UNKNOWN_TOTAL_EVERY = 1000  # a line per this many items when the total is unknown
BEAT_S = 1.0  # how often the background thread looks for a silence to fill


class Progress:
    """A counter of `unit`s done, with the rate and the time left.

    `done` is what an earlier run finished (resumed): it counts towards the
    total, not towards the rate. `lines=False` keeps a log silent (for a
    machine-readable format); a terminal still gets its status line.
    With the real clock, a daemon thread calls `beat` until `done`; with a
    test's clock the test calls it.
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
        self._unit = unit  # a phase's own unit lasts for that phase
        self._drawn = False
        self._lock = threading.Lock()  # the thread's beats and the command's ticks write one stream
        self._restart(total, done)
        self._stopped = threading.Event()
        if clock is time.monotonic and (self.terminal or self.lines):
            threading.Thread(target=self._beating, name="rbg-progress", daemon=True).start()

    def _restart(self, total: int | None, done: int, unit: str | None = None) -> None:
        self.total, self.n, self._base = total, done, done
        self.unit = unit or self._unit
        self._started = self._last_line = self._last_draw = self._last_tick = self.clock()
        self._last_n = done
        self._first: tuple[float, int] | None = None  # (when, count) at the phase's first tick
        if self._every is not None:
            self.every = self._every
        else:
            self.every = max(1, -(-(total - done) // 10)) if total else UNKNOWN_TOTAL_EVERY

    def phase(self, name: str, total: int | None, unit: str | None = None) -> None:
        """A new phase with its own count (of `unit`s, by default the
        command's): a line naming it (after the command)."""
        with self._lock:
            self._end_line()
            self._restart(total, 0, unit)
            if self.lines or self.terminal:
                self._write(
                    f"{self.command}: {name}" + (f": {total} {self.unit} to make" if total is not None else "") + "\n"
                )

    def tick(self, n: int = 1) -> None:
        """`n` more units done."""
        with self._lock:
            self.n += n
            now = self._last_tick = self.clock()
            if self._first is None:
                self._first = (now, self.n)
            if self.terminal:
                if now - self._last_draw >= REDRAW_S or self.n == self.total:
                    self._draw(now)
            elif self.lines and (self.n - self._last_n >= self.every or now - self._last_line >= INTERVAL_S):
                self._line(now)

    def beat(self) -> None:
        """Fill a silence: the terminal's line redrawn when `BEAT_S` passed
        since it was last, a log line when `INTERVAL_S` did, items or not."""
        with self._lock:
            now = self.clock()
            if self.terminal and now - self._last_draw >= BEAT_S:
                self._draw(now)
            elif self.lines and now - self._last_line >= INTERVAL_S:
                self._line(now)

    def _beating(self) -> None:
        while not self._stopped.wait(BEAT_S):
            try:
                self.beat()
            except (OSError, ValueError):  # the stream is gone (a closed pipe): the command is ending
                return

    def _draw(self, now: float) -> None:
        self._last_draw = now
        self._drawn = True
        redraw_line(self.stream, "  " + self.status(now))
        self.stream.flush()

    def _line(self, now: float) -> None:
        self._last_line, self._last_n = now, self.n
        self._write("  " + self.status(now) + "\n")

    def status(self, now: float) -> str:
        """`120/1000 items, 4.2 items/s, about 3m29s left` (as far as known);
        before the first unit of a phase, the time it has taken so far
        (`0/1000 items, 0m12s so far`, or `0m12s so far` without a count).

        The rate is of the units done after the phase's first, over the time
        from the first to the last: units run side by side (64 calls in
        flight) all start at once, so the first to finish took the whole
        latency while the next ones come at the pipeline's pace; counting
        from the phase's start would charge that latency to every unit (one
        run said 3m25s left and ended 11 s later). Until a second unit comes
        at a later time, the rate is over the time since the start. Between
        two units the time left counts down from what it was at the last
        one, as the units in flight have been worked on since."""
        text = f"{self.n}/{self.total} {self.unit}" if self.total is not None else f"{self.n} {self.unit}"
        elapsed, counted, here = now - self._started, self._last_tick - self._started, self.n - self._base
        rate = _rate(self._first, self._last_tick, self.n) or (here / counted if counted > 0 and here > 0 else 0.0)
        if rate:
            text += f", {rate_text(rate)} {self.unit}/s"
            if self.total is not None and self.n < self.total:
                left = max(0.0, (self.total - self.n) / rate - (now - self._last_tick))
                text += f", about {_duration(int(left))} left"
        elif elapsed >= 1:  # nothing counted yet (a phase that counts nothing: its time alone)
            so_far = f"{_duration(int(elapsed))} so far"
            text = so_far if self.total is None and self.n == 0 else f"{text}, {so_far}"
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
        self._stopped.set()
        with self._lock:
            self._end_line()
            self.terminal = self.lines = False


def _rate(first: tuple[float, int] | None, last: float, n: int) -> float:
    """Units per second after the first tick (`first`: its time and count),
    0.0 until a later tick at a later time."""
    if first is None or last <= first[0] or n <= first[1]:
        return 0.0
    return (n - first[1]) / (last - first[0])


def _duration(seconds: int) -> str:
    return f"{seconds // 60}m{seconds % 60:02d}s"


def rate_text(rate: float) -> str:
    """A rate per second as people read it: `9,174`, `42.5`, `0.118` (three
    significant digits below a thousand, none dropped above)."""
    return f"{rate:,.0f}" if rate >= 1000 else f"{rate:.3g}"


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
