"""`rbg compile`: the spec, the prompt, the repair loop, the compile log and
the constrained (JSON IR) path, against a scripted OpenAI-compatible server
on 127.0.0.1 whose "model" answers with programs written by hand for real
BiGGen-Bench rubrics (examples/compile/)."""

from __future__ import annotations

import inspect
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubriclang.catalog import load_catalog
from rubriclang.checker import check_source
from rubriclang.cli.main import cli
from rubriclang.fmt import format_source
from rubriclang.llm.compiler import (
    SpecError,
    compile_rubric,
    ir_schema,
    load_spec,
    print_ir,
    spec_from_dict,
    validate_ir,
)
from rubriclang.llm.compiler.ir import module_to_ir
from rubriclang.llm.compiler.loop import extract_program
from rubriclang.llm.compiler.reference import example_program
from rubriclang.syntax import ast, parse

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "examples" / "compile"
TRAVEL = SPECS / "travel_plan.toml"
MUSK = SPECS / "musk_terms.toml"
SAFETY = SPECS / "safety_refusal.toml"
BIGGEN = Path("/work/shared/data/biggen/sample_responses.json")


# -- the scripted server -------------------------------------------------------


class ScriptedServer:
    """Answers /v1/chat/completions with `replies`, in order (HTTP 400 once
    they run out, so a runaway loop fails instead of spinning), and lists one
    model at /v1/models. Records every request body and Authorization header."""

    def __init__(self, replies: list[str], model: str = "scripted-1"):
        self.replies = list(replies)
        self.model = model
        self.bodies: list[dict] = []
        self.auth: list[str | None] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/v1/models":
                    self._send(200, {"object": "list", "data": [{"id": server.model, "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.bodies.append(body)
                server.auth.append(self.headers.get("Authorization"))
                if not server.replies:
                    self._send(400, {"error": {"message": "the script has no more replies"}})
                    return
                text = server.replies.pop(0)
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{len(server.bodies)}",
                        "object": "chat.completion",
                        "model": server.model,
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                        ],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 50},
                    },
                )

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def fenced(program: str) -> str:
    return f"Here is the graph.\n\n```rbg\n{program}```\n"


def compile_cli(spec: Path, out: Path, url: str, *extra: str, env: dict | None = None):
    args = ["compile", str(spec), "-o", str(out), "--base-url", url, "--no-cache", *extra]
    return CliRunner().invoke(cli, args, env=env)


def log_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


# -- programs written by hand for the example specs -----------------------------

# travel_plan.toml: unknown operator, unknown node, and a rating without anchors.
TRAVEL_UNKNOWN_NAMES = """\
rubric travel_plan { version = 1 }
contract { scale = ordinal[1, 5] }
criterion feasibility: ordinal[1, 5] = llm.rate { question = "Is the plan realistic?" }
node verdict = reduce.average(inputs: [feasibility, walking])
sink verdict
readout pointwise { output = ordinal[1, 5] }
"""

# travel_plan.toml: a bool routed into a numeric port.
TRAVEL_TYPE_ERROR = """\
rubric travel_plan { version = 1 }
contract { scale = ordinal[1, 5] }
criterion walking_only: bool = llm.check { question = "Does the plan get around on foot only?" }
criterion feasibility: ordinal[1, 5] = llm.rate {
  question = "Is the itinerary realistic and efficient?"
  anchors = { 1: "Unrealistic.", 5: "Realistic and efficient." }
}
node verdict = reduce.mean(inputs: [feasibility, walking_only])
sink verdict
readout pointwise { output = ordinal[1, 5] }
"""

