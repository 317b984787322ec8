"""What a person sees on a terminal: `make demo`'s commands run in a real
pseudo-terminal show the progress printer's own codes as they are (the
status line redrawn in place, never a literal `\\u001b[K`), and data's
control characters escaped (an item id holding ESC reaches the screen as
`\\u001b`); on the embedded model no phase (its start, the first item) is
silent for more than 10 s."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
# What the program writes as text for a control character it escaped.
ESCAPED_CONTROL = re.compile(rb"\\u00(?:[01][0-9a-f]|7f|[89][0-9a-f])")


def on_terminal(command: str, cwd: Path, timeout: float = 600) -> tuple[bytes, int]:
    """(everything `command` showed on a pseudo-terminal, its exit status)."""
    shown, status, _ = watched(command, cwd, timeout)
    return shown, status


def watched(command: str, cwd: Path, timeout: float = 600) -> tuple[bytes, int, float]:
    """`on_terminal`'s, and the longest time in seconds the screen got nothing."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        ["bash", "-c", command], cwd=cwd, stdin=slave, stdout=slave, stderr=slave, env={**os.environ, "TERM": "xterm"}
    )
    os.close(slave)
    shown = bytearray()
    last = time.monotonic()
    deadline, silence = last + timeout, 0.0
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal closed: the command is done
                break
            if not chunk:
                break
            shown += chunk
            now = time.monotonic()
            silence, last = max(silence, now - last), now
        elif proc.poll() is not None:
            break
    os.close(master)
    return bytes(shown), proc.wait(timeout=max(1.0, deadline - time.monotonic())), silence


def demo_commands(out: Path, embedded: bool) -> list[str]:
    """The `rbg` commands of the Makefile's `demo` target, as a shell runs
    them; the embedded model's run only when `embedded`."""
    text = (REPO / "Makefile").read_text().replace("\\\n", " ")
    body = text.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    commands = []
    for line in body.splitlines()[1:]:
        line = line.strip()
        if not line.startswith("$(BIN)/rbg") or ("examples/mt_bench" in line) != embedded:
            continue
        commands.append(line.replace("$(BIN)/", f"{BIN}/").replace("$(OUT)", str(out)).replace("$$", "$"))
    return commands


def test_a_run_redraws_its_status_line_with_raw_codes_and_escapes_none_of_its_own(tmp_path):
    shown, status = on_terminal(
        f"{BIN}/rbg run examples/gsm8k/rubric.rbg examples/gsm8k/items.jsonl --out {tmp_path}/t.jsonl", REPO
    )
    assert status == 0, shown
    assert b"\r  450/450 items" in shown and b"\x1b[K" in shown
    assert ESCAPED_CONTROL.search(shown) is None, shown
    assert b"Judged 450 items" in shown


def test_an_item_id_holding_escape_codes_reaches_the_terminal_escaped(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text(
        '{"id": "red\\u001b[31m1", "input": "1 + 1?", "response": "2"}\n'
        '{"id": "ok", "input": "1 + 1?", "response": "2", "reference": "#### 2"}\n'
    )
    shown, status = on_terminal(f"{BIN}/rbg run examples/gsm8k/rubric.rbg {items} --out {tmp_path}/t.jsonl", REPO)
    assert status == 1, shown  # one item failed
    assert b"red\\u001b[31m1" in shown  # named in the failure reasons, escaped
    assert b"\x1b[31m" not in shown


def test_make_demo_shows_no_escaped_control_sequence(tmp_path):
    commands = demo_commands(tmp_path, embedded=False)
    assert len(commands) >= 5  # check, fmt, run, replay, eval
    for command in commands:
        shown, status = on_terminal(command, REPO)
        assert status == 0, (command, shown)
        assert ESCAPED_CONTROL.search(shown) is None, (command, shown)


@pytest.mark.slow
def test_make_demo_on_the_embedded_model_is_never_silent_for_10_s_and_escapes_none_of_its_codes(tmp_path):
    pytest.importorskip("xllamacpp")
    (command,) = demo_commands(tmp_path, embedded=True)
    command = command.replace(" --out ", " --no-cache --out ", 1)  # every item a model call, not a cache hit
    shown, status, silence = watched(command, REPO)
    assert status == 0, shown
    assert ESCAPED_CONTROL.search(shown) is None, shown
    assert b"rbg: starting the embedded model" in shown and b"\x1b[K" in shown
    assert silence <= 10, (silence, shown)


def test_fit_names_each_of_its_phases_on_a_terminal_and_closes_the_line_before_its_report(tmp_path):
    from evaluation.test_fit import GRAPH, _items, _write

    graph = tmp_path / "g.rbg"
    graph.write_text(GRAPH)
    items = _write(tmp_path / "items.jsonl", _items())
    shown, status = on_terminal(
        f"{BIN}/rbg fit {graph} {items} -o {tmp_path}/fitted.rbg --folds 2 --max-iter 15", REPO, timeout=300
    )
    assert status == 0, shown
    text = shown.decode()
    phases = [line for line in text.split("\r\n") if line.startswith("rbg fit: ")]
    assert phases == [
        "rbg fit: judging 80 items with 1 graph(s): 80 items to make",
        "rbg fit: fitting 3 numbers on 54 dev items (seed 0)",
        "rbg fit: cross-validation: 2 folds over the 54 dev items",
        "rbg fit: the held-out split: 26 items",
    ]
    assert ESCAPED_CONTROL.search(shown) is None
    report = text.split("rbg fit: the held-out split: 26 items\r\n", 1)[1]
    assert "\x1b[K" not in report.split("\r\n", 1)[1]  # the report starts on a line of its own
