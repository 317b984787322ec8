"""`--estimate` of `rbg run` and `rbg audit`: calls and tokens counted on
the rendered requests without calling a model, checked against what a
logging loopback server then receives (the same chars/4 rule on both
sides); prices from the project config; the report's usage per phase."""

from __future__ import annotations

import json
import re

from rubriclang.llm.estimate import count_tokens

from .helpers import report

CHECK_JUDGE = """\
rubric checked { version = 1 }
contract { scale = bool }
criterion correct: bool = llm.check {
  question = "Is the response's final answer right?"
}
criterion clear: bool = llm.check {
  question = "Is the response clear?"
}
node both = reduce.all(inputs: [correct, clear])
sink both
readout pointwise { output = bool }
"""


def _answer(role, body):
    return json.dumps({"reason": "scripted", "answer": True})


def _received(server) -> tuple[int, int]:
    judged = server.calls("judge")
    return len(judged), sum(count_tokens(b["messages"]) for b in judged)


def _within(estimated: int, received: int, share: float = 0.02) -> bool:
    return abs(estimated - received) <= share * received


def test_run_estimate_matches_what_the_server_then_receives(rbg, scripted, tmp_path, items_file):
    server = scripted(_answer)
    graph = tmp_path / "judge.rbg"
    graph.write_text(CHECK_JUDGE)
    est = rbg(
        "run",
        graph,
        items_file,
        "--out",
        tmp_path / "t.jsonl",
        "--estimate",
        "--format",
        "json",
        "--base-url",
        server.url,
        "--model",
        "scripted",
        "--max-tokens",
        "100",
    )
    assert est.exit_code == 0, est.output
    assert server.requests == [] and not (tmp_path / "t.jsonl").exists()  # nothing called, nothing written
    phase = json.loads(est.output)["phases"]["judge"]
    assert phase["calls"] == 12 * 2 and phase["completion_tokens"] == 12 * 2 * 100 and phase["usd"] is None
    run = rbg(
        "run",
        graph,
        items_file,
        "--out",
        tmp_path / "t.jsonl",
        "--no-cache",
        "--base-url",
        server.url,
        "--model",
        "scripted",
        "--max-tokens",
        "100",
    )
    assert run.exit_code == 0, run.output
    calls, tokens = _received(server)
    assert calls == phase["calls"]
    assert _within(phase["prompt_tokens"], tokens)


def test_prices_in_the_project_config_turn_tokens_into_dollars(rbg, scripted, tmp_path, items_file):
    server = scripted(_answer)
    graph = tmp_path / "judge.rbg"
    graph.write_text(CHECK_JUDGE)
    (tmp_path / "rubriclang.toml").write_text('[prices."scripted"]\nprompt = 2.0\ncompletion = 10.0\n')
    est = rbg(
        "run",
        graph,
        items_file,
        "--out",
        tmp_path / "t.jsonl",
        "--estimate",
        "--format",
        "json",
        "--base-url",
        server.url,
        "--model",
        "scripted",
        "--max-tokens",
        "100",
    )
    phase = json.loads(est.output)["phases"]["judge"]
    assert phase["usd"] == round((phase["prompt_tokens"] * 2.0 + phase["completion_tokens"] * 10.0) / 1e6, 6)


def test_a_malformed_prices_table_is_an_error_at_its_line(rbg, tmp_path, items_file):
    graph = tmp_path / "judge.rbg"
    graph.write_text(CHECK_JUDGE)
    (tmp_path / "rubriclang.toml").write_text('# prices\n[prices."m"]\nprompt = "cheap"\ncompletion = 1\n')
    result = rbg(
        "run",
        graph,
        items_file,
        "--out",
        tmp_path / "t.jsonl",
        "--estimate",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
    )
    assert result.exit_code == 2
    assert "rubriclang.toml:3" in result.output and "USD per million tokens" in result.output


