"""kill -9 at spread-out moments of each whole-file writer: whenever the
kill lands (starting, reading, computing, writing, renaming), the output is
byte for byte the previous one or byte for byte the one an uninterrupted
run writes, never a mix or a prefix (issue 25, items 3 and 16). The
moments are spread over each command's run time; the assertion holds at
any of them, so the test does not depend on where each kill lands."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import GOOD

from faults.run_fixtures import RBG, rbg, setup, write_jsonl

from .llm_fixtures import fault_server  # noqa: F401 (a fixture)

OLD = b'{"an": "earlier output"}\n' * 100

# Each runs its command 10 times, a minute in all: CI runs them, `make test` does not.
pytestmark = pytest.mark.slow


def _commands(tmp_path: Path, out: Path) -> dict[str, tuple]:
    g, items = setup(tmp_path, n=40)
    big = write_jsonl(
        tmp_path / "big.jsonl",
        ({"id": f"r{k}", "input": f"question {k} " * 20, "response": f"answer {k} " * 40} for k in range(20_000)),
    )
    llm = tmp_path / "llm.rbg"
    llm.write_text(GOOD, encoding="utf-8")
    return {
        "items convert": ("items", "convert", big, "-o", out),
        "batch export": ("batch", "export", llm, big, "-o", out, "--model", "judge"),
        "fit": ("fit", g, items, "-o", out, "--folds", "2"),
    }


@pytest.mark.parametrize("name", ["items convert", "batch export", "fit"])
def test_a_kill_at_any_moment_leaves_the_old_output_or_the_whole_new_one(tmp_path, name):
    out = tmp_path / "out.txt"
    args = [str(a) for a in _commands(tmp_path, out)[name]]
    r = rbg(*args)
    assert r.exit_code == 0, r.output
    new = out.read_bytes()
    started = time.monotonic()
    out.write_bytes(OLD)
    assert subprocess.run([RBG, *args], capture_output=True, timeout=300).returncode == 0
    whole = time.monotonic() - started  # the command's own run time, start-up included
    seen = set()
    for k in range(8):
        out.write_bytes(OLD)
        proc = subprocess.Popen([RBG, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(whole * k / 7)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        now = out.read_bytes()
        assert now in (OLD, new), f"killed after {whole * k / 7:.2f} s: {len(now)} bytes, neither old nor new"
        seen.add("old" if now == OLD else "new")
    assert seen  # which ones depends on the machine; both are whole
    # What a kill left before its rename is removed by the next writer of the output.
    assert rbg(*args).exit_code == 0
    assert out.read_bytes() == new
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.txt.")] == []


def test_a_killed_compile_leaves_a_log_of_whole_records(tmp_path, fault_server):
    from llm.test_compile_many import scripted

    from faults.test_full_disk import SPEC

    server = fault_server(answer=scripted({"helpful": "good"}, delay=0.3))
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC, encoding="utf-8")
    log = tmp_path / "c.compile.jsonl"
    log.write_text('{"event": "an older log"}\n', encoding="utf-8")
    args = [RBG, "compile", str(spec), "-o", str(tmp_path / "c.rbg"), "--base-url", server.url, "--no-cache"]
    for delay in (0.2, 0.5, 0.8, 1.2):
        proc = subprocess.Popen([*args, "--model", "judge"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        text = log.read_text("utf-8")
        assert text.endswith("\n")
        assert all(json.loads(line) for line in text.splitlines())  # never a torn record