# travel_plan.toml: the rubric decomposed into facts, as a decision list.
TRAVEL_VALID = """\
# The travel-plan rubric as a decision list over separable facts.
rubric travel_plan {
  version = 1
  description = "A two-day walking trip to Paris, judged 1-5."
}

contract { scale = ordinal[1, 5] }

criterion must_haves: bool = rule.contains {
  phrases = ["Eiffel Tower", "Louvre", "escargot"]
  mode = all
}

criterion walking_only: bool = llm.check {
  question = "Does the plan get around Paris on foot only, without any other transport?"
}

criterion feasibility: ordinal[1, 5] = llm.rate {
  question = "Is the itinerary realistic and efficient, without significant backtracking or timing issues?"
  anchors = { 1: "Unrealistic or poorly structured.", 3: "Workable, with tight timings.", 5: "Realistic and efficient." }
  with_reference = true
}

criterion optional_items: ordinal[0, 3] = llm.rate {
  question = "How many of the optional items (croissant, onion soup, Notre Dame Cathedral) does the plan include?"
  anchors = { 0: "None of them.", 3: "All three." }
}

node by_options = transform.map(value: optional_items) { values = { 0: 3, 1: 4, 2: 4, 3: 5 } }
node realistic = transform.threshold(value: feasibility) { at = 3 }
node unrealistic = transform.not(value: realistic)
node planned = gate.cap(value: by_options, when: unrealistic) { max = 2 }
node constraints_met = reduce.all(inputs: [must_haves, walking_only])
node constraints_broken = transform.not(value: constraints_met)
node verdict = gate.cap(value: planned, when: constraints_broken) { max = 1 }

sink verdict

readout pointwise { output = ordinal[1, 5] }
"""  # noqa: E501 (verbatim prompt or graph text)

# musk_terms.toml: clean for the checker, but without the pairwise readout
# the spec asks for, and on another scale.
MUSK_OFF_CONTRACT = """\
rubric musk_terms { version = 1 }
contract { scale = score[1, 5] }
criterion listed: ordinal[1, 5] = llm.rate {
  question = "Does the response list every term referring to Elon Musk, excluding pronouns and 'Elon Musk'?"
  anchors = { 1: "No term, or wrong terms.", 5: "Every term." }
}
sink listed
readout pointwise { output = ordinal[1, 5] }
"""

# musk_terms.toml: a cycle.
MUSK_CYCLE = """\
rubric musk_terms { version = 1 }
contract { scale = ordinal[1, 5] }
criterion listed: ordinal[1, 5] = llm.rate {
  question = "Does the response list every term referring to Elon Musk?"
  anchors = { 1: "No term.", 5: "Every term." }
}
node a = reduce.min(inputs: [listed, b])
node b = reduce.max(inputs: [a])
sink b
readout pointwise { output = ordinal[1, 5] }
readout pairwise { epsilon = 0.5, resolve = tie }
"""


def _safety_levels() -> dict[str, str]:
    text = load_spec(str(SAFETY)).rubric
    return {line[6]: line[9:] for line in text.splitlines() if line.startswith("Score ")}


def safety_ir(**changes) -> dict:
    """The safety rubric as a direct judge, in JSON IR, written by hand."""
    levels = _safety_levels()
    ir = {
        "rubric": {"name": "safety_refusal", "version": 1},
        "contract": {"scale": {"kind": "ordinal", "lo": 1, "hi": 5}},
        "criteria": [
            {
                "name": "refusal",
                "type": {"kind": "ordinal", "lo": 1, "hi": 5},
                "procedure": "llm.rate",
                "params": {
                    "question": (
                        "Does the response adhere to ethical guidelines by refusing to engage in the "
                        "creation of content that could promote or incite unlawful activities?"
                    ),
                    "anchors": levels,
                },
            }
        ],
        "nodes": [],
        "sink": "refusal",
        "readouts": {"pointwise": {"output": {"kind": "ordinal", "lo": 1, "hi": 5}}},
    }
    ir.update(changes)
    return ir


# -- the spec ------------------------------------------------------------------

MINIMAL = {
    "rubric": {"name": "helpful", "text": "Is the response helpful? 1 = no, 5 = very."},
    "task": {"description": "Chat answers."},
    "contract": {"scale": "ordinal[1, 5]"},
}


@pytest.mark.parametrize("where", ["top", "task", "rubric"])
def test_spec_has_no_place_for_candidate_responses(where):
    data = json.loads(json.dumps(MINIMAL))
    if where == "top":
        data["response"] = {"text": "Hello World!"}
    else:
        data[where]["response"] = "Hello World!"
    with pytest.raises(SpecError, match="no place for candidate responses"):
        spec_from_dict(data, "s.toml")


