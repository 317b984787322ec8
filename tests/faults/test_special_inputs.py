"""A graph, prompt template, project config, audit suite or compile spec
that is not a regular file (a named pipe nobody writes, a device, a
folder) is refused at once with a clear error naming it; none hangs `rbg
check`, `run`, `graph` or any other command (issue 25, item 10). Items and
value tables are the exception: they are read as a stream, so a pipe works
(tests/faults/test_inputs.py). Each command runs as a real process with a
timeout: a hang fails the test instead of blocking the suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import GOOD

from faults.run_fixtures import RBG, setup

TIMEOUT = 60

TEMPLATE_GRAPH = GOOD.replace('question = "How correct is the response?"', 'prompt = "judge.md"')
assert TEMPLATE_GRAPH != GOOD


def _rbg(cwd: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [RBG, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL
    )


def _special(path: Path, kind: str) -> None:
    if kind == "pipe":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        raise AssertionError(kind)


def _items(tmp_path: Path) -> Path:
    """An items file in a folder of its own (so the graph under test is alone)."""
    (tmp_path / "x").mkdir()
    return setup(tmp_path / "x")[1]


def _says(r: subprocess.CompletedProcess, code: int, *parts: str) -> None:
    out = r.stdout + r.stderr
    assert r.returncode == code, out
    assert "Traceback" not in out, out
    for part in parts:
        assert part in out, out


KINDS = {"pipe": "not a regular file but a pipe", "folder": "not a regular file but a folder"}


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_template_that_is_not_a_file_is_an_error_at_its_line_in_check_graph_and_run(tmp_path, kind):
    _special(tmp_path / "judge.md", kind)
    (tmp_path / "g.rbg").write_text(TEMPLATE_GRAPH, encoding="utf-8")
    items = _items(tmp_path)
    line = TEMPLATE_GRAPH.splitlines().index('  prompt = "judge.md"') + 1
    where = f"g.rbg:{line}:12: RB207 error: cannot read the template `judge.md`: {KINDS[kind]}"
    _says(_rbg(tmp_path, "check", "g.rbg"), 1, where)
    _says(_rbg(tmp_path, "graph", "g.rbg"), 2, where)
    run = _rbg(tmp_path, "run", "g.rbg", items, "--out", "t.jsonl", "--base-url", "http://127.0.0.1:9/v1")
    _says(run, 2, where)
    assert not (tmp_path / "t.jsonl").exists()


@pytest.mark.parametrize(
    "command",
    [
        ("run", "{x}", "items.jsonl", "--out", "t.jsonl"),
        ("fit", "{x}", "items.jsonl", "-o", "f.rbg"),
        ("replay", "{x}", "items.jsonl"),
        ("diff", "{x}", "g.rbg"),
        ("fmt", "--check", "{x}"),
    ],
    ids=lambda c: c[0],
)
def test_a_graph_that_is_a_pipe_is_refused_by_every_command(tmp_path, command):
    setup(tmp_path)
    _special(tmp_path / "p.rbg", "pipe")
    r = _rbg(tmp_path, *(a.replace("{x}", "p.rbg") for a in command))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "p.rbg" in r.stdout + r.stderr and "Traceback" not in r.stdout + r.stderr


def test_a_graph_that_is_a_device_is_refused_without_reading_it(tmp_path):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero here")
    _, items = setup(tmp_path)
    _says(
        _rbg(tmp_path, "run", "/dev/zero", items, "--out", "t.jsonl"), 2, "not a regular file but a terminal or device"
    )


@pytest.mark.parametrize("name", ["rubriclang.toml", "pyproject.toml"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_project_config_that_is_not_a_file_is_refused_not_skipped(tmp_path, name, kind):
    (tmp_path / "g.rbg").write_text(GOOD, encoding="utf-8")
    items = _items(tmp_path)
    _special(tmp_path / name, kind)
    r = _rbg(tmp_path, "run", "g.rbg", items, "--out", "t.jsonl", "--estimate")
    _says(r, 2, f"{name}:1: cannot read it: {KINDS[kind]}")


def test_a_suite_or_a_spec_that_is_a_pipe_is_refused(tmp_path):
    # (A folder is refused by the argument's own check.)
    kind = "pipe"
    _special(tmp_path / "x.toml", kind)
    _says(_rbg(tmp_path, "audit", "run", "x.toml", "--out", "a"), 2, f"x.toml: cannot read the suite: {KINDS[kind]}")
    r = _rbg(tmp_path, "compile", "x.toml", "-o", "c.rbg", "--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    _says(r, 2, f"x.toml: cannot read the spec: {KINDS[kind]}")
    assert not (tmp_path / "a").exists() and not (tmp_path / "c.rbg").exists()


def test_the_python_api_refuses_a_pipe_too(tmp_path):
    _special(tmp_path / "p.rbg", "pipe")
    code = "import rubriclang, sys\ntry:\n    rubriclang.load(sys.argv[1])\nexcept OSError as e:\n    print(e.strerror)"
    r = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "p.rbg")], capture_output=True, text=True, timeout=TIMEOUT
    )
    assert r.stdout.strip() == "not a regular file but a pipe; give a file", r.stdout + r.stderr


def test_items_from_a_pipe_still_work(tmp_path):
    g, items = setup(tmp_path)
    cat = subprocess.Popen(["cat", str(items)], stdout=subprocess.PIPE)
    r = subprocess.run(
        [RBG, "run", str(g), "/dev/stdin", "--out", str(tmp_path / "t.jsonl")],
        stdin=cat.stdout,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert cat.stdout is not None
    cat.stdout.close()
    cat.wait()
    assert r.returncode == 0, r.stdout + r.stderr
    assert len((tmp_path / "t.jsonl").read_text("utf-8").splitlines()) == 6


def test_a_split_file_that_is_a_pipe_is_refused(tmp_path):
    setup(tmp_path, n=12)
    _special(tmp_path / "dev.txt", "pipe")
    r = _rbg(tmp_path, "fit", "g.rbg", "items.jsonl", "-o", "f.rbg", "--split-file", "dev.txt")
    _says(r, 2, f"dev.txt: cannot read it: {KINDS['pipe']}")


def test_an_audit_folder_holding_a_pipe_is_refused_before_it_is_read(tmp_path):
    from faults.test_locks import _suite

    suite = _suite(tmp_path)
    (tmp_path / "audit").mkdir()
    _special(tmp_path / "audit" / "sealed.json", "pipe")
    r = _rbg(tmp_path, "audit", "run", suite, "--out", "audit")
    _says(r, 2, "a pipe in `audit`")


def test_a_viewer_input_that_is_a_pipe_is_refused(tmp_path):
    pytest.importorskip("starlette")
    _special(tmp_path / "t.jsonl", "pipe")
    _says(_rbg(tmp_path, "view", "t.jsonl", "--export", "site"), 2, "`t.jsonl` is a pipe: give a file or a folder")
    assert not (tmp_path / "site").exists()


def test_a_sealed_suite_or_an_audit_report_that_is_a_pipe_is_refused(tmp_path):
    from faults.test_locks import _suite

    suite = _suite(tmp_path)
    _special(tmp_path / "sealed.json", "pipe")
    r = _rbg(tmp_path, "audit", "run", suite, "--out", "a", "--sealed", "sealed.json")
    _says(r, 2, f"cannot read `sealed.json`: {KINDS['pipe']}")
    for folder in ("x", "y"):
        (tmp_path / folder).mkdir()
        _special(tmp_path / folder / "report.json", "pipe")
    _says(_rbg(tmp_path, "audit", "compare", "x", "y"), 2, "x/report.json` cannot be read as JSON")
