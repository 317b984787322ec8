"""`rbg compile SPECS.jsonl --out-dir GRAPHS/`: many specs at once, against a
scripted loopback model whose answers are fixtures keyed by the spec's
rubric name (so the answers do not depend on the order of the calls)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubriclang.cli.main import cli
from rubriclang.interp.compiled import COMPILED, status

from .fault_server import FaultServer

ROOT = Path(__file__).resolve().parents[2]
BIGGEN = ROOT / "examples" / "biggen" / "items.jsonl"

GOOD = """\
rubric {name} {{ version = 1 }}
contract {{ scale = ordinal[1, 5] }}
criterion quality: ordinal[1, 5] = llm.rate {{
  question = "How well does the response meet the rubric?"
  anchors = {{ 1: "Poorly.", 5: "Fully." }}
}}
sink quality
readout pointwise {{ output = ordinal[1, 5] }}
"""

# An unknown procedure: RB104.
BAD = """\
rubric {name} {{ version = 1 }}
contract {{ scale = ordinal[1, 5] }}
criterion quality: ordinal[1, 5] = llm.grade {{ question = "Good?" }}
sink quality
readout pointwise {{ output = ordinal[1, 5] }}
"""


def named(body: dict, names) -> str | None:
    """Which of `names` the request's spec is for."""
    spec = body["messages"][1]["content"]
    return next((n for n in names if f"`{n}`" in spec or f"rubric {n} " in spec), None)


def scripted(plan: dict[str, str], delay: float = 0.0, held: tuple[set[str], threading.Event] | None = None):
    """The model: for rubric NAME, `good` answers a valid program, `bad`
    always a broken one, `repair` a broken one first and a valid one when
    shown its findings. `held`: (names, event) answers those rubrics only
    once the event is set."""

    def answer(body: dict) -> str:
        if delay:
            time.sleep(delay)
        name = named(body, plan)
        if held and name in held[0]:
            assert held[1].wait(20), f"{name} was held and never released"
        kind = plan.get(name or "", "bad")
        repaired = len(body["messages"]) > 2
        program = GOOD if kind == "good" or (kind == "repair" and repaired) else BAD
        return "```rbg\n" + program.format(name=name or "unknown") + "```\n"

    return answer


def spec_line(sid: str, name: str | None = None, **extra) -> dict:
    return {
        "id": sid,
        "rubric": {"name": name or sid.replace("-", "_"), "text": f"Score 1 to 5: how well is task {sid} done?"},
        "task": {"input": f"Task {sid}."},
        "contract": {"scale": "ordinal[1, 5]"},
        **extra,
    }


