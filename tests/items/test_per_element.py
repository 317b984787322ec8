"""Judging per element (`each ELEMENT in FIELD`): a criterion judged once per
tool call, document or turn gives a typed list that only list reducers read;
each element's judgment is traced under its stable key, and replay
recomputes the decisions from the trace alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from llm.fault_server import FaultServer

from rubriclang.catalog import load_catalog
from rubriclang.checker import check_source
from rubriclang.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
TAU_BENCH = ROOT / "examples" / "tau_bench" / "items.jsonl"

CALLS = """rubric calls_valid {{ version = 1 }}
contract {{ scale = bool }}
item {{ response: conversation }}
criterion args_ok: bool{optional} = rule.json_schema each tool_call in response {{
  schema = {schema}
  arguments = true{extra}
}}
node all_ok = reduce.{reducer}(inputs: [args_ok])
{tail}
readout pointwise {{ output = bool }}
"""


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def rbg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _graph(tmp_path: Path, schema='{ type: "object" }', optional="", extra="", reducer="all", tail="sink all_ok"):
    path = tmp_path / "calls.rbg"
    text = CALLS.format(schema=schema, optional=optional, extra=extra, reducer=reducer, tail=tail)
    path.write_text(text, encoding="utf-8")
    return path


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _call_ids(messages: list[dict]) -> list[str]:
    return [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or ()]


def test_every_tool_call_of_tau_bench_is_judged_and_traced_under_its_call_id(tmp_path):
    graph = _graph(tmp_path)
    out = tmp_path / "t.jsonl"
    r = rbg("run", graph, TAU_BENCH, "--out", out)
    assert r.exit_code == 0, r.output
    items = [json.loads(line) for line in TAU_BENCH.read_text(encoding="utf-8").splitlines()]
    records = _records(out)
    assert len(records) == len(items) == 32
    empty = 0
    for item, rec in zip(items, records, strict=True):
        judged = rec["criteria"]["args_ok"]["response"]
        ids = _call_ids(item["response"])
        assert [e["key"] for e in judged["elements"]] == ids
        assert judged["value"] == [e["value"] for e in judged["elements"]] == [True] * len(ids)
        # No call: no value to reduce, so the verdict abstains (all of nothing is not true).
        if ids:
            assert rec["readout"]["decision"] is True
        else:
            empty += 1
            assert rec["readout"]["status"] == "abstain"
    assert 0 < empty < len(items)
    replayed = rbg("replay", graph, out)
    assert replayed.exit_code == 0, replayed.output
    assert "every decision is identical" in replayed.output


def test_per_element_traces_are_byte_identical_whatever_the_concurrency(tmp_path):
    graph = _graph(tmp_path, schema='{ type: "object", required: ["reservation_id"] }')
    one, many = tmp_path / "one.jsonl", tmp_path / "many.jsonl"
    assert rbg("run", graph, TAU_BENCH, "--out", one, "--concurrency", 1).exit_code == 0
    assert rbg("run", graph, TAU_BENCH, "--out", many, "--concurrency", 16).exit_code == 0
    assert one.read_bytes() == many.read_bytes()
    values = [v for rec in _records(one) for v in rec["criteria"]["args_ok"]["response"]["value"]]
    assert True in values and False in values  # calls with and without a reservation id


def test_a_failed_element_fails_the_criterion_naming_its_key(tmp_path):
    graph = _graph(tmp_path, schema='{ type: "no such type" }')
    out = tmp_path / "t.jsonl"
    r = rbg("run", graph, TAU_BENCH, "--out", out)
    assert r.exit_code == 1, r.output
    rec = next(rec for rec in _records(out) if rec["criteria"]["args_ok"]["response"]["elements"])
    judged = rec["criteria"]["args_ok"]["response"]
    first = judged["elements"][0]
    assert judged["value"] is None and first["error"]
    assert f"element {first['key']!r}" in judged["error"]
    assert rec["readout"]["status"] == "error"


def test_an_abstaining_criterion_keeps_a_failed_element_absent_and_the_reducer_skips_it(tmp_path):
    graph = _graph(
        tmp_path,
        schema='{ type: "no such type" }',
        optional="?",
        extra="\n  on_error = abstain",
        tail="node decided = transform.default(value: all_ok) { value = false }\nsink decided",
    )
    out = tmp_path / "t.jsonl"
    r = rbg("run", graph, TAU_BENCH, "--out", out)
    assert r.exit_code == 0, r.output
    rec = next(rec for rec in _records(out) if rec["criteria"]["args_ok"]["response"]["elements"])
    judged = rec["criteria"]["args_ok"]["response"]
    assert judged["error"] is None
    assert judged["value"] == [None] * len(judged["elements"])
    assert rec["readout"]["decision"] is False  # every element absent: all_ok absent, then defaulted


DOCS = [
    {"id": "d1", "text": "The Eiffel Tower is in Rome."},
    {"id": "d2", "title": "Paris", "text": "The Eiffel Tower is in Paris."},
    {"id": "d3", "text": "Bananas are yellow."},
]
GROUNDED = """rubric grounded { version = 1 }
contract { scale = bool }
item { documents: documents }
criterion supported_by: bool = llm.check each document in documents {
  prompt = \"\"\"
## user
{{#documents}}Document {{id}}: {{text}}{{/documents}}
Answer: {{response}}
Does this document support the answer? Reply as {"answer": true}.
\"\"\"
}
node supported = reduce.any(inputs: [supported_by])
sink supported
readout pointwise { output = bool }
"""


def _supports_paris(body: dict) -> str:
    return json.dumps({"answer": "Tower is in Paris" in json.dumps(body)})


def test_an_llm_criterion_judges_each_document_alone_and_any_reduces_them(tmp_path):
    graph = tmp_path / "grounded.rbg"
    graph.write_text(GROUNDED, encoding="utf-8")
    items = tmp_path / "items.jsonl"
    rows = [{"id": "q1", "input": "Where is the Eiffel Tower?", "response": "In Paris.", "documents": DOCS}]
    items.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "t.jsonl"
    with FaultServer(answer=_supports_paris) as server:
        r = rbg("run", graph, items, "--out", out, "--base-url", server.url, "--no-cache")
        prompts = [json.dumps(c.body) for c in server.chats]
    assert r.exit_code == 0, r.output
    assert len(prompts) == 3
    for doc in DOCS:  # one prompt per document, showing it alone
        shown = [p for p in prompts if f"Document {doc['id']}:" in p]
        assert len(shown) == 1 and all(f"Document {d['id']}:" not in shown[0] for d in DOCS if d is not doc)
    (rec,) = _records(out)
    judged = rec["criteria"]["supported_by"]["response"]
    assert [e["key"] for e in judged["elements"]] == ["d1", "d2", "d3"]
    assert judged["value"] == [False, True, False]
    assert len({e["prompt_hash"] for e in judged["elements"]}) == 3
    assert rec["readout"]["decision"] is True
    replayed = rbg("replay", graph, out)
    assert replayed.exit_code == 0 and "every decision is identical" in replayed.output, replayed.output


def _list_refusals(operator: str, tested: str) -> list[str]:
    """The RB201 messages for a node of `operator` with a per-element
    criterion in port `tested` and fitting criteria in the others."""
    op = load_catalog().operators[operator]
    ports = []
    for port in op.ports:
        ref = "each_ok" if port.name == tested else "flag" if ({"bool", "any"} & set(port.accepts)) else "points"
        ports.append(f"{port.name}: [{ref}]" if port.variadic else f"{port.name}: {ref}")
    source = f"""rubric r {{ version = 1 }}
contract {{ scale = bool }}
item {{ response: conversation }}
criterion each_ok: bool = rule.json_valid each tool_call in response {{ arguments = true }}
criterion flag: bool = rule.json_valid {{ arguments = true }}
criterion points: ordinal[1, 5] = human.annotation {{ key = "points" }}
node n = {operator}({", ".join(ports)})
sink flag
readout pointwise {{ output = bool }}
"""
    return [d.message for d in check_source(source, "r.rbg").diagnostics if d.code == "RB201"]


def test_every_operator_port_that_takes_no_list_refuses_a_per_element_criterion():
    refused = 0
    for op in load_catalog().operators.values():
        for port in op.ports:
            if port.lists or not ({"bool", "any"} & set(port.accepts)):
                continue
            messages = _list_refusals(op.name, port.name)
            assert any("each_ok: list[bool]" in m for m in messages), (op.name, port.name, messages)
            refused += 1
    assert refused >= 5


def test_the_list_reducers_are_the_documented_ones():
    takes_lists = sorted(op.name for op in load_catalog().operators.values() if any(p.lists for p in op.ports))
    assert takes_lists == ["reduce.all", "reduce.any", "reduce.fraction", "reduce.max", "reduce.mean", "reduce.min"]


def test_a_record_whose_value_is_not_its_elements_values_is_refused_at_its_line(tmp_path):
    graph = _graph(tmp_path)
    out = tmp_path / "t.jsonl"
    assert rbg("run", graph, TAU_BENCH, "--out", out).exit_code == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    index = next(i for i, line in enumerate(lines) if '"elements":[{' in line)
    rec = json.loads(lines[index])
    rec["criteria"]["args_ok"]["response"]["elements"][0]["value"] = False
    lines[index] = json.dumps(rec, sort_keys=True, separators=(",", ":"))
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = rbg("replay", graph, out)
    assert r.exit_code == 2
    assert f"{out}:{index + 1}" in r.output and "not the list of its elements' values" in r.output


def test_diff_names_a_change_of_the_elements_a_criterion_is_judged_on(tmp_path):
    old = _graph(tmp_path)
    new = tmp_path / "new.rbg"
    new.write_text(old.read_text("utf-8").replace("each tool_call in", "each assistant_turn in"), encoding="utf-8")
    r = rbg("diff", old, new)
    assert "~ each: tool_call in response -> assistant_turn in response" in r.output, r.output
    assert "No semantic changes" not in r.output


def test_the_audit_localizes_a_moved_per_element_criterion_over_repeats(tmp_path):
    from rubriclang.audit.localize import Localizer

    graph = check_source(
        CALLS.format(schema='{ type: "object" }', optional="", extra="", reducer="all", tail="sink all_ok"), "c.rbg"
    ).graph
    rec = {"candidates": ["response"], "operators": {"all_ok": {"response": True}}}

    def trace(values: list, verdict: bool) -> dict:
        judged = {"value": values, "error": None, "elements": [{"key": i, "value": v} for i, v in enumerate(values)]}
        return {**rec, "criteria": {"args_ok": {"response": judged}}, "operators": {"all_ok": {"response": verdict}}}

    assert graph is not None
    loc = Localizer(graph)
    base = loc.summaries([trace([True, True], True), trace([True, True], True), trace([True, False], False)])
    assert base["args_ok"]["response"] == [True, True]
    moved = loc.compare(base, loc.summaries([trace([True, False], False)]))["moved"]
    assert [m["node"] for m in moved] == ["args_ok", "all_ok"]
    assert moved[0]["perturbed"] == [True, False]


def _result(request: dict, n: int) -> dict:
    answer = json.dumps({"answer": "Tower is in Paris" in json.dumps(request["body"])})
    choice = {"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}
    body = {"id": f"c{n}", "object": "chat.completion", "model": request["body"]["model"], "choices": [choice]}
    return {"id": f"b{n}", "custom_id": request["custom_id"], "response": {"status_code": 200, "body": body}}


def test_batch_export_asks_once_per_element_and_import_judges_from_those_answers(tmp_path):
    graph = tmp_path / "grounded.rbg"
    graph.write_text(GROUNDED, encoding="utf-8")
    items = tmp_path / "items.jsonl"
    row = {"id": "q1", "input": "Where is the Eiffel Tower?", "response": "In Paris.", "documents": DOCS}
    items.write_text(json.dumps(row) + "\n", encoding="utf-8")
    requests_file = tmp_path / "requests.jsonl"
    r = rbg("batch", "export", graph, items, "-o", requests_file, "--model", "judge")
    assert r.exit_code == 0, r.output
    requests = [json.loads(line) for line in requests_file.read_text("utf-8").splitlines()]
    assert len(requests) == len(DOCS)
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(_result(q, n)) + "\n" for n, q in enumerate(requests)), encoding="utf-8")
    out = tmp_path / "t.jsonl"
    r = rbg(
        "batch", "import", graph, items, results, "--out", out, "--model", "judge",
        "--base-url", "http://127.0.0.1:1/v1", "--cache", tmp_path / "calls.sqlite", "--format", "json",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["further_calls"] == 0
    (rec,) = _records(out)
    assert rec["criteria"]["supported_by"]["response"]["value"] == [False, True, False]


def test_diffs_verdict_impact_shows_the_element_judgments_behind_each_changed_decision(tmp_path):
    old = _graph(tmp_path, schema='{ type: "object", required: ["reservation_id"] }')
    new = tmp_path / "new.rbg"
    new.write_text(old.read_text("utf-8").replace("reduce.all(", "reduce.any("), encoding="utf-8")
    out = tmp_path / "t.jsonl"
    assert rbg("run", old, TAU_BENCH, "--out", out).exit_code == 0
    r = rbg("diff", old, new, "--traces", out, "--format", "json")
    changed = json.loads(r.output)["impact"]["differences"]
    assert changed, r.output
    recorded = {rec["item"]: rec for rec in _records(out)}
    for d in changed:
        judged = recorded[d["item"]]["criteria"]["args_ok"]["response"]
        assert d["elements"] == {
            "args_ok": {"response": [{"key": e["key"], "value": e["value"]} for e in judged["elements"]]}
        }
        assert d["old"] == "false" and d["new"] == "true"
        assert True in judged["value"] and False in judged["value"]


def test_a_resumed_run_refuses_another_judge_of_a_per_element_criterion(tmp_path):
    graph = tmp_path / "grounded.rbg"
    graph.write_text(GROUNDED, encoding="utf-8")
    items = tmp_path / "items.jsonl"
    rows = [
        {"id": f"q{i}", "input": "Where is the Eiffel Tower?", "response": "In Paris.", "documents": DOCS}
        for i in range(2)
    ]
    items.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "t.jsonl"
    with FaultServer(answer=_supports_paris) as server:
        first = rbg("run", graph, items, "--out", out, "--base-url", server.url, "--no-cache")
        assert first.exit_code == 0, first.output
        (rec, _) = _records(out)
        assert rec["criteria"]["supported_by"]["response"]["fingerprint"]
        out.write_text(out.read_text("utf-8").splitlines(keepends=True)[0], encoding="utf-8")
        other = rbg("run", graph, items, "--out", out, "--base-url", server.url, "--no-cache", "--model", "other")
    assert other.exit_code == 2, other.output
    assert len(_records(out)) == 1
