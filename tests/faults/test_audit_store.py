"""The audit's files survive kills, full disks and unwritable folders:
every rewrite is atomic (rubriclang.safeio), a torn last line is cut in
place, and a write error is one clear message, after which a rerun resumes
to byte-identical files."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap

import pytest
from audit.helpers import GSM8K_JUDGE, gsm8k_items
from click.testing import CliRunner

from rubriclang import safeio
from rubriclang.audit.runner import SCHEMA, RunsError, RunStore
from rubriclang.cli.main import cli

BODY = 'repeats = 2\noperators = ["typo_noise", "partial_completion"]\n[options.typo_noise]\nfields = ["response"]\n'


def _rec(item: str, status: str) -> bytes:
    rec = {"schema": SCHEMA, "item": item, "variant": None, "repeat": 0, "trace": {"readout": {"status": status}}}
    return (json.dumps(rec, sort_keys=True) + "\n").encode()


def _runs(tmp_path, n=50):
    path = tmp_path / "runs.jsonl"
    data = b"".join(_rec(f"q{i}", "error" if i % 3 == 0 else "ok") for i in range(n))
    path.write_bytes(data)
    return path, data


def _suite(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(r) + "\n" for r in gsm8k_items()), encoding="utf-8")
    path = tmp_path / "suite.toml"
    path.write_text(f'judge = "{GSM8K_JUDGE}"\nitems = "{items}"\n{BODY}', encoding="utf-8")
    return path


def _audit(*args):
    return CliRunner().invoke(cli, ["audit", *map(str, args)], catch_exceptions=False)


def test_a_failed_rewrite_for_retry_errors_keeps_every_original_byte(tmp_path, monkeypatch):
    path, data = _runs(tmp_path)

    def boom(src, dst):
        raise OSError(errno.EIO, "simulated crash before the rename")

    monkeypatch.setattr(os, "replace", boom)  # the os safeio calls
    with pytest.raises(OSError):
        RunStore(str(path)).load(drop_failed=True)
    assert path.read_bytes() == data
    assert os.listdir(tmp_path) == ["runs.jsonl"]  # no temporary file left behind


@pytest.mark.parametrize("hook", ["write", "fsync", "replace"])
def test_a_kill_at_any_point_of_the_rewrite_leaves_the_old_or_the_new_file(tmp_path, hook):
    path, data = _runs(tmp_path)
    script = textwrap.dedent(
        f"""
        import os, signal
        from rubriclang import safeio
        from rubriclang.audit.runner import RunStore

        def die(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)

        if {hook!r} == "write":
            real = safeio._temporary
            def temporary(*a):
                fd, name = real(*a)
                os.write(fd, b"half a file")
                die()
            safeio._temporary = temporary
        else:
            setattr(safeio.os, {hook!r}, die)
        RunStore({str(path)!r}).load(drop_failed=True)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True)
    assert proc.returncode == -9, proc.stderr.decode()
    assert path.read_bytes() == data


def test_retry_errors_rewrite_drops_only_the_failed_lines_and_follows_the_file_mode(tmp_path):
    path, data = _runs(tmp_path, n=6)
    os.chmod(path, 0o640)
    done = RunStore(str(path)).load(drop_failed=True)
    assert sorted(k[0] for k in done) == ["q1", "q2", "q4", "q5"]
    assert path.read_bytes() == b"".join(line for line in data.splitlines(keepends=True) if b'"ok"' in line)
    assert os.stat(path).st_mode & 0o777 == 0o640


def test_a_torn_last_line_is_cut_in_place_keeping_every_complete_line(tmp_path):
    path, data = _runs(tmp_path, n=5)
    path.write_bytes(data + b'{"schema": "rubriclang.au')
    inode = os.stat(path).st_ino
    done = RunStore(str(path)).load()
    assert len(done) == 5
    assert path.read_bytes() == data
    assert os.stat(path).st_ino == inode  # truncated, not rewritten


def test_cut_torn_line_reads_only_the_tail_and_handles_every_shape(tmp_path):
    path = tmp_path / "f"
    for before, after in [
        (b"", b""),
        (b"a\n", b"a\n"),
        (b"torn", b""),
        (b"a\nb\ntorn", b"a\nb\n"),
        (b"x" * 200_000 + b"\n" + b"y" * 100_000, b"x" * 200_000 + b"\n"),
    ]:
        path.write_bytes(before)
        assert safeio.cut_torn_line(str(path)) == len(before) - len(after)
        assert path.read_bytes() == after


@pytest.mark.parametrize(
    "line",
    [
        b'{"schema": "rubriclang.audit.run/1", "item": "a", "variant": null, "repeat": 0}\n',
        b'{"schema": "rubriclang.audit.run/1", "item": "a", "variant": null, "repeat": 0, "trace": null}\n',
        b'{"schema": "rubriclang.audit.run/1", "item": 3, "variant": null, "repeat": 0, "trace": {"readout": {}}}\n',
        b'{"schema": "rubriclang.audit.run/1", "item": "a", "variant": null, "repeat": "0", "trace": {"readout": '
        b"{}}}\n",
        b"\xff\xfe not utf-8\n",
    ],
)
def test_a_runs_record_of_the_wrong_shape_is_an_error_naming_its_line(tmp_path, line):
    path, data = _runs(tmp_path, n=2)
    path.write_bytes(data + line)
    with pytest.raises(RunsError, match=r"runs\.jsonl:3: "):
        RunStore(str(path)).load(drop_failed=True)
    assert path.read_bytes() == data + line


