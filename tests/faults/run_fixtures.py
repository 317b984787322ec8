"""What the fault tests of `rbg run`, replay, eval and diff share: a graph
judged from annotations (so an item without one fails, deterministically),
items, a compile spec, and running the command line in-process or as a
subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner, Result

from rubriclang.cli.main import cli

GRAPH = """rubric faults { version = 1 }
contract { scale = score[1, 5] }
criterion q: score[1, 5] = human.annotation { key = "q" }
sink q
readout pointwise { output = ordinal[1, 5] }
"""

RBG = str(Path(sys.executable).with_name("rbg"))

# A well-formed `rbg compile` spec.
SPEC = """\
[rubric]
name = "helpful"
text = "Is the answer helpful?"
version = 1

[task]
description = "Answer a question."

[contract]
scale = "ordinal[1, 5]"
readouts = ["pointwise"]
"""


def item(i: int, annotated: bool = True) -> dict:
    """Item `i{i}`; without its annotation, its judgment fails (readout error)."""
    row = {"id": f"i{i}", "input": f"question {i}", "response": f"answer {i}", "gold": 1 + i % 5}
    if annotated:
        row["annotations"] = {"q": 1 + i % 5}
    return row


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def setup(tmp_path: Path, n: int = 6, failing=()) -> tuple[Path, Path]:
    """(graph, items) with `n` items; those numbered in `failing` fail."""
    g = tmp_path / "g.rbg"
    g.write_text(GRAPH, encoding="utf-8")
    items = write_jsonl(tmp_path / "items.jsonl", [item(i, i not in failing) for i in range(n)])
    return g, items


def rbg(*args) -> Result:
    """`rbg ARGS...` in-process; stdout and stderr together in `.output`."""
    return CliRunner().invoke(cli, [str(a) for a in args])


def rbg_process(*args, **kw) -> subprocess.CompletedProcess:
    """`rbg ARGS...` as a subprocess (real file descriptors); text output."""
    return subprocess.run([RBG, *map(str, args)], capture_output=True, text=True, timeout=120, **kw)


def traces(tmp_path: Path, n: int = 6, failing=()) -> tuple[Path, Path, Path]:
    """(graph, items, trace file) after a full run."""
    g, items = setup(tmp_path, n, failing)
    out = tmp_path / "t.jsonl"
    r = rbg("run", g, items, "--out", out)
    assert r.exit_code == (1 if failing else 0), r.output
    return g, items, out


def assert_clean_error(result, where: str) -> None:
    """Exit 2, the message names `where` (`path:line`), and no traceback."""
    output = result.output if hasattr(result, "output") else result.stdout + result.stderr
    code = result.exit_code if hasattr(result, "exit_code") else result.returncode
    assert code == 2, output
    assert where in output, output
    assert "Traceback" not in output, output
    if hasattr(result, "exception") and result.exception is not None:
        assert isinstance(result.exception, SystemExit), repr(result.exception)


def assert_every_trace_reader_refuses(g: Path, items: Path, out: Path, where: str) -> None:
    """replay, eval --traces, diff --traces and a resumed run each refuse the
    trace file `out` with a clear error naming `where`; the resume leaves the
    file byte-identical."""
    assert_clean_error(rbg("replay", g, out), where)
    assert_clean_error(rbg("eval", g, items, "--traces", out), where)
    assert_clean_error(rbg("diff", g, g, "--traces", out), where)
    before = out.read_bytes()
    assert_clean_error(rbg("run", g, items, "--out", out), where)
    assert out.read_bytes() == before
