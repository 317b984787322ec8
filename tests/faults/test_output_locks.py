"""Every command that writes a file the user names takes the output's lock
(`safeio.output_lock`), so none replaces a file another is writing: while
a real `rbg run --out t.jsonl` waits on its server, `rbg batch export -o
t.jsonl`, `rbg items convert -o t.jsonl` and `rbg fit -o t.jsonl` are
refused with the run's pid, exit 2, and the run ends with every item in
its file (issue 25, item 2). The same for each writer against a process
holding the lock, and for a lock file planted as a symbolic link."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from conftest import GOOD

from faults.run_fixtures import RBG, SPEC, rbg, setup, write_jsonl

from .llm_fixtures import fault_server, write_items  # noqa: F401 (fault_server: a fixture)


def _wait_for(condition, what: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def test_while_a_run_writes_its_out_no_other_command_replaces_it(tmp_path, fault_server):
    gate = threading.Event()

    def answer(body):
        gate.wait(60)  # the run holds its --out until the test lets the server answer
        return json.dumps({"reason": "Looks fine.", "score": 4})

    server = fault_server(answer=answer)
    g = tmp_path / "g.rbg"
    g.write_text(GOOD, encoding="utf-8")
    items = write_items(tmp_path, 50)
    out = tmp_path / "t.jsonl"
    run = subprocess.Popen(
        [
            RBG,
            "run",
            g,
            items,
            "--out",
            out,
            "--base-url",
            server.url,
            "--model",
            "judge",
            "--cache",
            tmp_path / "c.sqlite",
            "--concurrency",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(lambda: server.chats, "the run's first call")
        (tmp_path / "fit").mkdir()
        fit_graph, fit_items = setup(tmp_path / "fit", n=12)
        src = write_jsonl(tmp_path / "src.jsonl", [{"id": "a", "input": "x", "response": "y"}])
        for args in (
            ("batch", "export", g, items, "-o", out, "--model", "judge"),
            ("items", "convert", src, "-o", out),
            ("fit", fit_graph, fit_items, "-o", out, "--folds", "0"),
        ):
            r = rbg(*args)
            assert r.exit_code == 2, (args, r.output)
            assert f"being written by another rbg process (pid {run.pid})" in r.output, r.output
    finally:
        gate.set()
        stdout, stderr = run.communicate(timeout=120)
    assert run.returncode == 0, stdout + stderr
    assert "ok 50" in stdout, stdout
    records = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert sorted(r["item"] for r in records) == sorted(f"i{k}" for k in range(50))


@pytest.fixture
def holder():
    """holder(target) -> the pid of another process holding target's lock."""
    procs = []

    def start(target) -> int:
        script = textwrap.dedent(
            f"""
            import sys
            from rubriclang.safeio import output_lock
            with output_lock({str(target)!r}):
                print("locked", flush=True)
                sys.stdin.read()
            """
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        procs.append(proc)
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline().strip() == "locked"
        return proc.pid

    yield start
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


def _writers(tmp_path):
    """(command line, the output it writes) for each writer that needs no server."""
    g, items = setup(tmp_path, n=12)
    llm = tmp_path / "llm.rbg"
    llm.write_text(GOOD, encoding="utf-8")
    src = write_jsonl(tmp_path / "src.jsonl", [{"id": "a", "input": "x", "response": "y"}])
    ugly = tmp_path / "ugly.rbg"
    ugly.write_text(GOOD.replace("\n\n", "\n"), encoding="utf-8")
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC, encoding="utf-8")
    url = ("--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    return {
        "run": (("run", g, items, "--out", tmp_path / "t.jsonl"), tmp_path / "t.jsonl"),
        "batch export": (
            ("batch", "export", llm, items, "-o", tmp_path / "r.jsonl", "--model", "j"),
            tmp_path / "r.jsonl",
        ),
        "items convert": (("items", "convert", src, "-o", tmp_path / "items2.jsonl"), tmp_path / "items2.jsonl"),
        "fit": (("fit", g, items, "-o", tmp_path / "fitted.rbg", "--folds", "0"), tmp_path / "fitted.rbg"),
        "fmt": (("fmt", ugly), ugly),
        "compile": (("compile", spec, "-o", tmp_path / "c.rbg", *url), tmp_path / "c.rbg"),
        "audit init": (("audit", "init", g, items, "-o", tmp_path / "audit.toml", "--force"), tmp_path / "audit.toml"),
        "compile --log": (
            ("compile", spec, "-o", tmp_path / "d.rbg", "--log", tmp_path / "d.log", *url),
            tmp_path / "d.log",
        ),
    }