def write_specs(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    return path


PLAN = {"alpha": "good", "beta": "repair", "gamma": "bad"}


def compile_many(specs: Path, out: Path, url: str, *extra: str):
    args = ["compile", str(specs), "--out-dir", str(out), "--base-url", url, "--no-cache", "--repairs", "2", *extra]
    return CliRunner().invoke(cli, args)


@pytest.fixture
def specs(tmp_path):
    return write_specs(tmp_path / "specs.jsonl", [spec_line(s) for s in PLAN])


def test_each_spec_compiles_into_its_own_checked_graph(tmp_path, specs):
    out = tmp_path / "graphs"
    with FaultServer(scripted(PLAN)) as server:
        r = compile_many(specs, out, server.url, "--format", "json")
    assert r.exit_code == 1, r.output  # gamma failed within the budget
    summary = json.loads(r.output)
    assert (summary["compiled"], summary["failed"], summary["error"], summary["pending"]) == (2, 1, 0, 0)
    assert summary["attempts"] == {"compiled": {"1": 1, "2": 1}, "failed": {"3": 1}}
    assert summary["repaired_findings"][0] == ["RB104", 4]
    assert sorted(p.name for p in out.glob("*.rbg")) == ["alpha.rbg", "beta.rbg"]
    assert not (out / "gamma.rbg").exists()
    assert (out / "gamma.compile.jsonl").exists()
    first = (out / "alpha.rbg").read_text("utf-8").splitlines()[0]
    assert first.startswith("# rbg compile: spec alpha sha256:")
    check = CliRunner().invoke(cli, ["check", str(out)])
    fmt = CliRunner().invoke(cli, ["fmt", "--check", str(out)])
    assert (check.exit_code, fmt.exit_code) == (0, 0), check.output + fmt.output


def test_text_summary_names_counts_attempts_and_findings(tmp_path, specs):
    with FaultServer(scripted(PLAN)) as server:
        r = compile_many(specs, tmp_path / "g", server.url)
    assert "Compiled 2 of 3 specs" in r.output
    assert "failed within the budget 1" in r.output
    assert "attempts used (compiled): 1: 1, 2: 1" in r.output
    assert "RB104 4" in r.output


def test_outputs_are_byte_identical_at_any_concurrency(tmp_path):
    plan = {f"s{i}": ("good", "repair", "bad")[i % 3] for i in range(9)}
    specs = write_specs(tmp_path / "specs.jsonl", [spec_line(s) for s in plan])
    outputs = []
    for n in ("1", "5"):
        out = tmp_path / f"g{n}"
        with FaultServer(scripted(plan, delay=0.01)) as server:
            r = compile_many(specs, out, server.url, "--concurrency", n, "--format", "json")
        summary = json.loads(r.output)
        del summary["out_dir"]
        outputs.append(({p.name: p.read_bytes() for p in out.glob("*.rbg")}, summary))
    assert outputs[0] == outputs[1]
    assert len(outputs[0][0]) == 6


def test_rerun_compiles_nothing_and_a_changed_spec_recompiles(tmp_path, specs):
    out = tmp_path / "graphs"
    with FaultServer(scripted(PLAN)) as server:
        compile_many(specs, out, server.url)
        before = len(server.chats)
        r = compile_many(specs, out, server.url, "--format", "json")
        assert len(server.chats) == before  # compiled and failed specs are both kept
        assert json.loads(r.output)["this_run"] == {"skipped": 3}
        changed = [spec_line("alpha"), spec_line("beta"), spec_line("gamma")]
        changed[0]["rubric"]["text"] += " Be strict."
        write_specs(specs, changed)
        r = compile_many(specs, out, server.url, "--format", "json")
        assert json.loads(r.output)["this_run"] == {"compiled": 1, "skipped": 2}
        assert len(server.chats) == before + 1


def test_a_graph_written_before_its_log_ended_is_never_compiled_again(tmp_path, specs):
    # A kill can land between the graph's atomic write and the log's end
    # record: the graph, stamped with its spec's hash, is then the outcome.
    out = tmp_path / "graphs"
    with FaultServer(scripted(PLAN)) as server:
        compile_many(specs, out, server.url)
        log = out / "alpha.compile.jsonl"
        lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
        assert json.loads(lines[-1])["event"] == "end"
        log.write_text("".join(lines[:-1]), encoding="utf-8")
        before = len(server.chats)
        r = compile_many(specs, out, server.url, "--format", "json")
        assert len(server.chats) == before
        assert json.loads(r.output)["this_run"] == {"skipped": 3}


def test_retry_failed_compiles_the_failures_again(tmp_path, specs):
    out = tmp_path / "graphs"
    with FaultServer(scripted(PLAN)) as server:
        compile_many(specs, out, server.url)
        before = len(server.chats)
        r = compile_many(specs, out, server.url, "--retry-failed", "--format", "json")
    assert json.loads(r.output)["this_run"] == {"failed": 1, "skipped": 2}
    assert len(server.chats) == before + 3


def test_a_spec_that_now_fails_leaves_no_stale_graph(tmp_path):
    specs = write_specs(tmp_path / "specs.jsonl", [spec_line("alpha")])
    out = tmp_path / "graphs"
    with FaultServer(scripted({"alpha": "good"})) as server:
        compile_many(specs, out, server.url)
    assert (out / "alpha.rbg").exists()
    write_specs(specs, [{**spec_line("alpha"), "task": {"input": "Another task."}}])
    with FaultServer(scripted({})) as server:
        r = compile_many(specs, out, server.url)
    assert r.exit_code == 1
    assert not (out / "alpha.rbg").exists()


@pytest.mark.parametrize(
    "line, message",
    [
        ("not json", "specs.jsonl:2: malformed"),
        ('{"rubric": {"name": "x", "text": "t"}}', "specs.jsonl:2: the spec has no `id`"),
        (json.dumps(spec_line("alpha")), "specs.jsonl:2: spec `alpha`: duplicate id (first at"),
        (
            json.dumps(spec_line("b", response="Hello")),
            "specs.jsonl:2: spec `b`: `response`: a spec has no place for candidate responses",
        ),
        (
            json.dumps({**spec_line("b"), "task": {"input": "x", "candidates": ["a"]}}),
            "specs.jsonl:2: spec `b`: `task.candidates`: a spec has no place for candidate responses",
        ),
        (json.dumps({**spec_line("b"), "contract": {"scale": "ordinal[5, 1]"}}), "specs.jsonl:2: spec `b`:"),
        (json.dumps(spec_line("../b")), "specs.jsonl:2: id `../b` cannot name a file"),
    ],
)
def test_bad_spec_lines_are_errors_naming_file_line_and_id(tmp_path, line, message):
    specs = tmp_path / "specs.jsonl"
    specs.write_text(json.dumps(spec_line("alpha")) + "\n" + line + "\n", "utf-8")
    r = CliRunner().invoke(
        cli, ["compile", str(specs), "--out-dir", str(tmp_path / "g"), "--base-url", "http://127.0.0.1:9", "--no-cache"]
    )
    assert r.exit_code == 2
    assert message in r.output, r.output
    assert "Traceback" not in r.output
    assert not (tmp_path / "g").exists()


def test_from_items_builds_specs_from_each_rows_rubric_and_never_reads_responses(tmp_path):
    rows = [json.loads(x) for x in BIGGEN.read_text("utf-8").splitlines()[:3]]
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    names = {r["id"]: r["id"].lower().replace("-", "_") for r in rows}
    seen = []

    def answer(body):
        seen.append(body)
        name = named(body, names.values())
        return "```rbg\n" + GOOD.format(name=name) + "```\n"

    out = tmp_path / "graphs"
    with FaultServer(answer) as server:
        args = [
            "compile",
            "--from-items",
            str(items),
            "--rubric-field",
            "score_rubric",
            "--system-field",
            "system_prompt",
            "--out-dir",
            str(out),
            "--base-url",
            server.url,
            "--no-cache",
        ]
        r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    assert sorted(p.stem for p in out.glob("*.rbg")) == sorted(names)
    prompts = "\n".join(b["messages"][1]["content"] for b in seen)
    assert rows[0]["score_rubric"]["score1_description"] in prompts
    assert rows[0]["response"] not in prompts


def test_from_items_names_a_missing_rubric_field(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "a", "input": "x", "response": "y"}\n', "utf-8")
    r = CliRunner().invoke(
        cli,
        [
            "compile",
            "--from-items",
            str(items),
            "--rubric-field",
            "score_rubric",
            "--out-dir",
            str(tmp_path / "g"),
            "--base-url",
            "http://127.0.0.1:9",
        ],
    )
    assert r.exit_code == 2
    assert "items.jsonl:1: item `a`: the row has no `score_rubric` (named by --rubric-field)" in r.output


def test_killed_compile_resumes_without_compiling_any_spec_twice(tmp_path):
    plan = {f"k{i}": "good" for i in range(6)}
    specs = write_specs(tmp_path / "specs.jsonl", [spec_line(s) for s in plan])
    out = tmp_path / "graphs"
    rbg = [str(Path(sys.executable).with_name("rbg"))]
    release = threading.Event()  # the model answers only k0 and k1 until the run is killed
    with FaultServer(scripted(plan, held=(set(plan) - {"k0", "k1"}, release))) as server:
        cmd = [*rbg, "compile", str(specs), "--out-dir", str(out), "--base-url", server.url, "--no-cache"]
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Finished: the graph written and its log ended (a graph alone is compiled again).
        done = lambda: {s for s in plan if status(str(out), s)[0] == COMPILED}  # noqa: E731
        deadline = time.monotonic() + 30
        while len(done()) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)  # polls files another process writes
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        release.set()
        finished = done()
        assert finished == {"k0", "k1"}
        r = subprocess.run([*cmd, "--format", "json"], cwd=ROOT, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["compiled"] == len(plan)
        asked = [named(c.body or {}, plan) for c in server.chats]
    for sid in finished:
        assert sum(1 for n in asked if n == sid) == 1, sid
