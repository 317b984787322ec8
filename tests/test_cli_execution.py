"""`rbg run`, `rbg replay` and `rbg eval` end to end: outputs, exit codes,
bad input that keeps finished work, and resuming after a kill."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from rubriclang.cli.main import cli

GRAPH = """rubric verifier { version = 1 }
contract { scale = bool }
criterion correct: bool = rule.matches_reference { mode = numeric }
criterion terse: bool = rule.length { under = 3 }
node wrong_or_terse = reduce.any(inputs: [terse, not_correct])
node not_correct = transform.not(value: correct)
node ok = transform.not(value: wrong_or_terse)
sink ok
readout pointwise { output = bool }
"""


def _item(i, answer=None):
    answer = i % 7 if answer is None else answer
    return {
        "id": f"q{i}",
        "input": f"What is {i % 7}?",
        "response": f"The answer is {answer}.",
        "reference": f"#### {i % 7}",
        "gold": answer == i % 7,
    }


def _write(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _setup(tmp_path, n=20):
    g = tmp_path / "g.rbg"
    g.write_text(GRAPH)
    items = _write(tmp_path / "items.jsonl", [_item(i, answer=(i % 7) + (i % 3 == 0)) for i in range(n)])
    return g, items


def test_run_writes_one_trace_per_item_and_resumes(tmp_path):
    g, items = _setup(tmp_path)
    out = tmp_path / "t.jsonl"
    r = CliRunner().invoke(cli, ["run", str(g), str(items), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "Judged 20 items" in r.output
    lines = out.read_text().splitlines()
    assert [json.loads(x)["item"] for x in lines] == [f"q{i}" for i in range(20)]
    again = CliRunner().invoke(cli, ["run", str(g), str(items), "--out", str(out), "--format", "json"])
    summary = json.loads(again.output)
    assert summary["judged"] == 0 and summary["resumed"] == 20
    assert out.read_text().splitlines() == lines


def test_malformed_line_keeps_earlier_items_and_names_the_line(tmp_path):
    g, _ = _setup(tmp_path)
    items = tmp_path / "bad.jsonl"
    items.write_text(json.dumps(_item(1)) + "\n" + json.dumps(_item(2)) + "\n{not json\n" + json.dumps(_item(3)) + "\n")
    out = tmp_path / "t.jsonl"
    r = CliRunner().invoke(cli, ["run", str(g), str(items), "--out", str(out)])
    assert r.exit_code == 2
    assert f"{items}:3: malformed JSON" in r.output
    assert "Traceback" not in r.output
    assert [json.loads(x)["item"] for x in out.read_text().splitlines()] == ["q1", "q2"]


def test_duplicate_ids_and_missing_ids_are_errors_with_lines(tmp_path):
    g, _ = _setup(tmp_path)
    dup = _write(tmp_path / "dup.jsonl", [_item(1), _item(1)])
    r = CliRunner().invoke(cli, ["run", str(g), str(dup), "--out", str(tmp_path / "a.jsonl")])
    assert r.exit_code == 2 and f"{dup}:2: duplicate item id `q1`" in r.output
    noid = _write(tmp_path / "noid.jsonl", [{"input": "x", "response": "y"}])
    r = CliRunner().invoke(cli, ["run", str(g), str(noid), "--out", str(tmp_path / "b.jsonl")])
    assert r.exit_code == 2 and f"{noid}:1: the item has no `id`" in r.output


def test_annotation_for_unknown_candidate_names_the_annotation_line(tmp_path):
    g = tmp_path / "g.rbg"
    g.write_text(
        "rubric h { version = 1 }\ncontract { scale = score[1, 3] }\n"
        'criterion e: score[1, 3] = human.annotation { key = "e" }\nsink e\n'
        "readout pairwise { epsilon = 0.1, resolve = tie }\n"
    )
    items = _write(tmp_path / "items.jsonl", [{"id": "1", "input": "", "responses": {"a": "x", "b": "y"}}])
    ann = _write(
        tmp_path / "ann.jsonl",
        [
            {"item": "1", "candidate": "a", "key": "e", "value": 2},
            {"item": "1", "candidate": "c", "key": "e", "value": 3},
        ],
    )
    r = CliRunner().invoke(
        cli, ["run", str(g), str(items), "--out", str(tmp_path / "t.jsonl"), "--annotations", str(ann)]
    )
    assert r.exit_code == 2
    assert f"{ann}:2: candidate `c` of item `1` is not one of the item's candidates" in r.output


def test_replay_is_identical_and_reports_changes_under_another_version(tmp_path):
    g, items = _setup(tmp_path)
    out = tmp_path / "t.jsonl"
    CliRunner().invoke(cli, ["run", str(g), str(items), "--out", str(out)])
    r = CliRunner().invoke(cli, ["replay", str(g), str(out)])
    assert r.exit_code == 0 and "every decision is identical" in r.output
    g2 = tmp_path / "g2.rbg"
    g2.write_text(
        GRAPH.replace(
            "node wrong_or_terse = reduce.any(inputs: [terse, not_correct])",
            "node wrong_or_terse = reduce.all(inputs: [terse, not_correct])",
        )
    )
    r = CliRunner().invoke(cli, ["replay", str(g2), str(out), "--format", "json"])
    assert r.exit_code == 1
    report = json.loads(r.output)
    assert report["items"] == 20 and report["changed"] == 7
    assert report["transitions"] == {"false -> true": 7}


def test_replay_refuses_a_redefined_criterion(tmp_path):
    g, items = _setup(tmp_path)
    out = tmp_path / "t.jsonl"
    CliRunner().invoke(cli, ["run", str(g), str(items), "--out", str(out)])
    g2 = tmp_path / "g2.rbg"
    g2.write_text(GRAPH.replace("under = 3", "under = 4"))
    r = CliRunner().invoke(cli, ["replay", str(g2), str(out)])
    assert r.exit_code == 2 and "criterion `terse` is defined differently" in r.output


def test_eval_reports_metrics_with_intervals(tmp_path):
    g, items = _setup(tmp_path, n=60)
    r = CliRunner().invoke(cli, ["eval", str(g), str(items), "--format", "json"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    figures = report["modes"]["pointwise"]["metrics"]
    assert figures["verifier"]["accuracy"]["value"] == 1.0
    assert figures["verifier"]["accuracy"]["n"] == 60
    assert "equal baseline" in figures


def test_graph_with_errors_is_refused_with_its_diagnostics(tmp_path):
    g = tmp_path / "bad.rbg"
    g.write_text(GRAPH.replace("sink ok", "sink okk"))
    _, items = _setup(tmp_path)
    r = CliRunner().invoke(cli, ["run", str(g), str(items), "--out", str(tmp_path / "t.jsonl")])
    assert r.exit_code == 2
    assert "RB101" in r.output and "unknown name `okk`" in r.output


def test_a_run_killed_while_its_items_are_still_coming_resumes_to_the_same_traces(tmp_path):
    # The run reads its items from a named pipe that gets half of them and
    # stays open: it cannot finish, so the kill lands mid-run once it has
    # written a line, however fast or slow the machine.
    g, _ = _setup(tmp_path)
    rows = [_item(i) for i in range(200)]
    items = _write(tmp_path / "items.jsonl", rows)
    fifo = tmp_path / "items.fifo"
    os.mkfifo(fifo)
    part = tmp_path / "part.jsonl"
    rbg = str(Path(sys.executable).with_name("rbg"))
    proc = subprocess.Popen([rbg, "run", g, fifo, "--out", part], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60  # a bound on a hang, not a timing the test depends on

    def wait(what: str) -> None:
        assert proc.poll() is None and time.monotonic() < deadline, f"the run {what}"
        time.sleep(0.01)

    try:
        while True:
            try:  # not blocking: a run that never opens the pipe fails the test instead of hanging it
                feed = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError:
                wait("never opened its items")
        os.write(feed, "".join(json.dumps(r) + "\n" for r in rows[:100]).encode())  # less than a pipe holds
        while b"\n" not in (part.read_bytes() if part.exists() else b""):
            wait("wrote no trace line")
        proc.kill()
        proc.wait()
        os.close(feed)
    finally:
        proc.kill()
    assert 0 < part.read_bytes().count(b"\n") <= 100
    full = tmp_path / "full.jsonl"
    assert CliRunner().invoke(cli, ["run", str(g), str(items), "--out", str(full)]).exit_code == 0
    r = CliRunner().invoke(cli, ["run", str(g), str(items), "--out", str(part)])
    assert r.exit_code == 0, r.output
    assert part.read_bytes() == full.read_bytes()


def test_a_run_cut_off_at_any_byte_resumes_to_the_same_traces(tmp_path):
    # A kill leaves the trace file cut at some byte: before the first line,
    # between lines or inside one; each cut is made here.
    g, _ = _setup(tmp_path)
    items = _write(tmp_path / "many.jsonl", [_item(i) for i in range(200)])
    full = tmp_path / "full.jsonl"
    assert CliRunner().invoke(cli, ["run", str(g), str(items), "--out", str(full)]).exit_code == 0
    whole = full.read_bytes()
    ends = [k + 1 for k, byte in enumerate(whole) if byte == ord("\n")]
    cuts = [0, 1, ends[0] - 1, ends[0], ends[0] + 1, ends[99] - 5, ends[99], len(whole) - 1]
    for cut in cuts:
        part = tmp_path / f"part{cut}.jsonl"
        part.write_bytes(whole[:cut])
        r = CliRunner().invoke(cli, ["run", str(g), str(items), "--out", str(part), "--format", "json"])
        assert r.exit_code == 0, r.output
        assert part.read_bytes() == whole, f"cut at byte {cut}"
        assert json.loads(r.stdout)["resumed"] == sum(end <= cut for end in ends)
