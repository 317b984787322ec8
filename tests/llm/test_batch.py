"""`rbg batch export|import`: the request file is what a live run sends, and
importing a results file judges from the cache with no HTTP call at all."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rubriclang.cli.main import cli
from rubriclang.llm.cache import CallCache

GRAPH = """\
rubric batch_demo { version = 1 }
contract { scale = score[1, 5] }
criterion correct: ordinal[1, 5] = llm.rate {
  question = "How correct is the response?"
  anchors = { 1: "Wrong.", 5: "Correct." }
}
criterion polite: bool = llm.check { question = "Is the response polite?" }
criterion long: bool = rule.length { over = 12 }
node polite_score = transform.map(value: polite) { values = { true: 5, false: 1 } }
node quality = reduce.mean(inputs: [correct, polite_score])
node capped = gate.cap(value: quality, when: long) { max = 4 }
sink capped
readout pointwise { output = ordinal[1, 5] }
readout pairwise { epsilon = 0.25, resolve = tie }
"""

# Ids that a naive `item:candidate:criterion` custom_id would confuse.
ITEMS: list[dict[str, Any]] = [
    {"id": 'q"1', "input": "What is 2 + 2?", "response": "It is 4."},
    {"id": "a:b,c", "input": "Say hello.", "response": "Hello there, how can I help you today with anything at all?"},
    {"id": "ünï", "input": "Name a colour.", "response": "Blue."},
    {"id": "pair", "input": "Greet me.", "responses": {"left": "Hi!", "right": "Go away."}},
]
MODEL = "judge"


def judge_answer(body: dict) -> str:
    """A deterministic "model": the answer follows from the prompt."""
    digest = int(hashlib.sha256(body["messages"][-1]["content"].encode()).hexdigest(), 16)
    if body["response_format"]["json_schema"]["name"] == "llm_rate":
        return json.dumps({"reason": "Judged.", "score": digest % 5 + 1})
    return json.dumps({"reason": "Judged.", "answer": digest % 2 == 0})


@pytest.fixture
def files(tmp_path):
    graph = tmp_path / "g.rbg"
    graph.write_text(GRAPH)
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in ITEMS))
    return graph, items


def invoke(*args: str | Path):
    return CliRunner().invoke(cli, [str(a) for a in args])


def export(graph, items, out, *extra):
    r = invoke("batch", "export", graph, items, "-o", out, "--model", MODEL, *extra)
    assert r.exit_code == 0, r.output
    return [json.loads(line) for line in Path(out).read_text("utf-8").splitlines()]


def result_line(request: dict, n: int, text: str | None = None) -> dict:
    body = request["body"]
    return {
        "id": f"batch_req_{n}",
        "custom_id": request["custom_id"],
        "response": {
            "status_code": 200,
            "request_id": f"req_{n}",
            "body": {
                "id": f"chatcmpl-{n}",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text or judge_answer(body)},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
            },
        },
        "error": None,
    }


def write_results(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


def decisions(traces: Path) -> dict:
    out = {}
    for line in traces.read_text("utf-8").splitlines():
        rec = json.loads(line)
        values = {c: {k: v["value"] for k, v in j.items()} for c, j in rec["criteria"].items()}
        out[rec["item"]] = (rec["readout"], values)
    return out


def test_export_writes_a_batch_request_per_llm_call(files, tmp_path):
    graph, items = files
    lines = export(graph, items, tmp_path / "requests.jsonl")
    # 2 LLM criteria x (3 pointwise candidates + 2 pairwise ones); the rule makes no call.
    assert len(lines) == 10
    assert all(line["method"] == "POST" and line["url"] == "/v1/chat/completions" for line in lines)
    ids = [json.loads(line["custom_id"]) for line in lines]
    assert len({line["custom_id"] for line in lines}) == 10
    assert {(i[0], i[1]) for i in ids} == {
        ('q"1', "response"),
        ("a:b,c", "response"),
        ("ünï", "response"),
        ("pair", "left"),
        ("pair", "right"),
    }
    assert {i[2] for i in ids} == {"correct", "polite"}
    assert all(line["body"]["model"] == MODEL for line in lines)


def test_exported_bodies_are_what_rbg_run_sends(files, tmp_path, fault_server):
    graph, items = files
    lines = export(graph, items, tmp_path / "requests.jsonl", "--max-tokens", "300", "--seed", "7")
    server = fault_server(answer=judge_answer, models=(MODEL,))
    r = invoke(
        "run",
        graph,
        items,
        "--out",
        tmp_path / "live.jsonl",
        "--base-url",
        server.url,
        "--model",
        MODEL,
        "--no-cache",
        "--max-tokens",
        "300",
        "--seed",
        "7",
    )
    assert r.exit_code == 0, r.output

    def canonical(body):
        return json.dumps(body, sort_keys=True, ensure_ascii=False)

    assert sorted(canonical(c.body) for c in server.chats) == sorted(canonical(line["body"]) for line in lines)


def test_import_judges_from_the_results_without_any_call(files, tmp_path, fault_server, unreachable_url):
    graph, items = files
    requests = export(graph, items, tmp_path / "requests.jsonl")
    results = write_results(tmp_path / "results.jsonl", [result_line(req, n) for n, req in enumerate(requests)])
    cache = tmp_path / "calls.sqlite"
    traces = tmp_path / "batch.jsonl"
    # A server that cannot be reached: any call would fail the judgment.
    r = invoke(
        "batch",
        "import",
        graph,
        items,
        results,
        "--out",
        traces,
        "--model",
        MODEL,
        "--base-url",
        f"{unreachable_url}/v1",
        "--cache",
        cache,
        "--format",
        "json",
    )
    assert r.exit_code == 0, r.output
    summary = json.loads(r.output)
    assert summary["stored"] == 10 and summary["further_calls"] == 0
    assert summary["judged"] == 4 and summary["error"] == 0

    # The same decisions and judgments as a live run whose server answers alike.
    server = fault_server(answer=judge_answer, models=(MODEL,))
    live = tmp_path / "live.jsonl"
    r = invoke("run", graph, items, "--out", live, "--base-url", server.url, "--model", MODEL, "--no-cache")
    assert r.exit_code == 0, r.output
    assert decisions(traces) == decisions(live)


def test_import_into_a_log_writes_progress_lines_on_stderr(files, tmp_path):
    graph, items = files
    requests = export(graph, items, tmp_path / "requests.jsonl")
    results = write_results(tmp_path / "results.jsonl", [result_line(req, n) for n, req in enumerate(requests)])
    r = invoke(
        "batch",
        "import",
        graph,
        items,
        results,
        "--out",
        tmp_path / "t.jsonl",
        "--model",
        MODEL,
        "--identity",
        "vllm-batch",
        "--cache",
        tmp_path / "calls.sqlite",
    )
    assert r.exit_code == 0, r.output
    progress = [
        line.split(",")[0].strip() for line in r.stderr.splitlines() if line.startswith("  ") and "/4 items" in line
    ]
    assert progress == ["1/4 items", "2/4 items", "3/4 items", "4/4 items"]
    assert "/4 items" not in r.stdout


def test_imported_results_answer_a_later_live_run_from_the_cache(files, tmp_path, fault_server):
    graph, items = files
    server = fault_server(answer=judge_answer, models=(MODEL,))
    requests = export(graph, items, tmp_path / "requests.jsonl")
    results = write_results(tmp_path / "results.jsonl", [result_line(req, n) for n, req in enumerate(requests)])
    cache = tmp_path / "calls.sqlite"
    r = invoke(
        "batch",
        "import",
        graph,
        items,
        results,
        "--out",
        tmp_path / "batch.jsonl",
        "--model",
        MODEL,
        "--base-url",
        server.url,
        "--cache",
        cache,
    )
    assert r.exit_code == 0, r.output
    assert server.chats == []
    r = invoke(
        "run",
        graph,
        items,
        "--out",
        tmp_path / "live.jsonl",
        "--base-url",
        server.url,
        "--model",
        MODEL,
        "--cache",
        cache,
    )
    assert r.exit_code == 0, r.output
    assert server.chats == []  # every key the live backend looked up was filled by the import


def test_missing_results_are_listed_by_custom_id_before_judging(files, tmp_path):
    graph, items = files
    requests = export(graph, items, tmp_path / "requests.jsonl")
    failed = dict(
        result_line(requests[1], 1), response=None, error={"code": "rate_limit", "message": "Too many requests"}
    )
    rows = [failed] + [result_line(req, n) for n, req in enumerate(requests) if n > 2]
    results = write_results(tmp_path / "results.jsonl", rows)
    traces = tmp_path / "batch.jsonl"
    r = invoke(
        "batch",
        "import",
        graph,
        items,
        results,
        "--out",
        traces,
        "--model",
        MODEL,
        "--identity",
        "vllm-batch",
        "--cache",
        tmp_path / "calls.sqlite",
    )
    assert r.exit_code == 2
    assert "the results answer 7 of 10 calls" in r.output
    for req, why in [
        (requests[0], "not in the results"),
        (requests[1], "Too many requests"),
        (requests[2], "not in the results"),
    ]:
        assert f"{req['custom_id']}  ({why})" in r.output
    assert not traces.exists()
    assert "Traceback" not in r.output


def test_results_of_other_requests_are_not_taken_for_these(files, tmp_path):
    graph, items = files
    requests = export(graph, items, tmp_path / "requests.jsonl")
    results = write_results(tmp_path / "results.jsonl", [result_line(req, n) for n, req in enumerate(requests)])
    # Imported with another temperature: every request body differs from the exported one.
    r = invoke(
        "batch",
        "import",
        graph,
        items,
        results,
        "--out",
        tmp_path / "t.jsonl",
        "--model",
        MODEL,
        "--identity",
        "vllm-batch",
        "--cache",
        tmp_path / "calls.sqlite",
        "--temperature",
        "0.5",
    )
    assert r.exit_code == 2
    assert "the results answer 0 of 10 calls" in r.output
    assert "10 results answer no current request" in r.output


def test_an_unreadable_answer_fails_its_judgment_instead_of_calling(files, tmp_path, unreachable_url):
    graph, items = files
    requests = export(graph, items, tmp_path / "requests.jsonl")
    rows = [result_line(req, n, "I would rather not say." if n == 0 else None) for n, req in enumerate(requests)]
    results = write_results(tmp_path / "results.jsonl", rows)
    traces = tmp_path / "batch.jsonl"
    r = invoke(
        "batch",
        "import",
        graph,
        items,
        results,
        "--out",
        traces,
        "--model",
        MODEL,
        "--base-url",
        f"{unreachable_url}/v1",
        "--cache",
        tmp_path / "calls.sqlite",
        "--format",
        "json",
    )
    assert r.exit_code == 1
    assert json.loads(r.output)["further_calls"] == 1
    item, _, criterion, _ = json.loads(requests[0]["custom_id"])
    rec = next(json.loads(x) for x in traces.read_text("utf-8").splitlines() if json.loads(x)["item"] == item)
    assert "makes no calls" in rec["criteria"][criterion]["response"]["error"]


def test_the_cache_is_keyed_by_the_given_identity(files, tmp_path):
    graph, items = files
    requests = export(graph, items, tmp_path / "requests.jsonl")
    results = write_results(tmp_path / "results.jsonl", [result_line(req, n) for n, req in enumerate(requests)])
    cache_path = tmp_path / "calls.sqlite"
    r = invoke(
        "batch",
        "import",
        graph,
        items,
        results,
        "--out",
        tmp_path / "t.jsonl",
        "--model",
        MODEL,
        "--identity",
        "embedded:model.gguf:0123456789abcdef",
        "--cache",
        cache_path,
    )
    assert r.exit_code == 0, r.output
    cache = CallCache(str(cache_path))
    try:
        assert cache.stats()["entries"] == 10
        servers = cache._conn().execute("SELECT DISTINCT server FROM calls").fetchall()
    finally:
        cache.close()
    assert servers == [("embedded:model.gguf:0123456789abcdef",)]


def test_import_needs_the_server_identity(files, tmp_path):
    graph, items = files
    results = write_results(tmp_path / "results.jsonl", [])
    r = invoke("batch", "import", graph, items, results, "--out", tmp_path / "t.jsonl", "--model", MODEL)
    assert r.exit_code == 2
    assert "--base-url" in r.output and "--identity" in r.output


def test_a_graph_without_llm_criteria_has_nothing_to_export(tmp_path):
    graph = tmp_path / "rules.rbg"
    graph.write_text(
        "rubric rules { version = 1 }\ncontract { scale = bool }\n"
        "criterion long: bool = rule.length { over = 3 }\nsink long\nreadout pointwise { output = bool }\n"
    )
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps(ITEMS[0]) + "\n")
    r = invoke("batch", "export", graph, items, "-o", tmp_path / "r.jsonl", "--model", MODEL)
    assert r.exit_code == 2
    assert "no LLM criteria" in r.output
    assert not (tmp_path / "r.jsonl").exists()


def test_a_malformed_result_line_is_named(files, tmp_path):
    graph, items = files
    results = tmp_path / "results.jsonl"
    results.write_text('{"custom_id": "x", "response": {"status_code": 200, "body": {"choices": []}}}\n')
    r = invoke(
        "batch", "import", graph, items, results, "--out", tmp_path / "t.jsonl", "--model", MODEL, "--identity", "x"
    )
    assert r.exit_code == 2
    assert f"{results}:1" in r.output and "not a chat completion" in r.output
