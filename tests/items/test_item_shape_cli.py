"""A rubric with a declared item shape end to end: `rbg check`, `rbg run`
over conversation and document items with rule and recorded criteria,
`rbg replay` and `rbg eval`; every command refuses an item that does not
fit at its file:line, naming the field's path, before judging anything."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubriclang.checker import Criterion, check_source
from rubriclang.cli.main import cli
from rubriclang.interp.items import read_items
from rubriclang.interp.trace import criterion_hashes, graph_hash
from rubriclang.items import shape
from rubriclang.llm.prompting import prepare

RULES = """\
rubric grounded_rules { version = 1 }

contract { scale = bool }

item {
  input: conversation
  documents: documents
}

criterion supported: bool = recorded.value { key = "sup" }
criterion short: bool = rule.length { under = 5 }

node both = reduce.all(inputs: [supported, short])
sink both
readout pointwise { output = bool }
"""
# The same judge with an LLM criterion that shows the declared fields.
PROMPTED = RULES.replace(
    "\nnode both",
    '''criterion sources: bool = llm.check {
  prompt = """
## user
{{#documents}}
[{{id}}] {{text}}
{{/documents}}
{{#input}}
{{role}}: {{content}}
{{/input}}
Answer: {{response}}
Supported? Reply as {"verdict": true}.
"""
}

node both''',
).replace("[supported, short]", "[supported, short, sources]")
TURNS = [
    {"role": "user", "content": [{"type": "text", "text": "Where is Paris?"}]},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "find", "arguments": '{"q": "Paris"}'}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "France"},
]
ITEMS = [
    {
        "id": "a",
        "input": TURNS,
        "documents": [{"id": "d1", "text": "Paris is in France."}],
        "response": "In France.",
        "recorded": {"sup": True},
        "gold": True,
    },
    {
        "id": "b",
        "input": TURNS[:1],
        "documents": [],
        "response": "It is a city in a country called France.",
        "recorded": {"sup": True},
        "gold": False,
    },
]


def rbg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _lines(path: Path, items) -> Path:
    path.write_text("".join(json.dumps(i) + "\n" for i in items), "utf-8")
    return path


@pytest.fixture
def judge(tmp_path) -> Path:
    path = tmp_path / "judge.rbg"
    path.write_text(RULES, "utf-8")
    return path


def test_check_passes_a_rubric_whose_templates_fit_its_declared_item(tmp_path):
    path = tmp_path / "prompted.rbg"
    path.write_text(PROMPTED, "utf-8")
    result = rbg("check", path)
    assert result.exit_code == 0, result.output
    assert "All checks passed" in result.output


def test_run_judges_structured_items_and_replay_finds_every_decision_identical(judge, tmp_path):
    items = _lines(tmp_path / "items.jsonl", ITEMS)
    out = tmp_path / "trace.jsonl"
    result = rbg("run", judge, items, "--out", out)
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert [r["readout"]["decision"] for r in records] == [True, False]
    replayed = rbg("replay", judge, out, "--items", items)
    assert replayed.exit_code == 0, replayed.output
    assert "identical" in replayed.output


def test_run_refuses_a_malformed_item_at_its_line_naming_the_path_before_judging_any(judge, tmp_path):
    bad = json.loads(json.dumps(ITEMS[0]))
    bad["id"] = "c"
    bad["input"][1]["tool_calls"][0]["function"]["arguments"] = "{oops"
    items = _lines(tmp_path / "items.jsonl", [ITEMS[1], bad])
    out = tmp_path / "trace.jsonl"
    result = rbg("run", judge, items, "--out", out)
    assert result.exit_code == 2
    assert f"{items}:2: `input[1].tool_calls[0].function.arguments` is not valid JSON" in result.output
    assert "Traceback" not in result.output
    assert not out.exists()  # nothing judged, not even the good first item


@pytest.mark.parametrize("command", ["eval", "replay", "fit"])
def test_other_commands_refuse_the_same_item_the_same_way(judge, tmp_path, command):
    bad = dict(ITEMS[0], documents=[{"id": "d1", "text": "x"}, {"id": "d1", "text": "y"}])
    items = _lines(tmp_path / "items.jsonl", [bad])
    (tmp_path / "t.jsonl").write_text("", "utf-8")
    args = {
        "eval": ("eval", judge, items),
        "replay": ("replay", judge, tmp_path / "t.jsonl", "--items", items),
        "fit": ("fit", judge, items, "-o", tmp_path / "fitted.rbg"),
    }[command]
    result = rbg(*args)
    assert result.exit_code == 2, result.output
    assert f"{items}:1: `documents[1].id` `d1` is also the id of `documents[0]`" in result.output
    assert "Traceback" not in result.output


def test_items_convert_with_a_graph_reads_the_converted_items_for_its_shape(tmp_path):
    graph = tmp_path / "g.rbg"
    graph.write_text(RULES.replace("input: conversation", "input: text"), "utf-8")
    src = _lines(tmp_path / "src.jsonl", [{"id": "1", "input": "hi", "response": "x", "gold": True}])
    result = rbg("items", "convert", src, "-o", tmp_path / "out.jsonl", "--graph", graph)
    assert result.exit_code == 2
    assert f"{src}:1: `documents` is missing: the rubric declares it `documents`" in result.output
    assert not (tmp_path / "out.jsonl").exists()


def test_the_python_api_reads_an_item_dict_for_the_rubric_s_shape(judge):
    import rubriclang
    from rubriclang.interp.items import ItemError
    from rubriclang.interp.local import LocalBackend

    rubric = rubriclang.load(str(judge), backends=[LocalBackend()])
    assert rubric.evaluate(ITEMS[0]).record["readout"]["decision"] is True
    with pytest.raises(ItemError, match=r"`input\[0\]` has role"):
        rubric.evaluate(dict(ITEMS[0], input=[{"role": "robot", "content": "x"}]))


def test_the_audit_skips_text_operators_on_a_structured_input_and_runs_those_on_its_fields(judge, tmp_path):
    from rubriclang.audit.applicability import why_skipped
    from rubriclang.audit.judge import judge_info
    from rubriclang.audit.perturbations import load_perturbations

    graph = check_source(RULES).graph
    assert graph is not None
    items = list(read_items(str(_lines(tmp_path / "items.jsonl", ITEMS)), graph.item_shape))
    info = judge_info(graph, items)
    typos = load_perturbations()["typo_noise"].with_options({"fields": ["input", "response"]})
    assert "declares `input: conversation`" in (why_skipped(typos, info) or "")
    assert "no criterion of this judge reads a declared `documents`" in (
        why_skipped(load_perturbations()["documents.shuffle"], info) or ""
    )


def test_a_missing_declared_field_is_refused_and_an_undeclared_one_ignored(judge, tmp_path):
    items = _lines(tmp_path / "items.jsonl", [{k: v for k, v in ITEMS[0].items() if k != "documents"}])
    result = rbg("run", judge, items, "--out", tmp_path / "t.jsonl")
    assert result.exit_code == 2
    assert "`documents` is missing: the rubric declares it `documents`" in result.output
    items = _lines(tmp_path / "more.jsonl", [dict(ITEMS[0], extra={"kept": "as data"})])
    assert rbg("run", judge, items, "--out", tmp_path / "t2.jsonl").exit_code == 0


def test_the_prompt_shows_each_document_and_turn(tmp_path):
    graph = check_source(PROMPTED).graph
    assert graph is not None
    item = next(read_items(str(_lines(tmp_path / "items.jsonl", ITEMS)), graph.item_shape))
    criterion = graph.nodes["sources"]
    assert isinstance(criterion, Criterion)
    messages = prepare(criterion, item, "response").render().request.messages
    assert messages[-1]["content"] == (
        "[d1] Paris is in France.\n"
        "user: Where is Paris?\n"
        "assistant: \n"
        "tool: France\n"
        'Answer: In France.\nSupported? Reply as {"verdict": true}.'
    )


def test_a_shape_or_rendering_change_changes_the_hashes_of_the_criteria_showing_the_field(monkeypatch):
    import rubriclang.interp.trace as trace

    before = check_source(PROMPTED).graph
    as_list = check_source(
        PROMPTED.replace("documents: documents", "documents: list[text]").replace("[{{id}}] {{text}}", "{{value}}")
    ).graph
    assert before is not None and as_list is not None
    assert graph_hash(before) != graph_hash(as_list)
    assert criterion_hashes(before)["supported"] == criterion_hashes(as_list)["supported"]  # reads no field
    assert criterion_hashes(before)["sources"] != criterion_hashes(as_list)["sources"]
    now = criterion_hashes(before)
    monkeypatch.setattr(trace, "RENDER_VERSION", shape.RENDER_VERSION + 1)
    rendered_anew = criterion_hashes(before)
    assert rendered_anew["sources"] != now["sources"]
    assert rendered_anew["short"] == now["short"]


def test_a_schema_file_beside_the_rubric_checks_items_and_is_read_only_when_declared(tmp_path):
    (tmp_path / "answer.json").write_text('{"type": "object", "required": ["city"]}', "utf-8")
    judge = tmp_path / "structured.rbg"
    judge.write_text(
        "rubric s { version = 1 }\ncontract { scale = bool }\n"
        'item { response: json(schema = "answer.json") }\n'
        "criterion parses: bool = rule.json_valid\nsink parses\nreadout pointwise { output = bool }\n",
        "utf-8",
    )
    items = _lines(tmp_path / "items.jsonl", [{"id": 1, "response": {"city": "Paris"}}, {"id": 2, "response": {}}])
    result = rbg("run", judge, items, "--out", tmp_path / "t.jsonl")
    assert result.exit_code == 2
    assert f"{items}:2: `response` does not fit the declared JSON Schema" in result.output


def test_checking_a_declared_shape_without_a_schema_imports_no_json_schema_library():
    code = (
        "import sys\nfrom rubriclang.checker import check_source\n"
        f"r = check_source({PROMPTED!r})\nassert r.graph is not None\nprint('jsonschema' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_diff_shows_a_change_of_the_declared_item_shape(judge, tmp_path):
    new = tmp_path / "new.rbg"
    new.write_text(RULES.replace("documents: documents", "documents: documents?"), "utf-8")
    result = rbg("diff", judge, new)
    assert result.exit_code == 1, result.output
    assert "~ item documents: documents?\n    ~ type: documents -> documents?" in result.output