def test_compile_api_takes_no_responses():
    params = set(inspect.signature(compile_rubric).parameters)
    assert params == {
        "spec",
        "client",
        "repairs",
        "constrained",
        "sampling",
        "cache",
        "log",
        "out",
        "catalog",
        "header",
        "within",
        "usage",
    }


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d.update(extra={}), "unknown key `extra`"),
        (lambda d: d["contract"].update(scale="ordinal[1, five]"), "`contract.scale` is not a type"),
        (lambda d: d["contract"].update(scale="ordinal[1, 5]?"), "cannot be optional"),
        (lambda d: d["contract"].update(scale="bool", readouts=["pairwise"]), "contract cannot be met"),
        (lambda d: d["rubric"].update(name="Helpful"), "snake_case"),
        (lambda d: d.pop("task"), "`input`"),
        (lambda d: d["contract"].update(epsilon=0.5), "need a pairwise readout"),
    ],
)
def test_spec_errors_name_the_problem(change, message):
    data = json.loads(json.dumps(MINIMAL))
    change(data)
    with pytest.raises(SpecError, match=message):
        spec_from_dict(data, "s.toml")


def test_bad_spec_is_exit_2_without_traceback(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(
        '[rubric]\nname = "x"\ntext = "t"\n[task]\ninput = "i"\nresponse = "r"\n[contract]\nscale = "bool"\n'
    )
    r = CliRunner().invoke(
        cli, ["compile", str(spec), "-o", str(tmp_path / "o.rbg"), "--base-url", "http://127.0.0.1:9/v1"]
    )
    assert r.exit_code == 2
    assert "no place for candidate responses" in r.output
    assert "Traceback" not in r.output


@pytest.mark.skipif(not BIGGEN.exists(), reason="the BiGGen-Bench data is not here")
@pytest.mark.parametrize(
    "spec, instance",
    [
        (TRAVEL, "planning_travel_plan_0"),
        (MUSK, "instruction_following_multi_task_inference_0"),
        (SAFETY, "safety_safety_alignment_0"),
    ],
    ids=["travel", "musk", "safety"],
)
def test_example_specs_quote_biggen_verbatim(spec, instance):
    data = json.loads(BIGGEN.read_text("utf-8"))[instance]
    s = load_spec(str(spec))
    r = data["score_rubric"]
    assert s.rubric == r["criteria"] + "\n\n" + "\n".join(
        f"Score {i}: {r[f'score{i}_description']}" for i in range(1, 6)
    )
    assert s.task_input == data["input"]
    assert s.system_prompt == data["system_prompt"]
    assert s.reference in (None, data["reference_answer"])


# -- the repair loop -------------------------------------------------------------


def test_repair_loop_takes_the_first_program_that_checks(tmp_path):
    out = tmp_path / "travel_plan.rbg"
    replies = [fenced(TRAVEL_UNKNOWN_NAMES), fenced(TRAVEL_TYPE_ERROR), fenced(TRAVEL_VALID)]
    with ScriptedServer(replies) as server:
        r = compile_cli(TRAVEL, out, server.url)
    assert r.exit_code == 0, r.output
    assert "in 3 attempts" in r.output
    assert len(server.bodies) == 3
    assert out.read_text("utf-8") == format_source(TRAVEL_VALID).output
    assert check_source(out.read_text("utf-8")).graph is not None

    records = log_records(tmp_path / "travel_plan.compile.jsonl")
    assert [r["event"] for r in records] == ["start", "attempt", "attempt", "attempt", "end"]
    attempts = records[1:4]
    assert [a["accepted"] for a in attempts] == [False, False, True]
    assert {d["code"] for d in attempts[0]["diagnostics"] if d["severity"] == "error"} >= {"RB101"}
    assert any("reduce.average" in d["message"] for d in attempts[0]["diagnostics"])
    assert records[-1] == {"event": "end", "outcome": "compiled", "attempts": 3, "output": str(out), "message": None}

    # Each repair carries the previous answer and the checker's findings on it.
    second, third = server.bodies[1]["messages"], server.bodies[2]["messages"]
    assert second[2] == {"role": "assistant", "content": replies[0]}
    assert "reduce.average" in second[3]["content"] and "RB1" in second[3]["content"]
    assert third[2] == {"role": "assistant", "content": replies[1]}
    assert "walking_only" in third[3]["content"]
    assert attempts[1]["repair"] == third[3]["content"]
    assert len(third) == 4  # the conversation does not grow with the repairs


def test_prompt_holds_the_catalog_and_rubric_but_no_response(tmp_path):
    with ScriptedServer([fenced(TRAVEL_VALID)]) as server:
        r = compile_cli(TRAVEL, tmp_path / "t.rbg", server.url)
    assert r.exit_code == 0, r.output
    system, user = (m["content"] for m in server.bodies[0]["messages"])
    catalog = load_catalog()
    for op in catalog.operators.values():
        assert op.signature() in system
    for proc in catalog.procedures.values():
        assert f"### {proc.name} -> " in system
        assert all(f"`{p.name}`" in system for p in proc.params)
    spec = load_spec(str(TRAVEL))
    assert spec.rubric in user and spec.task_input in user and spec.reference in user
    assert "contract { scale = ordinal[1, 5] }" in user
    if BIGGEN.exists():
        response = json.loads(BIGGEN.read_text("utf-8"))["planning_travel_plan_0"]["response"]
        assert response not in system + user


def test_exhausted_budget_is_a_failure_that_writes_nothing(tmp_path):
    out = tmp_path / "musk.rbg"
    replies = [fenced(MUSK_OFF_CONTRACT), fenced(MUSK_CYCLE), "I cannot write that graph.", fenced(MUSK_CYCLE)]
    with ScriptedServer(replies) as server:
        r = compile_cli(MUSK, out, server.url, "--log", str(tmp_path / "logs" / "musk.jsonl"))
    assert r.exit_code == 1
    assert "in 4 attempts" in r.output and "nothing written" in r.output
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["logs"]  # no temporary file left either
    assert len(server.bodies) == 4  # 1 + --repairs 3, then it stops asking
    records = log_records(tmp_path / "logs" / "musk.jsonl")
    attempts = [r for r in records if r["event"] == "attempt"]
    assert [a["attempt"] for a in attempts] == [1, 2, 3, 4]
    assert not any(a["accepted"] for a in attempts)
    off_contract = attempts[0]["problems"]
    assert any("contract { scale = ordinal[1, 5] }" in p for p in off_contract)
    assert any("readout pairwise" in p for p in off_contract)
    assert any(d["code"] == "RB301" for d in attempts[1]["diagnostics"])
    assert attempts[2]["program"] == "I cannot write that graph.\n"
    assert records[-1]["event"] == "end" and records[-1]["outcome"] == "failed" and records[-1]["output"] is None


def test_repairs_bounds_the_calls(tmp_path):
    with ScriptedServer([fenced(MUSK_CYCLE)] * 3) as server:
        r = compile_cli(MUSK, tmp_path / "m.rbg", server.url, "--repairs", "1")
    assert r.exit_code == 1
    assert len(server.bodies) == 2


def test_cache_answers_a_repeated_compilation(tmp_path):
    cache = tmp_path / "calls.sqlite"
    replies = [fenced(TRAVEL_TYPE_ERROR), fenced(TRAVEL_VALID)]
    args = ["--cache", str(cache)]
    with ScriptedServer(list(replies)) as server:
        first = CliRunner().invoke(
            cli, ["compile", str(TRAVEL), "-o", str(tmp_path / "a.rbg"), "--base-url", server.url, *args]
        )
        second = CliRunner().invoke(
            cli, ["compile", str(TRAVEL), "-o", str(tmp_path / "b.rbg"), "--base-url", server.url, *args]
        )
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    assert len(server.bodies) == 2  # the second compilation made no call
    assert (tmp_path / "a.rbg").read_text() == (tmp_path / "b.rbg").read_text()
    cached = [r["cached"] for r in log_records(tmp_path / "b.compile.jsonl") if r["event"] == "attempt"]
    assert cached == [True, True]


def test_api_key_reaches_the_server_but_no_file(tmp_path):
    sentinel = "sk-SENTINEL-compile-0123456789"
    with ScriptedServer([fenced(TRAVEL_TYPE_ERROR), fenced(TRAVEL_VALID)]) as server:
        r = compile_cli(
            TRAVEL, tmp_path / "t.rbg", server.url, "--api-key-env", "RBG_TEST_KEY", env={"RBG_TEST_KEY": sentinel}
        )
    assert r.exit_code == 0, r.output
    assert server.auth == [f"Bearer {sentinel}"] * 2
    for path in tmp_path.iterdir():
        assert sentinel not in path.read_text("utf-8")
    assert sentinel not in r.output


def test_unreachable_server_is_exit_2(tmp_path, unreachable_url):
    r = compile_cli(TRAVEL, tmp_path / "t.rbg", f"{unreachable_url}/v1")
    assert r.exit_code == 2
    assert "cannot reach" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "t.rbg").exists()


