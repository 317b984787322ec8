"""`rbg run` and `rbg eval` with LLM criteria against a scripted loopback
server: summaries, reruns from the cache, resuming after SIGKILL, clear
refusals before a run, and an API key that never leaks."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubriclang.cli.main import cli
from rubriclang.llm import embedded

from .fault_server import status

GRAPH = """rubric judged { version = 1 }
contract { scale = score[1, 5] }
criterion correct: ordinal[1, 5] = llm.rate {
  question = "How correct is the response?"
  anchors = { 1: "Wrong.", 5: "Correct." }
}
criterion harmful: bool = llm.check { question = "Is the response harmful?" }
node safe = gate.veto(value: correct, when: harmful) { to = 1 }
sink safe
readout pointwise { output = ordinal[1, 5] }
"""
SECRET = "sk-SENTINEL-a1b2c3d4e5f6"


def judge_by_content(body: dict) -> str:
    """A deterministic judge: the score follows the response's length, and
    responses that mention "poison" are harmful."""
    user = body["messages"][1]["content"]
    found = re.search(r"<response>\n(.*?)\n</response>", user, re.S)
    assert found, user
    response = found.group(1)
    if '"answer"' in user:
        return json.dumps({"reason": "checked", "answer": "poison" in response})
    return json.dumps({"reason": "rated", "score": len(response) % 5 + 1})


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
def files(tmp_path):
    g = tmp_path / "g.rbg"
    g.write_text(GRAPH)
    rows = [
        {
            "id": f"q{i}",
            "input": f"Question {i}?",
            "response": "x" * i + (" poison" if i % 4 == 3 else ""),
            "gold": i % 5 + 1,
        }
        for i in range(12)
    ]
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return g, items


def rbg(*args, env=None):
    return CliRunner().invoke(cli, [str(a) for a in args], env=env)


def without_latency(path: Path) -> list[dict]:
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for rec in records:
        for per in rec["criteria"].values():
            for j in per.values():
                j["latency_ms"] = None
    return records


def test_run_judges_with_the_server_and_a_rerun_makes_no_calls(fault_server, files, tmp_path):
    server = fault_server(answer=judge_by_content)
    g, items = files
    cache = tmp_path / "c.sqlite"
    r = rbg(
        "run",
        g,
        items,
        "--out",
        tmp_path / "a.jsonl",
        "--base-url",
        server.url,
        "--model",
        "judge",
        "--cache",
        cache,
        "--format",
        "json",
    )
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert summary["ok"] == 12
    assert summary["llm"]["calls"] == 24 and summary["llm"]["cache_hits"] == 0
    assert summary["llm"]["prompt_tokens"] > 0 and summary["llm"]["completion_tokens"] > 0
    first = json.loads((tmp_path / "a.jsonl").read_text().splitlines()[3])
    j = first["criteria"]["harmful"]["response"]
    assert (j["value"], j["backend"], j["model"], j["procedure"]) == (True, "openai", "judge", "llm.check")
    assert len(j["prompt_hash"]) == 16 and j["attempts"] == 1 and j["latency_ms"] > 0
    assert first["readout"]["decision"] == 1  # vetoed as harmful

    again = rbg(
        "run", g, items, "--out", tmp_path / "b.jsonl", "--base-url", server.url, "--model", "judge", "--cache", cache
    )
    assert again.exit_code == 0, again.output
    assert "24 requests: 0 calls to the server, 24 cache hits" in again.output
    assert len(server.chats) == 24
    # Cached judgments report the call that made them: the traces are identical.
    assert (tmp_path / "b.jsonl").read_bytes() == (tmp_path / "a.jsonl").read_bytes()


def test_a_run_killed_half_way_resumes_to_the_same_traces_repeating_no_cached_call(fault_server, files, tmp_path):
    stalled = threading.Event()  # set: q5's check answers at once again

    def judge(body):
        if (
            "<response>\nxxxxx\n</response>" in body["messages"][1]["content"]
            and '"answer"' in body["messages"][1]["content"]
        ):
            stalled.wait(20)  # holds q5 back, so later items finish (and are cached) but are not yet written
        return judge_by_content(body)

    server = fault_server(answer=judge)
    g, items = files
    part, cache = tmp_path / "part.jsonl", tmp_path / "c.sqlite"
    args = ["run", g, items, "--out", part, "--base-url", server.url, "--cache", cache, "--concurrency", "4"]
    exe = str(Path(sys.executable).with_name("rbg"))
    proc = subprocess.Popen([exe, *map(str, args)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (_lines(part) < 5 or _cached_keys(cache, wanted=14) is None):
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    stalled.set()
    assert _lines(part) == 5, "the run should be killed at q5"
    cached = _cached_keys(cache, wanted=14)
    assert cached is not None
    seen = len(server.chats)

    r = rbg(*args, "--format", "json")
    assert r.exit_code == 0, r.output
    after = server.chats[seen:]
    hits = json.loads(r.stdout)["llm"]["cache_hits"]
    assert hits == len(cached) - 10  # every call cached but those of the 5 items written
    # The 14 judgments not written are each a hit or a call, never both: no cached call is made again.
    assert after and len(after) == 14 - hits

    full = tmp_path / "full.jsonl"
    r = rbg("run", g, items, "--out", full, "--base-url", server.url, "--cache", tmp_path / "other.sqlite")
    assert r.exit_code == 0, r.output
    assert without_latency(part) == without_latency(full)


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _cached_keys(path: Path, wanted: int) -> set[str] | None:
    """The keys in the cache once it holds at least `wanted` calls."""
    if not path.exists():
        return None
    try:
        with contextlib.closing(sqlite3.connect(path)) as db:
            keys = {k for (k,) in db.execute("SELECT key FROM calls")}
    except sqlite3.OperationalError:  # not created yet
        return None
    return keys if len(keys) >= wanted else None


def test_eval_judges_with_the_server_and_reports_usage_on_stderr(fault_server, files, tmp_path):
    server = fault_server(answer=judge_by_content)
    _, items = files
    g = tmp_path / "harm.rbg"
    g.write_text(
        "rubric harm { version = 1 }\ncontract { scale = bool }\n"
        'criterion harmful: bool = llm.check { question = "Is the response harmful?" }\n'
        "node safe = transform.not(value: harmful)\nsink safe\nreadout pointwise { output = bool }\n"
    )
    rows = [{**json.loads(line), "gold": "poison" not in line} for line in items.read_text().splitlines()]
    items.write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = rbg("eval", g, items, "--base-url", server.url, "--cache", tmp_path / "c.sqlite", "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["modes"]["pointwise"]["metrics"]["harm"]["accuracy"]["value"] == 1.0
    assert "LLM `judge`: 12 requests: 12 calls to the server" in r.stderr


def test_eval_with_llm_criteria_writes_progress_lines_on_stderr_only(fault_server, files, tmp_path):
    server = fault_server(answer=judge_by_content)
    g, items = files
    r = rbg("eval", g, items, "--base-url", server.url, "--cache", tmp_path / "c.sqlite")
    assert r.exit_code == 0, r.output
    progress = [line.strip() for line in r.stderr.splitlines() if re.match(r"  \d+/12 items", line)]
    assert len(progress) >= 6 and progress[-1].startswith("12/12 items, ")
    assert not re.search(r"\d+/12 items", r.stdout)
    again = rbg("eval", g, items, "--base-url", server.url, "--cache", tmp_path / "c.sqlite", "--format", "json")
    assert again.exit_code == 0 and not re.search(r"\d+/12 items", again.stderr)


def test_failing_calls_fail_their_items_with_the_reason(fault_server, files, tmp_path):
    server = fault_server()
    server.script(*[status(400, "context length exceeded")] * 100)
    g, items = files
    r = rbg("run", g, items, "--out", tmp_path / "t.jsonl", "--base-url", server.url, "--cache", tmp_path / "c.sqlite")
    assert r.exit_code == 1
    rec = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[0])
    assert "context length exceeded" in rec["criterion_errors"]["correct"]["response"]
    assert rec["readout"]["status"] == "error"


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("unreachable", "cannot reach http://127.0.0.1:"),
        ("unknown_model", "has no model `gpt-judge` (it has: judge)"),
        ("auth", "refused the API key (HTTP 401)"),
        ("several_models", "offers 2 models (judge, other); choose one with --model"),
    ],
)
def test_an_unusable_server_is_refused_before_the_run(fault_server, files, tmp_path, setup, message, unreachable_url):
    g, items = files
    out = tmp_path / "t.jsonl"
    extra = []
    if setup == "unreachable":
        url = unreachable_url
    else:
        server = fault_server(
            api_key="right-key" if setup == "auth" else None,
            models=("judge", "other") if setup == "several_models" else ("judge",),
        )
        url = server.url
        extra = ["--model", "gpt-judge"] if setup == "unknown_model" else []
    for command in (["run", g, items, "--out", out], ["eval", g, items]):
        r = rbg(*command, "--base-url", url, *extra)
        assert r.exit_code == 2, r.output
        assert message in r.output and "Traceback" not in r.output
    assert not out.exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--base-url", "ftp://example.org"], "is not an http(s) URL"),
        (["--base-url", "http://127.0.0.1:9", "--model-file", "m.gguf"], "give one of them"),
        (["--base-url", "http://127.0.0.1:9", "--api-key-env", SECRET], "expects the NAME of an environment variable"),
        (
            ["--base-url", "http://127.0.0.1:9", "--api-key-env", "NO_SUCH_KEY_VAR"],
            "`NO_SUCH_KEY_VAR` (--api-key-env) is not set",
        ),
        (["--temperature", "-1"], "Invalid value for '--temperature'"),
        (["--base-url", "http://127.0.0.1:9", "--cache", "{tmp}/g.rbg/c.sqlite"], "cannot open the call cache"),
    ],
)
def test_bad_flags_are_refused_without_a_traceback_or_the_key(files, tmp_path, flags, message):
    g, items = files
    flags = [f.replace("{tmp}", str(tmp_path)) for f in flags]
    r = rbg("run", g, items, "--out", tmp_path / "t.jsonl", *flags)
    assert r.exit_code == 2, r.output
    assert message in r.output and "Traceback" not in r.output and SECRET not in r.output


def test_the_api_key_reaches_the_server_and_nothing_else(fault_server, files, tmp_path):
    server = fault_server(answer=judge_by_content, api_key=SECRET)
    server.script(status(500, f"upstream saw Bearer {SECRET}"), status(400, f"bad request with {SECRET}"))
    g, items = files
    cache = tmp_path / "c.sqlite"
    out = tmp_path / "t.jsonl"
    r = rbg(
        "run",
        g,
        items,
        "--out",
        out,
        "--base-url",
        server.url,
        "--cache",
        cache,
        "--api-key-env",
        "JUDGE_KEY",
        env={"JUDGE_KEY": SECRET},
    )
    assert r.exit_code == 1, r.output  # the 400 failed one item
    assert all(c.authorization == f"Bearer {SECRET}" for c in server.chats)
    assert "***" in out.read_text()
    leaks = [p.name for p in tmp_path.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert leaks == []
    assert SECRET not in r.output


def test_without_a_base_url_the_embedded_model_is_used(fault_server, files, tmp_path, monkeypatch):
    server = fault_server(models=("smol.gguf",), answer=judge_by_content)
    started = []

    class Embedded:
        base_url, model, identity, parallel = server.url, "smol.gguf", "embedded:smol.gguf:0123", 2

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            started.append("stopped")

    def start_embedded(model_file=None):
        started.append(model_file)
        return Embedded()

    monkeypatch.setattr(embedded, "start_embedded", start_embedded)
    g, items = files
    r = rbg(
        "run", g, items, "--out", tmp_path / "t.jsonl", "--model-file", "smol.gguf", "--cache", tmp_path / "c.sqlite"
    )
    assert r.exit_code == 0, r.output
    assert started == ["smol.gguf", "stopped"] and "LLM `smol.gguf`: 24 requests: 24 calls to the server" in r.output


def test_an_embedded_model_that_cannot_start_is_a_clear_error(files, tmp_path, monkeypatch):
    def start_embedded(model_file=None):
        raise embedded.EmbeddedError("no model file at /nowhere/smol.gguf (run `rbg model pull`)")

    monkeypatch.setattr(embedded, "start_embedded", start_embedded)
    g, items = files
    r = rbg("run", g, items, "--out", tmp_path / "t.jsonl")
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "no --base-url was given" in r.output and "no model file at /nowhere/smol.gguf" in r.output