def test_audit_outputs_follow_the_umask(tmp_path):
    suite = _suite(tmp_path)
    old = os.umask(0o027)
    try:
        assert _audit(suite, "--out", tmp_path / "out").exit_code == 0
    finally:
        os.umask(old)
    modes = {name: os.stat(tmp_path / "out" / name).st_mode & 0o777 for name in os.listdir(tmp_path / "out")}
    assert modes and set(modes.values()) == {0o640}, modes
    assert "runs.jsonl" in modes and "report.html" in modes


def test_audit_init_into_a_missing_or_unwritable_folder_is_a_clear_error(tmp_path):
    missing = _audit("init", GSM8K_JUDGE, tmp_path / "items.jsonl", "-o", tmp_path / "nope" / "audit.toml")
    assert missing.exit_code == 2  # the items do not exist either: that is said first
    items = _suite(tmp_path).parent / "items.jsonl"
    result = _audit("init", GSM8K_JUDGE, items, "-o", tmp_path / "nope" / "audit.toml")
    assert result.exit_code == 2, result.output
    assert "cannot write" in result.output and "does not exist" in result.output
    assert "Traceback" not in result.output
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "ro"
        locked.mkdir(mode=0o500)
        result = _audit("init", GSM8K_JUDGE, items, "-o", locked / "audit.toml")
        assert result.exit_code == 2 and "Permission denied" in result.output


def test_audit_into_an_unusable_out_folder_is_a_clear_error(tmp_path):
    suite = _suite(tmp_path)
    (tmp_path / "file").write_text("x")
    result = _audit(suite, "--out", tmp_path / "file" / "out")
    assert result.exit_code == 2, result.output
    assert "Error: " in result.output and "Traceback" not in result.output


def test_a_full_disk_is_one_clear_message_and_the_rerun_is_byte_identical(tmp_path, monkeypatch):
    suite = _suite(tmp_path)
    assert _audit(suite, "--out", tmp_path / "full").exit_code == 0
    # The disk fills up after 30 judgments, half-way through the 31st line.
    real_write = RunStore.write
    count = {"n": 0}

    def write(self, *args):
        count["n"] += 1
        if count["n"] == 31:
            self._fh.write('{"schema": "rubriclang.au')
            self._fh.flush()
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(self, *args)

    monkeypatch.setattr(RunStore, "write", write)
    result = _audit(suite, "--out", tmp_path / "cut")
    assert result.exit_code == 2
    assert result.output.count("No space left on device") == 1 and "Traceback" not in result.output
    assert "run the same command again" in result.output
    monkeypatch.setattr(RunStore, "write", real_write)
    assert _audit(suite, "--out", tmp_path / "cut").exit_code == 0
    for name in ("runs.jsonl", "report.json", "report.txt", "sealed.json", "audit.json"):
        assert (tmp_path / "cut" / name).read_bytes() == (tmp_path / "full" / name).read_bytes(), name


@pytest.mark.parametrize(
    "name", ["sealed.json", "validation.jsonl", "audit.json", "report.json", "report.txt", "report.html"]
)
def test_a_full_disk_while_writing_any_audit_file_is_one_message_and_resumes(tmp_path, monkeypatch, name):
    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full")
    suite = _suite(tmp_path)
    assert _audit(suite, "--out", tmp_path / "full").exit_code == 0
    real = safeio._temporary

    def temporary(folder, base):
        if base == name:  # every write of this file hits a full disk
            return os.open("/dev/full", os.O_WRONLY), os.path.join(folder, ".never-made.tmp")
        return real(folder, base)

    monkeypatch.setattr(safeio, "_temporary", temporary)
    result = _audit(suite, "--out", tmp_path / "cut")
    assert result.exit_code == 2, result.output
    assert result.output.count("No space left on device") == 1 and "Traceback" not in result.output
    assert not (tmp_path / "cut" / name).exists()
    assert not [f for f in os.listdir(tmp_path / "cut") if f.endswith((".tmp", ".lock"))]
    monkeypatch.setattr(safeio, "_temporary", real)
    assert _audit(suite, "--out", tmp_path / "cut").exit_code == 0
    for f in os.listdir(tmp_path / "full"):
        assert (tmp_path / "cut" / f).read_bytes() == (tmp_path / "full" / f).read_bytes(), f


def test_an_out_folder_that_cannot_be_made_is_a_clear_error(tmp_path, monkeypatch):
    suite = _suite(tmp_path)

    def refuse(path, exist_ok=False):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr("rubriclang.audit.pipeline.os.makedirs", refuse)
    result = _audit(suite, "--out", tmp_path / "out")
    assert result.exit_code == 2 and f"`{tmp_path / 'out'}`: Permission denied" in result.output, result.output
    assert "Traceback" not in result.output