def _llm_suite(tmp_path, items_file, url: str) -> str:
    (tmp_path / "judge.rbg").write_text(CHECK_JUDGE)
    path = tmp_path / "suite.toml"
    path.write_text(
        f'items = "{items_file}"\nrepeats = 2\noperators = ["typo_noise", "partial_completion"]\n'
        f'[judge]\ngraph = "judge.rbg"\nbase_url = "{url}"\nmodel = "scripted"\ntemperature = 0.7\nmax_tokens = 64\n'
        "max_retries = 0\n"
    )
    return path


def test_audit_estimate_matches_the_judge_calls_of_the_audit_and_the_report_records_usage(
    rbg, scripted, tmp_path, items_file
):
    server = scripted(_answer)
    path = _llm_suite(tmp_path, items_file, server.url)
    est = rbg("audit", path, "--estimate", "--format", "json")
    assert est.exit_code == 0, est.output
    assert server.requests == []
    doc = json.loads(est.output)
    assert doc["phases"]["generate"]["calls"] == doc["phases"]["validate"]["calls"] == 0  # rule operators only
    judge = doc["phases"]["judge"]
    result = rbg("audit", path, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    calls, tokens = _received(server)
    assert judge["calls"] == calls
    assert _within(judge["prompt_tokens"], tokens)
    assert judge["completion_tokens"] == calls * 64
    # The report's usage is what servers were sent (this server reports 1
    # prompt and 1 completion token a call).
    usage = report(tmp_path / "out")["usage"]
    reused = usage["judge"]["reused"]  # requests an identical one answered (docs/audit.md)
    assert usage["judge"] == {
        "calls": calls,
        "prompt_tokens": calls,
        "completion_tokens": calls,
        "reused": reused,
        "usd": None,
    }
    # A rerun answered from the folder and the cache adds nothing.
    first = (tmp_path / "out" / "report.json").read_bytes()
    assert rbg("audit", path, "--out", tmp_path / "out").exit_code == 0
    assert (tmp_path / "out" / "report.json").read_bytes() == first


def _unreadable(role, body):
    # Never the {"answer": ...} the judge asks for: every reply is asked again.
    return "Let me think about that."


def test_the_estimates_bound_holds_when_every_reply_is_unreadable(rbg, scripted, tmp_path, items_file):
    server = scripted(_unreadable)
    path = _llm_suite(tmp_path, items_file, server.url)
    doc = json.loads(rbg("audit", path, "--estimate", "--format", "json").output)
    judge = doc["phases"]["judge"]
    most = judge["at_most"]
    # Expected: one ask a call; at most: the first ask and both re-asks of the judge's parse retries.
    assert most["calls"] == 3 * judge["calls"] and most["completion_tokens"] == most["calls"] * 64
    assert most["prompt_tokens"] > 3 * judge["prompt_tokens"]  # each re-ask carries the longest reply and a note
    assert any("transport retries" in n for n in doc["notes"])
    rbg("audit", path, "--out", tmp_path / "out")
    calls, tokens = _received(server)
    # The run asked every unreadable reply again: 3 asks a call, as bounded.
    assert judge["calls"] < calls == most["calls"]
    assert tokens <= most["prompt_tokens"]
    usage = report(tmp_path / "out")["usage"]["judge"]
    assert usage["calls"] <= most["calls"] and usage["completion_tokens"] <= most["completion_tokens"]


def test_the_estimates_text_labels_the_expected_figures_and_the_bound(rbg, scripted, tmp_path, items_file):
    path = _llm_suite(tmp_path, items_file, scripted(_answer).url)
    text = rbg("audit", path, "--estimate").output
    assert "expected: every reply readable the first time" in text
    assert "at most:  every unreadable reply asked again" in text
    lines = text.splitlines()
    i = next(k for k, line in enumerate(lines) if line.strip().startswith("judge"))
    judged = re.search(r"judge +expected ([\d,]+) calls", lines[i])
    at_most = re.search(r"^ +at most +([\d,]+) calls", lines[i + 1])
    assert judged and at_most, text
    expected = int(judged.group(1).replace(",", ""))
    most = int(at_most.group(1).replace(",", ""))
    assert most == 3 * expected > 0