WRITERS = ["run", "batch export", "items convert", "fit", "fmt", "compile", "compile --log", "audit init"]


@pytest.mark.parametrize("writer", WRITERS)
def test_every_writer_is_refused_an_output_another_process_writes(tmp_path, holder, writer):
    args, out = _writers(tmp_path)[writer]
    before = out.read_bytes() if out.exists() else None
    pid = holder(out)
    r = rbg(*args)
    assert r.exit_code == 2, r.output
    assert f"being written by another rbg process (pid {pid})" in r.output and "Traceback" not in r.output
    assert (out.read_bytes() if out.exists() else None) == before


@pytest.mark.parametrize("command", ["view --export", "compile --out-dir"])
def test_a_folder_another_process_writes_is_refused(tmp_path, holder, command):
    folder = tmp_path / "out"
    folder.mkdir()
    if command == "view --export":
        pytest.importorskip("starlette")
        g, _items = setup(tmp_path)
        args: tuple[object, ...] = ("view", g, "--export", folder)
    else:
        import tomllib

        specs = write_jsonl(tmp_path / "specs.jsonl", [{"id": "s1", **tomllib.loads(SPEC)}])
        args = ("compile", specs, "--out-dir", folder, "--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    pid = holder(folder)
    r = rbg(*args)
    assert r.exit_code == 2 and f"pid {pid}" in r.output, r.output
    assert os.listdir(folder) == [".rbg.lock"]  # the holder's


def test_a_lock_file_planted_as_a_link_never_truncates_what_it_names(tmp_path):
    g, items = setup(tmp_path)
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me\n", encoding="utf-8")
    out = tmp_path / "t.jsonl"
    os.symlink(victim, tmp_path / "t.jsonl.lock")
    r = rbg("run", g, items, "--out", out)
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert victim.read_text("utf-8") == "keep me\n"
    assert not out.exists()


def test_fmt_leaves_a_file_changed_while_it_was_formatted_as_it_is_now(tmp_path, monkeypatch):
    import rubriclang.cli.fmt as fmt_module

    ugly = tmp_path / "ugly.rbg"
    ugly.write_text(GOOD.replace("\n\n", "\n"), encoding="utf-8")
    edited = GOOD.replace("\n\n", "\n") + "# saved by an editor meanwhile\n"
    real = fmt_module.format_source

    def format_then_edit(text, path):
        result = real(text, path)
        ugly.write_text(edited, encoding="utf-8")  # another program saves the file now
        return result

    monkeypatch.setattr(fmt_module, "format_source", format_then_edit)
    r = rbg("fmt", ugly)
    assert r.exit_code == 2 and "changed while it was being formatted" in r.output, r.output
    assert ugly.read_text("utf-8") == edited


def test_the_next_writer_removes_what_a_killed_one_left_before_its_rename(tmp_path):
    _g, items = setup(tmp_path)
    out = tmp_path / "converted.jsonl"
    stale = tmp_path / ".converted.jsonl.0123456789ab.tmp"  # atomic_file's name for a temporary of `out`
    stale.write_text("half of an items file", encoding="utf-8")
    keep = tmp_path / ".converted.jsonl.notes.tmp"  # not one of its names: left alone
    keep.write_text("mine", encoding="utf-8")
    assert rbg("items", "convert", items, "-o", out).exit_code == 0
    assert not stale.exists() and keep.read_text("utf-8") == "mine"
