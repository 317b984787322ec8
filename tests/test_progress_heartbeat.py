"""No silence while nothing finishes (`Progress.beat`, which a thread calls
every second on the real clock): a model starting, a first item, a phase
that counts nothing still show what is going on, on a fake clock here."""

from __future__ import annotations

import io

from rubriclang.cli.progress import BEAT_S, INTERVAL_S, Progress


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_terminal_line_shows_the_time_so_far_before_the_first_item():
    clock, stream = Clock(), io.StringIO()
    progress = Progress("items", 3, stream=stream, terminal=True, clock=clock)
    progress.beat()
    assert stream.getvalue() == ""  # not yet a beat since it started
    clock.now += 65
    progress.beat()
    assert stream.getvalue() == "\r  0/3 items, 1m05s so far\x1b[K"


def test_a_log_gets_a_line_each_interval_even_when_no_item_finishes():
    clock, stream = Clock(), io.StringIO()
    progress = Progress("judgments", 40, stream=stream, terminal=False, clock=clock)
    clock.now += INTERVAL_S - BEAT_S
    progress.beat()
    assert stream.getvalue() == ""
    clock.now += BEAT_S
    progress.beat()
    clock.now += BEAT_S
    progress.beat()  # the next line waits for the next interval
    assert stream.getvalue() == f"  0/40 judgments, 0m{INTERVAL_S:02.0f}s so far\n"


def test_a_phase_is_named_on_a_terminal_too_and_nothing_is_drawn_after_the_end():
    clock, stream = Clock(), io.StringIO()
    progress = Progress("judgments", stream=stream, terminal=True, clock=clock, command="rbg audit")
    progress.phase("making the variants", None)
    clock.now += 2
    progress.beat()
    progress.done()
    clock.now += 60
    progress.beat()
    assert stream.getvalue() == "rbg audit: making the variants\n\r  0m02s so far\x1b[K\n"


def test_between_two_items_the_time_left_counts_down_instead_of_growing():
    clock, stream = Clock(), io.StringIO()
    progress = Progress("items", 4, stream=stream, terminal=True, clock=clock)
    clock.now += 10
    progress.tick()  # 1 of 4 in 10 s: 30 s left
    clock.now += 5
    progress.beat()  # the items in flight have had 5 s more
    clock.now += 40
    progress.beat()  # later than expected: not a negative time
    assert stream.getvalue().split("\r")[1:] == [
        "  1/4 items, 0.1 items/s, about 0m30s left\x1b[K",
        "  1/4 items, 0.1 items/s, about 0m25s left\x1b[K",
        "  1/4 items, 0.1 items/s, about 0m00s left\x1b[K",
    ]
