"""`rbg run --out`: an existing file is checked to be a trace of this graph
before a byte of it changes; special files and missing folders are refused;
a write error stops the run with one clear message, keeping what was
written; a resumed run counts what the file holds, and `--retry-errors`
judges the failed items again without risking the file."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
from typing import Any

import pytest

from faults.run_fixtures import GRAPH, RBG, assert_clean_error, rbg, rbg_process, setup, traces, write_jsonl
from rubriclang.interp.items import ItemError
from rubriclang.interp.trace import RECORD_START, OutputError, TraceWriter, scan_trace


def _other_graph_trace(tmp_path) -> bytes:
    other = tmp_path / "other"
    other.mkdir()
    _, items = setup(other)
    (other / "g.rbg").write_text(
        GRAPH.replace("ordinal[1, 5] }", "ordinal[1, 5], quantize = floor }"), encoding="utf-8"
    )
    assert rbg("run", other / "g.rbg", items, "--out", other / "t.jsonl").exit_code == 0
    return (other / "t.jsonl").read_bytes()


NOT_OURS = {
    "two text lines": (b"hello\nworld", 1),
    "one text line": (b"hello\n", 1),
    "one text line, no newline": (b"hello", 1),
    "a JSON object": (b'{"a": 1}\n', 1),
    "a torn JSON object": (b'{"a": 1', 1),
    "notes after blank lines": (b"\n\nnotes\n", 3),
    "a JSON array": (b"[1, 2, 3]\n", 1),
}


@pytest.mark.parametrize("content, line", list(NOT_OURS.values()), ids=list(NOT_OURS))
def test_an_out_file_that_is_not_a_trace_is_refused_and_left_byte_identical(tmp_path, content, line):
    g, items = setup(tmp_path)
    out = tmp_path / "notes.txt"
    out.write_bytes(content)
    assert_clean_error(rbg("run", g, items, "--out", out), f"{out}:{line}")
    assert out.read_bytes() == content


@pytest.mark.parametrize("tail", [b"", b'{"candidates":["resp', b"hello"])
def test_a_trace_of_another_graph_is_refused_and_left_byte_identical(tmp_path, tail):
    g, items = setup(tmp_path)
    content = _other_graph_trace(tmp_path) + tail
    out = tmp_path / "t.jsonl"
    out.write_bytes(content)
    r = rbg("run", g, items, "--out", out)
    assert_clean_error(r, f"{out}:1")
    assert "another version of the graph" in r.output
    assert out.read_bytes() == content


@pytest.mark.parametrize("junk", [b"hello\n", b"hello", b'{"a": 1}\n', b"[1]"])
def test_a_trace_followed_by_something_else_is_refused_and_left_byte_identical(tmp_path, junk):
    g, items, out = traces(tmp_path)
    content = out.read_bytes() + junk
    out.write_bytes(content)
    assert_clean_error(rbg("run", g, items, "--out", out), f"{out}:7")
    assert out.read_bytes() == content


def test_an_empty_out_file_is_a_trace_of_nothing_yet(tmp_path):
    g, items = setup(tmp_path)
    out = tmp_path / "t.jsonl"
    out.write_bytes(b"")
    assert rbg("run", g, items, "--out", out).exit_code == 0
    assert len(out.read_bytes().splitlines()) == 6


def test_an_out_with_a_line_too_long_is_refused_without_reading_it_all(tmp_path, monkeypatch):
    import rubriclang.jsonl

    monkeypatch.setattr(rubriclang.jsonl, "MAX_LINE_BYTES", 4096)
    g, items = setup(tmp_path)
    out = tmp_path / "zeros"
    out.write_bytes(b"\0" * 100_000)
    assert_clean_error(rbg("run", g, items, "--out", out), f"{out}:1: the line is longer than")
    assert out.read_bytes() == b"\0" * 100_000


# --- special files, folders -------------------------------------------------


@pytest.mark.parametrize("device", ["/dev/full", "/dev/null", "/dev/zero"])
def test_a_device_as_out_is_refused(tmp_path, device):
    if not os.path.exists(device):
        pytest.skip(f"no {device} here")
    g, items = setup(tmp_path)
    r = rbg_process("run", g, items, "--out", device)
    assert_clean_error(r, f"{device}: --out must be a regular file")


def test_a_named_pipe_as_out_is_refused_without_blocking(tmp_path):
    g, items = setup(tmp_path)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    r = rbg_process("run", g, items, "--out", fifo)
    assert_clean_error(r, f"{fifo}: --out must be a regular file, and this is a pipe")


def test_a_folder_as_out_is_refused(tmp_path):
    g, items = setup(tmp_path)
    r = rbg("run", g, items, "--out", tmp_path)
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "folder" in r.output or "directory" in r.output


def test_standard_output_as_out_is_refused_whether_a_pipe_or_a_file(tmp_path):
    g, items = setup(tmp_path)
    r = rbg_process("run", g, items, "--out", "/dev/stdout")  # stdout is a pipe here
    assert_clean_error(r, "/dev/stdout: --out must be a regular file, and this is a pipe")
    redirected = tmp_path / "stdout.txt"
    with redirected.open("wb") as fh:
        r = subprocess.run(
            [RBG, "run", str(g), str(items), "--out", "/dev/stdout"],
            stdout=fh,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert r.returncode == 2 and "--out is this command's standard output" in r.stderr
    assert redirected.read_text() == ""


def test_a_missing_out_folder_is_a_clear_error(tmp_path):
    g, items = setup(tmp_path)
    out = tmp_path / "no" / "such" / "t.jsonl"
    assert_clean_error(rbg("run", g, items, "--out", out), f"the folder `{out.parent}` does not exist")
    assert not out.parent.exists()


def test_an_out_folder_that_is_a_file_is_a_clear_error(tmp_path):
    g, items = setup(tmp_path)
    (tmp_path / "file").write_text("x")
    r = rbg("run", g, items, "--out", tmp_path / "file" / "t.jsonl")
    assert_clean_error(r, f"{tmp_path / 'file'}` is not a folder")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_out_folder_or_file_is_a_clear_error(tmp_path):
    g, items = setup(tmp_path)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        assert_clean_error(rbg("run", g, items, "--out", locked / "t.jsonl"), "is not writable")
    finally:
        locked.chmod(0o700)
    out = tmp_path / "ro.jsonl"
    out.write_bytes(b"")
    out.chmod(0o400)
    assert_clean_error(rbg("run", g, items, "--out", out), "not readable and writable")


# --- write errors -----------------------------------------------------------


def _failing_writes(monkeypatch, after: int, code: int):
    """Make the trace writer's os.write fail, as a full disk would: the
    first `after` records go through, the next is written in part, then
    every write fails with `code`."""
    real = os.write
    state: dict[str, Any] = {"records": 0, "fd": None}

    def write(fd, data):
        if state["fd"] is None and bytes(data[: len(RECORD_START)]) == RECORD_START:
            state["fd"] = fd
        if fd != state["fd"]:
            return real(fd, data)
        if state["records"] >= after:
            if state["records"] == after:
                state["records"] += 1
                return real(fd, data[:25])
            raise OSError(code, os.strerror(code))
        state["records"] += 1
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO, errno.EDQUOT])
def test_a_write_error_stops_the_run_with_one_clear_message_and_resume_is_byte_identical(tmp_path, monkeypatch, code):
    g, items = setup(tmp_path, n=10)
    full = tmp_path / "full.jsonl"
    assert rbg("run", g, items, "--out", full).exit_code == 0
    out = tmp_path / "t.jsonl"
    with monkeypatch.context() as m:
        _failing_writes(m, after=4, code=code)
        r = rbg("run", g, items, "--out", out)
    assert_clean_error(r, f"{out}: cannot write it: {os.strerror(code)}")
    assert r.output.count(os.strerror(code)) == 1
    # What was written is kept: four whole lines, and the torn fifth.
    assert out.read_bytes().count(b"\n") == 4
    assert not out.read_bytes().endswith(b"\n")
    assert full.read_bytes().startswith(out.read_bytes())
    r = rbg("run", g, items, "--out", out)
    assert r.exit_code == 0, r.output
    assert out.read_bytes() == full.read_bytes()


def test_a_writer_refuses_a_file_that_changed_since_it_was_scanned(tmp_path):
    _, _, out = traces(tmp_path)
    ghash = json.loads(out.read_text().splitlines()[0])["graph"]["hash"]
    state = scan_trace(str(out), ghash)
    with out.open("ab") as fh:
        fh.write(b"more")
    with pytest.raises(OutputError, match="changed while it was read"):
        TraceWriter(str(out), state)


# --- torn last lines ----------------------------------------------------------


@pytest.mark.parametrize("cut", [1, 30, -1])
def test_a_torn_last_line_is_cut_in_place_and_the_resume_is_byte_identical(tmp_path, cut):
    g, items, out = traces(tmp_path)
    full = out.read_bytes()
    last = full.rstrip(b"\n").rfind(b"\n") + 1
    torn = full[: last + cut] if cut > 0 else full[:-1]  # -1: the record whole, its newline lost
    out.write_bytes(torn)
    inode = out.stat().st_ino
    r = rbg("run", g, items, "--out", out, "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["judged"] == 1
    assert out.read_bytes() == full
    assert out.stat().st_ino == inode  # cut in place, not rewritten


def test_an_unusable_out_is_refused_before_any_judging(tmp_path):
    g, items = setup(tmp_path)
    out = tmp_path / "notes.txt"
    out.write_text("keep me\n")
    r = rbg("run", g, items, "--out", out, "--format", "json")
    assert r.exit_code == 2
    assert "judged" not in r.stdout  # no summary: nothing ran


# --- resumed runs count what the file holds -----------------------------------


def test_a_resumed_run_counts_the_earlier_results_and_fails_when_they_failed(tmp_path):
    g, items, out = traces(tmp_path, failing={1, 4})
    r = rbg("run", g, items, "--out", out, "--format", "json")
    assert r.exit_code == 1, r.output
    summary = json.loads(r.stdout)
    assert summary["judged"] == 0 and summary["resumed"] == 6
    assert summary["earlier"] == {"ok": 4, "abstain": 0, "error": 2}
    r = rbg("run", g, items, "--out", out)
    assert r.exit_code == 1
    assert f"earlier in {out}: ok 4   abstain 0   error 2" in r.output
    assert "--retry-errors" in r.output


def test_a_resumed_run_of_clean_traces_exits_zero(tmp_path):
    g, items, out = traces(tmp_path)
    r = rbg("run", g, items, "--out", out, "--format", "json")
    assert r.exit_code == 0
    assert json.loads(r.stdout)["earlier"] == {"ok": 6, "abstain": 0, "error": 0}


def _annotations_for(tmp_path, ids):
    return write_jsonl(tmp_path / "fix.jsonl", [{"item": f"i{i}", "key": "q", "value": 1 + i % 5} for i in ids])


def test_retry_errors_judges_the_failed_items_again(tmp_path):
    g, items, out = traces(tmp_path, failing={1, 4})
    fix = _annotations_for(tmp_path, [1, 4])
    # Without --retry-errors, the failed items stay failed.
    assert rbg("run", g, items, "--out", out, "--annotations", fix).exit_code == 1
    before = out.read_bytes().splitlines(keepends=True)
    r = rbg("run", g, items, "--out", out, "--annotations", fix, "--retry-errors", "--format", "json")
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert summary["retried"] == 2 and summary["judged"] == 2
    assert summary["earlier"] == {"ok": 4, "abstain": 0, "error": 0}
    after = out.read_bytes().splitlines(keepends=True)
    # One line per item; the kept lines unchanged and in order, the retried ones after them.
    assert [json.loads(x)["item"] for x in after] == ["i0", "i2", "i3", "i5", "i1", "i4"]
    assert after[:4] == [before[i] for i in (0, 2, 3, 5)]
    assert all(json.loads(x)["readout"]["status"] == "ok" for x in after)
    assert rbg("replay", g, out).exit_code == 0
    assert rbg("run", g, items, "--out", out).exit_code == 0


def test_retry_errors_that_fail_again_still_exit_one(tmp_path):
    g, items, out = traces(tmp_path, failing={2})
    r = rbg("run", g, items, "--out", out, "--retry-errors", "--format", "json")
    assert r.exit_code == 1
    assert json.loads(r.stdout)["error"] == 1
    assert len(out.read_bytes().splitlines()) == 6


def test_retry_errors_with_nothing_failed_leaves_the_file_alone(tmp_path):
    g, items, out = traces(tmp_path)
    before, inode = out.read_bytes(), out.stat().st_ino
    assert rbg("run", g, items, "--out", out, "--retry-errors").exit_code == 0
    assert out.read_bytes() == before and out.stat().st_ino == inode


def test_retry_errors_keeps_the_file_permissions(tmp_path):
    g, items, out = traces(tmp_path, failing={3})
    out.chmod(0o640)
    assert (
        rbg("run", g, items, "--out", out, "--retry-errors", "--annotations", _annotations_for(tmp_path, [3])).exit_code
        == 0
    )
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


def test_a_new_trace_file_follows_the_umask(tmp_path):
    g, items = setup(tmp_path)
    old = os.umask(0o027)
    try:
        assert rbg("run", g, items, "--out", tmp_path / "t.jsonl").exit_code == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "t.jsonl").stat().st_mode) == 0o640


@pytest.mark.parametrize("failing_call", ["replace", "fsync"])
def test_a_retry_rewrite_that_fails_leaves_the_file_whole_and_no_temporary_behind(tmp_path, monkeypatch, failing_call):
    g, items, out = traces(tmp_path, failing={1, 4})
    before = out.read_bytes()

    def fail(*args, **kw):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    with monkeypatch.context() as m:
        m.setattr(os, failing_call, fail)
        r = rbg("run", g, items, "--out", out, "--retry-errors", "--annotations", _annotations_for(tmp_path, [1, 4]))
    assert_clean_error(r, f"{out}: cannot rewrite it")
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fix.jsonl", "g.rbg", "items.jsonl", "t.jsonl"]


def test_a_resume_scan_rejects_what_it_cannot_resume(tmp_path):
    _, _, out = traces(tmp_path)
    with pytest.raises(ItemError, match="another version of the graph"):
        scan_trace(str(out), "sha256:" + "0" * 64)


def test_retry_errors_keeps_the_failed_lines_of_items_no_longer_in_the_items_file(tmp_path):
    g, items, out = traces(tmp_path, failing={1, 4})
    fewer = write_jsonl(
        tmp_path / "fewer.jsonl", [json.loads(x) for x in items.read_text().splitlines() if '"i4"' not in x]
    )
    fix = _annotations_for(tmp_path, [1])
    r = rbg("run", g, fewer, "--out", out, "--retry-errors", "--annotations", fix, "--format", "json")
    assert json.loads(r.stdout)["retried"] == 1
    records = {json.loads(x)["item"]: json.loads(x) for x in out.read_text().splitlines()}
    assert sorted(records) == [f"i{i}" for i in range(6)]
    assert records["i1"]["readout"]["status"] == "ok" and records["i4"]["readout"]["status"] == "error"
    assert r.exit_code == 1  # i4's error is still in the file


def test_retry_errors_refuses_items_from_a_pipe_before_changing_anything(tmp_path):
    g, items, out = traces(tmp_path, failing={1})
    before = out.read_bytes()
    r = rbg_process("run", g, "/dev/stdin", "--out", out, "--retry-errors", input=items.read_text())  # a pipe
    assert_clean_error(r, "--retry-errors reads the items twice")
    assert out.read_bytes() == before


def test_a_retry_killed_at_any_moment_loses_no_line_and_resumes(tmp_path):
    import signal
    import time

    n = 4000
    g, items = setup(tmp_path, n=n, failing=set(range(0, n, 2)))
    out = tmp_path / "t.jsonl"
    assert rbg_process("run", g, items, "--out", out).returncode == 1
    original = out.read_bytes()
    kept = [x for x in original.splitlines(keepends=True) if b'"status":"ok"' in x]
    fix = _annotations_for(tmp_path, range(0, n, 2))
    inode = out.stat().st_ino
    proc = subprocess.Popen(
        [RBG, "run", str(g), str(items), "--out", str(out), "--retry-errors", "--annotations", str(fix)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    # Kill it just after the rewrite, while the retried items are appended.
    while time.monotonic() < deadline and proc.poll() is None and out.stat().st_ino == inode:
        time.sleep(0.001)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    if out.stat().st_ino == inode:  # killed before the rename: the file as it was
        assert out.read_bytes() == original
    else:  # after it: the finished lines, in order, then what was retried so far
        assert out.read_bytes().splitlines(keepends=True)[: len(kept)] == kept
    r = rbg_process("run", g, items, "--out", out, "--retry-errors", "--annotations", fix, "--format", "json")
    assert r.returncode == 0, r.stderr
    records = [json.loads(x) for x in out.read_text().splitlines()]
    assert sorted(rec["item"] for rec in records) == sorted(f"i{i}" for i in range(n))
    assert all(rec["readout"]["status"] == "ok" for rec in records)