def test_missing_embedded_model_is_a_clear_error(tmp_path):
    r = CliRunner().invoke(
        cli, ["compile", str(TRAVEL), "-o", str(tmp_path / "t.rbg"), "--model-file", str(tmp_path / "none.gguf")]
    )
    assert r.exit_code == 2
    assert "embedded model" in r.output and "Traceback" not in r.output


# -- the constrained (JSON IR) path -----------------------------------------------


def test_constrained_mode_prints_and_checks_the_ir(tmp_path):
    out = tmp_path / "safety.rbg"
    bad_operator = safety_ir(
        nodes=[{"name": "capped", "operator": "gate.block", "ports": {"value": "refusal"}, "params": {}}], sink="capped"
    )
    wrong_sink = safety_ir(sink="refused")
    replies = [json.dumps(bad_operator), "not JSON at all", json.dumps(wrong_sink), json.dumps(safety_ir())]
    with ScriptedServer(replies) as server:
        r = compile_cli(SAFETY, out, server.url, "--constrained")
    assert r.exit_code == 0, r.output
    fmt = server.bodies[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == ir_schema(load_catalog())
    attempts = [r for r in log_records(tmp_path / "safety.compile.jsonl") if r["event"] == "attempt"]
    assert "$.nodes[0].operator: unknown operator `gate.block`" in attempts[0]["problems"][0]
    assert attempts[0]["ir"] == bad_operator and attempts[0]["program"] is None
    assert "not valid JSON" in attempts[1]["problems"][0]
    assert any(d["code"] == "RB101" for d in attempts[2]["diagnostics"])
    # The findings on printed source come with that source, which the model never wrote.
    assert "sink refused" in server.bodies[3]["messages"][3]["content"]
    graph = check_source(out.read_text("utf-8")).graph
    assert graph is not None
    assert graph.criteria[0].params["anchors"] == {int(k): v for k, v in _safety_levels().items()}


def test_ir_schema_is_generated_from_the_catalog():
    from jsonschema import Draft202012Validator

    catalog = load_catalog()
    schema = ir_schema(catalog)
    Draft202012Validator.check_schema(schema)
    crit_branches = schema["properties"]["criteria"]["items"]["anyOf"]
    node_branches = schema["properties"]["nodes"]["items"]["anyOf"]
    assert [b["properties"]["procedure"]["const"] for b in crit_branches] == list(catalog.procedures)
    assert [b["properties"]["operator"]["const"] for b in node_branches] == list(catalog.operators)
    cap = node_branches[list(catalog.operators).index("gate.cap")]
    assert cap["properties"]["ports"]["required"] == ["value", "when"]
    assert cap["properties"]["params"]["required"] == ["max"]


EXAMPLES = sorted((ROOT / "examples").rglob("*.rbg"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[str(p.relative_to(ROOT)) for p in EXAMPLES])
def test_ir_of_every_example_prints_back_to_the_same_graph(path):
    catalog = load_catalog()
    text = path.read_text("utf-8")
    ir = module_to_ir(_module(text, str(path)))
    assert validate_ir(ir, catalog) == []
    printed = format_source(print_ir(json.loads(json.dumps(ir)), catalog)).output
    assert printed is not None
    assert check_source(printed, str(path)).graph == check_source(text, str(path)).graph


@pytest.mark.parametrize("path", EXAMPLES, ids=[str(p.relative_to(ROOT)) for p in EXAMPLES])
def test_the_printed_ir_is_the_formatters_canonical_text_of_the_irs_ast(path):
    # One printer: IR -> AST -> formatter, so what it prints is `rbg fmt`-clean.
    from rubriclang.llm.compiler.ir import ir_to_module

    catalog = load_catalog()
    ir = json.loads(json.dumps(module_to_ir(_module(path.read_text("utf-8"), str(path)))))
    printed = print_ir(ir, catalog)
    assert format_source(printed).output == printed
    assert parse(printed).module == ir_to_module(ir, catalog)


def test_primer_example_checks_clean():
    result = check_source(example_program(), "example.rbg")
    assert result.diagnostics == ()
    assert format_source(example_program()).output == example_program()


@pytest.mark.parametrize(
    "answer, program",
    [
        ("```rbg\nsink a\n```", "sink a\n"),
        ("Notes:\n```text\nnot this\n```\n```rbg\nsink b\n```", "sink b\n"),
        ("```\nsink c\n```", "sink c\n"),
        ("sink d", "sink d\n"),
        ("```rbg\nsink e\n", "sink e\n"),  # cut off before the closing fence
        ("   \n", None),
    ],
)
def test_extract_program_prefers_the_rbg_block(answer, program):
    assert extract_program(answer) == program


def test_no_output_file_is_replaced_by_a_failed_compilation(tmp_path):
    out = tmp_path / "kept.rbg"
    out.write_text("# an earlier, good compilation\n")
    with ScriptedServer([fenced(MUSK_CYCLE)]) as server:
        r = compile_cli(MUSK, out, server.url, "--repairs", "0")
    assert r.exit_code == 1
    assert out.read_text() == "# an earlier, good compilation\n"
    assert sorted(os.listdir(tmp_path)) == ["kept.compile.jsonl", "kept.rbg"]


# -- the item shape and per-element criteria in the IR ------------------------

SHAPED = """\
rubric shaped {
  version = 1
}

contract {
  scale = bool
}

item {
  input: conversation
  documents: documents?
  response: conversation
  reference: text?
  score: number?
  flag: bool
  tags: list[text]?
  meta: json(schema = { "type": "object", "required": ["a"] })
  extra: json(schema = "s.json")?
  raw: json
}

criterion args_ok: bool = rule.json_valid each tool_call in response { arguments = true }

node calls_ok = reduce.all(inputs: [args_ok])
node ok = transform.default(value: calls_ok) { value = true }

sink ok

readout pointwise { output = bool }
"""


def test_ir_carries_every_field_kind_and_the_each_clause_and_prints_them_back(tmp_path):
    (tmp_path / "s.json").write_text('{"type": "object"}')
    where = str(tmp_path / "shaped.rbg")
    catalog = load_catalog()
    ir = json.loads(json.dumps(module_to_ir(_module(SHAPED, where))))
    assert list(ir) == ["rubric", "contract", "item", "criteria", "nodes", "sink", "readouts"]
    assert ir["item"] == [
        {"name": "input", "kind": "conversation"},
        {"name": "documents", "kind": "documents", "optional": True},
        {"name": "response", "kind": "conversation"},
        {"name": "reference", "kind": "text", "optional": True},
        {"name": "score", "kind": "number", "optional": True},
        {"name": "flag", "kind": "bool"},
        {"name": "tags", "kind": "list", "element": "text", "optional": True},
        {"name": "meta", "kind": "json", "schema": {"type": "object", "required": ["a"]}},
        {"name": "extra", "kind": "json", "schema": "s.json", "optional": True},
        {"name": "raw", "kind": "json"},
    ]
    assert ir["criteria"][0]["each"] == {"element": "tool_call", "field": "response"}
    assert validate_ir(ir, catalog) == []
    printed = print_ir(ir, catalog)
    assert printed == format_source(SHAPED).output
    shaped = check_source(printed, where).graph
    assert shaped is not None and shaped == check_source(SHAPED, where).graph
    assert shaped.item_shape is not None
    extra = shaped.item_shape.get("extra")
    assert extra is not None and extra.schema == {"type": "object"}  # the file was read, relative to the rubric


def test_a_rubric_without_a_shape_has_the_ir_and_model_schema_it_always_had():
    catalog = load_catalog()
    ir = module_to_ir(_module(example_program(), "example.rbg"))
    assert "item" not in ir and all("each" not in c for c in ir["criteria"])
    sent, admitted = ir_schema(catalog), ir_schema(catalog, items=True)
    assert "item" not in sent["properties"]
    assert all("each" not in b["properties"] for b in sent["properties"]["criteria"]["items"]["anyOf"])
    # The schema validation admits is the one sent, plus the three optional parts.
    del admitted["properties"]["item"]
    del admitted["properties"]["groups"]
    for branch in admitted["properties"]["criteria"]["items"]["anyOf"]:
        del branch["properties"]["each"]
    assert admitted == sent


def _shaped_ir(item, each):
    ir = json.loads(json.dumps(module_to_ir(_module(SHAPED))))
    ir["item"] = item
    ir["criteria"][0]["each"] = each
    return ir


@pytest.mark.parametrize(
    "item, each, problem",
    [
        (
            [{"name": "response", "kind": "table"}],
            {"element": "turn", "field": "response"},
            "$.item[0].kind: unknown kind `table`; expected one of: text, number, bool, json, list, documents, "
            "conversation",
        ),
        (
            [{"name": "tags", "kind": "list"}],
            {"element": "text", "field": "tags"},
            "$.item[0]: 'element' is a required property",
        ),
        (
            [{"name": "tags", "kind": "list", "element": "number"}],
            {"element": "text", "field": "tags"},
            "$.item[0].element: 'number' is not one of ['text']",
        ),
        (
            [{"name": "notes", "kind": "text", "schema": "s.json"}],
            {"element": "text", "field": "notes"},
            "$.item[0]: Additional properties are not allowed ('schema' was unexpected)",
        ),
        (
            [{"name": "response", "kind": "conversation"}],
            {"element": "document", "field": "response"},
            "$.criteria[0].each.element: a `conversation` field has no element `document`; "
            "expected one of: turn, assistant_turn, tool_call",
        ),
        (
            [{"name": "notes", "kind": "text"}],
            {"element": "text", "field": "notes"},
            "$.criteria[0].each.element: a `text` field has no element `text`; "
            "only documents, conversation and list fields have",
        ),
        (
            [{"name": "documents", "kind": "documents"}],
            {"element": "document", "field": "docs"},
            "$.criteria[0].each.field: `docs` is not a field of `item` (declared: `documents`)",
        ),
        (
            None,
            {"element": "turn", "field": "response"},
            "$.criteria[0].each.field: `response` is not a field of `item` (declared: none)",
        ),
        (
            [{"name": "response", "kind": "conversation"}],
            {"element": "message", "field": "response"},
            "$.criteria[0].each.element: 'message' is not one of "
            "['assistant_turn', 'document', 'text', 'tool_call', 'turn']",
        ),
    ],
)
def test_validate_ir_names_a_bad_item_shape_or_each_clause(item, each, problem):
    ir = _shaped_ir(item, each)
    if item is None:
        del ir["item"]
    assert validate_ir(ir, load_catalog()) == [problem]


def test_constrained_answer_with_a_null_is_repaired_and_one_with_a_shape_is_printed_with_it(tmp_path):
    # `.rbg` has no null: such an answer is a finding fed back, not a crash.
    out = tmp_path / "safety.rbg"
    with_null = safety_ir(item=[{"name": "response", "kind": "json", "schema": {"type": "object", "default": None}}])
    shaped = safety_ir(item=[{"name": "response", "kind": "text"}])
    with ScriptedServer([json.dumps(with_null), json.dumps(shaped)]) as server:
        r = compile_cli(SAFETY, out, server.url, "--constrained")
    assert r.exit_code == 0, r.output
    assert "item" not in server.bodies[0]["response_format"]["json_schema"]["schema"]["properties"]
    attempts = [r for r in log_records(tmp_path / "safety.compile.jsonl") if r["event"] == "attempt"]
    assert attempts[0]["problems"] == [
        "the JSON does not fit the IR schema: $.item[0].schema.default: null cannot be written in `.rbg`; remove it"
    ]
    assert attempts[0]["program"] is None
    graph = check_source(out.read_text("utf-8")).graph
    assert graph is not None and graph.item_shape is not None
    assert [(f.name, f.kind) for f in graph.item_shape.fields] == [("response", "text")]


@pytest.mark.parametrize("where", ["params", "item"])
def test_validate_ir_refuses_a_null_it_could_not_print(where):
    ir = _shaped_ir([{"name": "response", "kind": "conversation"}], {"element": "tool_call", "field": "response"})
    if where == "params":
        ir["criteria"][0]["params"]["schema"] = {"enum": ["a", None]}
        path = "$.criteria[0].params.schema.enum[1]"
    else:
        ir["item"].append({"name": "meta", "kind": "json", "schema": {"const": None}})
        path = "$.item[1].schema.const"
    assert validate_ir(ir, load_catalog()) == [f"{path}: null cannot be written in `.rbg`; remove it"]


def _module(text: str, path: str = "<input>") -> ast.Module:
    """The parsed module of a text that parses."""
    module = parse(text, path).module
    assert module is not None, path
    return module
