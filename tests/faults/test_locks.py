"""Two commands never write one output at once: `rbg run --out FILE` and
`rbg audit --out DIR` hold an exclusive lock while they write, and a second
one is refused (exit 2) with the pid of the first, touching nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from audit.helpers import GSM8K_JUDGE, gsm8k_items
from click.testing import CliRunner

from rubriclang import safeio
from rubriclang.cli.main import cli

GRAPH = """rubric verifier { version = 1 }
contract { scale = bool }
criterion correct: bool = rule.matches_reference { mode = numeric }
sink correct
readout pointwise { output = bool }
"""


def _run_files(tmp_path):
    g = tmp_path / "g.rbg"
    g.write_text(GRAPH)
    items = tmp_path / "items.jsonl"
    items.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "input": "?", "response": f"{i}", "reference": f"#### {i}"}) + "\n"
            for i in range(5)
        )
    )
    return g, items


def _suite(tmp_path):
    items = tmp_path / "audit_items.jsonl"
    items.write_text("".join(json.dumps(r) + "\n" for r in gsm8k_items(2)), encoding="utf-8")
    path = tmp_path / "suite.toml"
    path.write_text(
        f'judge = "{GSM8K_JUDGE}"\nitems = "{items}"\nrepeats = 1\noperators = ["partial_completion"]\n',
        encoding="utf-8",
    )
    return path


def _rbg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


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


def test_a_second_run_into_the_same_out_is_refused_naming_the_first(tmp_path, holder):
    g, items = _run_files(tmp_path)
    out = tmp_path / "t.jsonl"
    assert _rbg("run", g, items, "--out", out).exit_code == 0
    before = out.read_bytes()
    pid = holder(out)
    result = _rbg("run", g, items, "--out", out)
    assert result.exit_code == 2, result.output
    assert f"pid {pid}" in result.output and "another --out" in result.output
    assert out.read_bytes() == before


def test_a_run_while_another_starts_a_new_out_is_refused_and_writes_nothing(tmp_path, holder):
    g, items = _run_files(tmp_path)
    out = tmp_path / "new.jsonl"
    pid = holder(out)
    result = _rbg("run", g, items, "--out", out)
    assert result.exit_code == 2 and f"pid {pid}" in result.output
    assert not out.exists()


def test_the_lock_is_released_and_removed_when_a_run_ends(tmp_path):
    g, items = _run_files(tmp_path)
    out = tmp_path / "t.jsonl"
    assert _rbg("run", g, items, "--out", out).exit_code == 0
    assert sorted(os.listdir(tmp_path)) == ["g.rbg", "items.jsonl", "t.jsonl"]
    with safeio.output_lock(str(out)):  # free again
        pass


def test_a_lock_file_left_by_a_killed_process_does_not_block(tmp_path):
    g, items = _run_files(tmp_path)
    out = tmp_path / "t.jsonl"
    (tmp_path / "t.jsonl.lock").write_text("999999\n")  # no process holds it
    result = _rbg("run", g, items, "--out", out)
    assert result.exit_code == 0, result.output
    assert len(out.read_text().splitlines()) == 5
    assert not (tmp_path / "t.jsonl.lock").exists()


def test_a_second_audit_of_the_same_folder_is_refused_naming_the_first(tmp_path, holder):
    suite = _suite(tmp_path)
    out = tmp_path / "out"
    assert _rbg("audit", suite, "--out", out).exit_code == 0
    before = {name: (out / name).read_bytes() for name in os.listdir(out)}
    pid = holder(out)
    result = _rbg("audit", suite, "--out", out, "--retry-errors")
    assert result.exit_code == 2, result.output
    assert f"pid {pid}" in result.output and "Traceback" not in result.output
    assert {name: (out / name).read_bytes() for name in os.listdir(out) if name != ".rbg.lock"} == before


def test_two_real_runs_at_once_write_each_item_once(tmp_path):
    g, items = _run_files(tmp_path)
    out = tmp_path / "t.jsonl"
    cmd = [
        sys.executable,
        "-c",
        "from rubriclang.cli.main import main; main()",
        "run",
        str(g),
        str(items),
        "--out",
        str(out),
    ]
    # Whichever order they end up in, a refused one says why and none writes an item twice.
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = []
    for p in procs:
        assert p.stdout is not None and p.stderr is not None
        results.append((p.wait(), p.stderr.read()))
        p.stdout.close()
        p.stderr.close()
    assert all(rc in (0, 2) for rc, _ in results), results
    assert all("being written by another rbg process" in err for rc, err in results if rc == 2)
    ids = [json.loads(line)["item"] for line in out.read_text().splitlines()]
    assert sorted(ids) == [f"q{i}" for i in range(5)]


def test_a_batch_import_into_an_out_another_process_writes_is_refused(tmp_path, holder, unreachable_url):
    from llm.test_batch import GRAPH as BATCH_GRAPH
    from llm.test_batch import ITEMS, MODEL, export, result_line, write_results

    graph, items = tmp_path / "bg.rbg", tmp_path / "bitems.jsonl"
    graph.write_text(BATCH_GRAPH)
    items.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in ITEMS))
    requests = export(graph, items, tmp_path / "requests.jsonl")
    results = write_results(tmp_path / "results.jsonl", [result_line(req, n) for n, req in enumerate(requests)])
    out = tmp_path / "batch.jsonl"
    pid = holder(out)
    args = (
        "batch",
        "import",
        graph,
        items,
        results,
        "--out",
        out,
        "--model",
        MODEL,
        "--base-url",
        f"{unreachable_url}/v1",
        "--cache",
        tmp_path / "c.sqlite",
    )
    result = _rbg(*args)
    assert result.exit_code == 2 and f"pid {pid}" in result.output, result.output
    assert not out.exists()
