"""Progress lines of long commands (`cli.progress`), on a fake clock."""

from __future__ import annotations

import io

from rubriclang.cli.progress import INTERVAL_S, Progress, rate_text
from rubriclang.cli.run import _table


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _log(**kw):
    clock, stream = Clock(), io.StringIO()
    return Progress("items", stream=stream, terminal=False, clock=clock, **kw), clock, stream


def test_a_log_gets_a_line_per_tenth_of_the_total_with_rate_and_time_left():
    progress, clock, stream = _log(total=100)
    for _ in range(20):
        clock.now += 0.5
        progress.tick()
    assert stream.getvalue().splitlines() == [
        "  10/100 items, 2 items/s, about 0m45s left",
        "  20/100 items, 2 items/s, about 0m40s left",
    ]


def test_a_log_gets_a_line_every_interval_when_items_come_slowly():
    progress, clock, stream = _log(total=1000)
    clock.now += 2
    progress.tick()
    clock.now += INTERVAL_S - 3
    progress.tick()
    assert stream.getvalue() == ""
    clock.now += 1
    progress.tick()
    assert stream.getvalue() == "  3/1000 items, 0.25 items/s, about 66m28s left\n"


def test_the_time_left_does_not_charge_the_latency_of_units_in_flight_to_every_unit():
    # 100 calls in flight for 10 s, then one done every 0.1 s: the 899 left take 90 s, not 178 s.
    progress, clock, stream = _log(total=1000, every=100)
    clock.now += 10
    for _ in range(101):
        progress.tick()
        clock.now += 0.1
    assert stream.getvalue().splitlines()[-1] == "  101/1000 items, 10 items/s, about 1m29s left"


def test_a_first_unit_alone_gives_a_rate_over_the_time_since_the_start():
    progress, clock, stream = _log(total=10, every=1)
    clock.now += 4
    progress.tick()
    assert stream.getvalue() == "  1/10 items, 0.25 items/s, about 0m36s left\n"


def test_a_phase_may_count_its_own_unit():
    progress, clock, stream = _log(total=10, every=1)
    progress.phase("making the variants", 4, unit="variants")
    clock.now += 1
    progress.tick()
    progress.phase("judging", 2)
    clock.now += 1
    progress.tick()
    assert stream.getvalue().splitlines() == [
        "rbg: making the variants: 4 variants to make",
        "  1/4 variants, 1 variants/s, about 0m03s left",
        "rbg: judging: 2 items to make",
        "  1/2 items, 1 items/s, about 0m01s left",
    ]


def test_resumed_items_count_towards_the_total_but_not_the_rate():
    progress, clock, stream = _log(total=100, done=90, every=5)
    for _ in range(5):
        clock.now += 1
        progress.tick()
    assert stream.getvalue() == "  95/100 items, 1 items/s, about 0m05s left\n"


def test_an_unknown_total_shows_the_count_and_rate_only():
    progress, clock, stream = _log(every=3)
    for _ in range(3):
        clock.now += 1
        progress.tick()
    assert stream.getvalue() == "  3 items, 1 items/s\n"


def test_a_machine_readable_format_keeps_the_log_silent():
    progress, clock, stream = _log(total=10, lines=False)
    progress.phase("judging", 10)
    for _ in range(10):
        clock.now += INTERVAL_S
        progress.tick()
    assert stream.getvalue() == ""


def test_a_terminal_gets_one_line_redrawn_and_closed_at_the_end():
    clock, stream = Clock(), io.StringIO()
    progress = Progress("judgments", 4, stream=stream, terminal=True, clock=clock)
    for _ in range(4):
        clock.now += 1
        progress.tick()
    progress.done()
    progress.tick()  # after the end: nothing more
    out = stream.getvalue()
    assert out.count("\n") == 1 and out.endswith("4/4 judgments, 1 judgments/s\x1b[K\n")
    assert "\r  1/4 judgments, 1 judgments/s, about 0m03s left\x1b[K" in out


def test_each_phase_starts_its_own_count_and_names_itself_after_the_command():
    clock, stream = Clock(), io.StringIO()
    progress = Progress("judgments", stream=stream, terminal=False, clock=clock, command="rbg audit")
    progress.phase("making the variants", None)
    progress.phase("judging", 20)
    for _ in range(2):
        clock.now += 1
        progress.tick()
    assert stream.getvalue().splitlines() == [
        "rbg audit: making the variants",
        "rbg audit: judging: 20 judgments to make",
        "  2/20 judgments, 1 judgments/s, about 0m18s left",
    ]


# -- the commands: progress on stderr, stdout kept for their output ---------------

RULE_GRAPH = """rubric lengths { version = 1 }
contract { scale = bool }
criterion terse: bool = rule.length { under = 3 }
sink terse
readout pointwise { output = bool }
"""


def _progress_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("  ") and " items" in line and "/" in line]


def test_run_into_a_log_writes_progress_lines_on_stderr_and_keeps_json_stdout_clean(tmp_path):
    import json

    from click.testing import CliRunner

    from rubriclang.cli.main import cli

    graph = tmp_path / "g.rbg"
    graph.write_text(RULE_GRAPH)
    items = tmp_path / "items.jsonl"
    items.write_text(
        "".join(json.dumps({"id": f"i{n}", "input": "q", "response": "a b c d"}) + "\n" for n in range(30))
    )
    text = CliRunner().invoke(cli, ["run", str(graph), str(items), "--out", str(tmp_path / "a.jsonl")])
    assert text.exit_code == 0, text.output
    lines = _progress_lines(text.stderr)
    assert [line.split(" items")[0].strip() for line in lines] == [f"{n}/30" for n in range(3, 31, 3)]
    assert _progress_lines(text.stdout) == []

    machine = CliRunner().invoke(
        cli, ["run", str(graph), str(items), "--out", str(tmp_path / "b.jsonl"), "--format", "json"]
    )
    assert machine.exit_code == 0, machine.output
    assert json.loads(machine.stdout)["judged"] == 30
    assert _progress_lines(machine.stderr) == []


def test_rates_keep_three_significant_digits_and_group_thousands():
    assert [rate_text(x) for x in (9174.4, 1000.0, 42.46, 2.0, 0.11806, 0.0595)] == [
        "9,174",
        "1,000",
        "42.5",
        "2",
        "0.118",
        "0.0595",
    ]


def test_a_slow_run_summary_shows_its_rate_not_zero():
    summary = {"judged": 3, "graph": "g", "seconds": 25.41, "resumed": 0, "ok": 3, "abstain": 0, "error": 0}
    first = _table(summary | {"decisions": {}, "retried": 0, "rejudged": 0, "out": "t.jsonl"}).splitlines()[0]
    assert first == "Judged 3 items with `g` in 25.41 s (0.118 items/s)"


def test_a_run_of_one_item_says_item():
    summary = {"judged": 1, "graph": "g", "seconds": 0.5, "resumed": 0, "ok": 1, "abstain": 0, "error": 0}
    first = _table(summary | {"decisions": {}, "retried": 0, "rejudged": 0, "out": "t.jsonl"}).splitlines()[0]
    assert first == "Judged 1 item with `g` in 0.50 s (2 items/s)"
