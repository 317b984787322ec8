"""The structure rules (`rule.json_valid { arguments = true }`,
`rule.json_schema`, `rule.tool_calls_match`, `rule.citations_valid`,
`rule.count`) judging items read for a declared shape, on real data:
BFCL simple_python's gold answers pass and each kind of corruption fails
with its kind named; tau-bench airline trajectories' tool calls are counted,
parsed and matched against the task's gold actions. Malformed input is a
failed judgment in words, never an exception."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rubriclang.checker import check_source
from rubriclang.cli.main import cli
from rubriclang.interp.backend import JudgmentRequest
from rubriclang.interp.items import item_from_json
from rubriclang.interp.local import LocalBackend
from rubriclang.interp.trace import criterion_hashes

DATA = Path("/work/shared/data")
BFCL = DATA / "bfcl_simple"
TAU = DATA / "tau_bench_airline" / "gpt-4o-airline.json"
needs_bfcl = pytest.mark.skipif(not BFCL.is_dir(), reason="the shared BFCL data is not on this machine")
needs_tau = pytest.mark.skipif(not TAU.is_file(), reason="the shared tau-bench data is not on this machine")


def graph_of(fields: str, criterion: str, type_: str = "bool", path: str = "<input>"):
    scale = type_ if type_ != "bool" else "bool"
    source = (
        "rubric r { version = 1 }\n"
        f"contract {{ scale = {scale} }}\n"
        f"item {{ {fields} }}\n"
        f"criterion c: {type_} = {criterion}\n"
        "sink c\n"
        f"readout pointwise {{ output = {scale} }}\n"
    )
    result = check_source(source, path)
    assert result.graph is not None, [str(d) for d in result.errors]
    return result.graph


def judge(graph, item: dict):
    read = item_from_json({"id": "1", **item}, "items.jsonl:1", 1, graph.item_shape)
    return LocalBackend().judge_now(JudgmentRequest(read, "response", graph.criteria[0]))


# -- BFCL simple_python ---------------------------------------------------------


def _bfcl_records():
    questions = [json.loads(line) for line in (BFCL / "BFCL_v4_simple_python.json").read_text().splitlines() if line]
    answers = {
        a["id"]: a["ground_truth"]
        for a in map(json.loads, (BFCL / "possible_answer" / "BFCL_v4_simple_python.json").read_text().splitlines())
    }
    return [(q, answers[q["id"]]) for q in questions]


def _concrete(accepted):
    """One value BFCL accepts: the first non-empty accepted value, nested objects likewise."""
    if isinstance(accepted, dict):
        return {k: _concrete(_first(v)) for k, v in accepted.items() if _first(v) != ""}
    if isinstance(accepted, list):
        return [_concrete(x) for x in accepted]
    return accepted


def _first(options):
    return next((o for o in options if o != ""), "")


def gold_calls(ground_truth, leave_out_optional=False):
    calls = []
    for entry in ground_truth:
        ((name, args),) = entry.items()
        chosen = {
            arg: _concrete(_first(options))
            for arg, options in args.items()
            if _first(options) != "" and not (leave_out_optional and "" in options)
        }
        calls.append({"name": name, "arguments": chosen})
    return calls


def _other_value(value):
    """A value of the same JSON type that no gold list holds."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 7919
    if isinstance(value, str):
        return value + " (not this)"
    if isinstance(value, list):
        return [*value, "extra element"]
    return {**value, "unexpected key": 1}


def _other_type(value):
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return [value]
    return json.dumps(value)


def corruptions(ground_truth):
    """(kind, candidate calls) for each corruption that applies to the gold answer."""
    gold = gold_calls(ground_truth)
    ((_name, accepted),) = ground_truth[0].items()
    args = gold[0]["arguments"]
    out = []

    def changed(fn):
        calls = copy.deepcopy(gold)
        fn(calls[0])
        return calls

    out.append(("name", changed(lambda c: c.update(name=c["name"] + "_v2"))))
    required = [a for a, options in accepted.items() if "" not in options]
    if required:
        out.append(("missing_argument", changed(lambda c: c["arguments"].pop(required[0]))))
    if args:
        first = next(iter(args))
        wrong = _other_value(args[first])
        if not any(json.dumps(wrong) == json.dumps(o) for o in accepted[first]):
            out.append(("value", changed(lambda c: c["arguments"].update({first: wrong}))))
        out.append(("type", changed(lambda c: c["arguments"].update({first: _other_type(args[first])}))))
    out.append(("unexpected_argument", changed(lambda c: c["arguments"].update(not_a_parameter=1))))
    return out


BFCL_FIELDS = "input: conversation, response: json, gold_calls: json"
BFCL_RULE = 'rule.tool_calls_match { expected = "gold_calls" }'


def _bfcl_item(question, calls, ground_truth):
    return {"input": question["question"][0], "response": calls, "gold_calls": ground_truth}


@needs_bfcl
def test_bfcl_gold_answers_pass_with_and_without_their_optional_arguments():
    graph = graph_of(BFCL_FIELDS, BFCL_RULE)
    records = _bfcl_records()
    assert len(records) == 267
    for question, truth in records:
        for calls in (gold_calls(truth), gold_calls(truth, leave_out_optional=True)):
            j = judge(graph, _bfcl_item(question, calls, truth))
            assert j.value is True, (question["id"], j.raw, j.error)


@needs_bfcl
def test_bfcl_corrupted_answers_fail_each_with_its_kind_named():
    graph = graph_of(BFCL_FIELDS, BFCL_RULE)
    # The judgment's kind for each corruption: a value of the wrong type is a wrong value.
    named = {"type": "value"}
    counts: Counter[str] = Counter()
    for question, truth in _bfcl_records():
        for kind, calls in corruptions(truth):
            j = judge(graph, _bfcl_item(question, calls, truth))
            assert j.value is False and j.error is None, (question["id"], kind, j.raw)
            assert j.raw["kind"] == named.get(kind, kind), (question["id"], kind, j.raw)
            counts[kind] += 1
    # Every record gets a wrong name and an unknown argument; the other
    # corruptions apply where the gold answer has what they change.
    assert counts == {
        "name": 267,
        "unexpected_argument": 267,
        "missing_argument": 267,
        "value": 267,
        "type": 267,
    }


# -- tau-bench airline ----------------------------------------------------------


def _tau_runs():
    """The runs the item reader reads as conversations (it refuses a
    trajectory that reuses a tool call id, as 38 of the 132 do)."""
    runs = json.loads(TAU.read_text())
    out = []
    for run in runs:
        ids = [c["id"] for m in run["traj"] for c in m.get("tool_calls") or ()]
        if len(ids) == len(set(ids)):
            out.append(run)
    assert len(runs) == 132 and len(out) == 94
    return out


def _as_trajectory(actions):
    """The gold actions as an agent's trajectory: one assistant call each, with its tool result."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Please help."}]
    for i, action in enumerate(actions):
        call: dict[str, Any] = {"id": f"call_{i}", "type": "function", "function": {"name": action["name"]}}
        call["function"]["arguments"] = json.dumps(action["kwargs"])
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": "{}"})
    messages.append({"role": "assistant", "content": "Done."})
    return messages


@needs_tau
def test_tau_trajectories_tool_calls_are_counted_and_their_arguments_parse():
    calls = graph_of("response: conversation", "rule.count { of = tool_calls }", "ordinal[0, 1000]")
    assistant = graph_of("response: conversation", "rule.count { role = assistant }", "ordinal[0, 1000]")
    parses = graph_of("response: conversation", 'rule.json_schema { schema = { "type": "object" }, arguments = true }')
    valid = graph_of("response: conversation", "rule.json_valid { arguments = true }")
    total = 0
    for run in _tau_runs():
        item = {"input": "", "response": run["traj"]}
        want = sum(len(m.get("tool_calls") or ()) for m in run["traj"])
        assert judge(calls, item).value == want
        assert judge(assistant, item).value == sum(m["role"] == "assistant" for m in run["traj"])
        assert judge(parses, item).value is True and judge(valid, item).value is True
        total += want
    assert total == 419


@needs_tau
def test_tau_gold_actions_as_a_trajectory_match_and_corruptions_do_not():
    fields = "response: conversation, gold_calls: json"
    in_order = graph_of(fields, 'rule.tool_calls_match { expected = "gold_calls" }')
    any_order = graph_of(fields, 'rule.tool_calls_match { expected = "gold_calls", ordered = false }')
    kinds: Counter[str] = Counter()
    for run in _tau_runs():
        actions = run["info"]["task"]["actions"]
        if not actions:
            continue
        item = {"input": "", "response": _as_trajectory(actions), "gold_calls": actions}
        assert judge(in_order, item).value is True
        reversed_item = {**item, "response": _as_trajectory(actions[::-1])}
        assert judge(any_order, reversed_item).value is True
        dropped = {**item, "response": _as_trajectory(actions[:-1])}
        j = judge(in_order, dropped)
        assert j.value is False and j.raw["kind"] == "missing_call"
        kinds[j.raw["kind"]] += 1
        changed = copy.deepcopy(actions)
        key = next(iter(changed[0]["kwargs"]), None)
        if key is not None:
            changed[0]["kwargs"][key] = "corrupted"
            j = judge(in_order, {**item, "response": _as_trajectory(changed)})
            assert j.value is False and j.raw["kind"] == "value" and "corrupted" in j.raw["mismatch"]
            kinds[j.raw["kind"]] += 1
    assert kinds["missing_call"] > 50 and kinds["value"] > 50


@needs_tau
def test_tau_runs_judged_against_their_gold_actions_name_the_first_mismatch():
    graph = graph_of(
        "response: conversation, gold_calls: json", 'rule.tool_calls_match { expected = "gold_calls", extra = allow }'
    )
    runs = {(run["task_id"], run["trial"]): run for run in _tau_runs()}
    item = {"input": "", "response": runs[4, 0]["traj"], "gold_calls": runs[4, 0]["info"]["task"]["actions"]}
    j = judge(graph, item)
    assert j.value is False and j.error is None and runs[4, 0]["reward"] == 0.0
    assert j.raw == {
        "calls": 6,
        "expected": 3,
        "kind": "value",
        "mismatch": '`response[16].tool_calls[0]` gives `payment_id` = "credit_card_7407366", '
        'expected "gift_card_8190333"',
    }
    assert j == judge(graph, item)  # deterministic
    silent = {**item, "response": runs[1, 0]["traj"], "gold_calls": runs[1, 0]["info"]["task"]["actions"]}
    assert judge(graph, silent).raw == {
        "calls": 0,
        "expected": 1,
        "kind": "missing_call",
        "mismatch": "no call of `cancel_reservation` matches",
    }
    matched = {**item, "response": runs[20, 0]["traj"], "gold_calls": runs[20, 0]["info"]["task"]["actions"]}
    assert judge(graph, matched).value is True and runs[20, 0]["reward"] == 1.0


# -- matching semantics ---------------------------------------------------------

CALLS_FIELDS = "response: json, gold_calls: json"


def _match(calls, expected, **params):
    options = "".join(f", {k} = {v}" for k, v in params.items())
    graph = graph_of(CALLS_FIELDS, f'rule.tool_calls_match {{ expected = "gold_calls"{options} }}')
    return judge(graph, {"response": calls, "gold_calls": expected})


def test_numbers_compare_by_value_but_a_boolean_is_no_number():
    assert _match([{"name": "f", "arguments": {"x": 5.0}}], [{"f": {"x": [5]}}]).value is True
    assert _match([{"name": "f", "arguments": {"x": 5}}], [{"name": "f", "arguments": {"x": 5.0}}]).value is True
    j = _match([{"name": "f", "arguments": {"x": True}}], [{"f": {"x": [1]}}])
    assert j.value is False and j.raw["kind"] == "value"


def test_strings_compare_exactly_or_as_bfcl_folds_them():
    calls = [{"name": "f", "arguments": {"date": "april 1 2024", "city": "New_York"}}]
    expected = [{"f": {"date": ["April 1, 2024"], "city": ["new york", "NYC"]}}]
    j = _match(calls, expected)
    assert j.value is False and j.raw["kind"] == "value"
    assert _match(calls, expected, strings="bfcl").value is True
    j = _match(calls, [{"f": {"date": ["April 2, 2024"], "city": ["new york"]}}], strings="bfcl")
    assert j.value is False and "`date`" in j.raw["mismatch"]


def test_openai_calls_with_json_string_arguments_are_read():
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": [1, 2]}'}}
    assert _match([call], [{"name": "f", "arguments": {"x": [1, 2]}}]).value is True
    assert _match({"role": "assistant", "tool_calls": [call]}, [{"f": {"x": [[1, 2]]}}]).value is True


def test_unordered_matching_finds_an_assignment_a_greedy_one_misses():
    calls = [{"name": "f", "arguments": {"x": 1}}, {"name": "f", "arguments": {"x": 2}}]
    expected = [{"f": {"x": [1, 2]}}, {"f": {"x": [1]}}]
    assert _match(calls, expected, ordered="false").value is True
    j = _match(calls, expected)
    assert j.value is False and j.raw["kind"] == "value"


def test_extra_calls_are_refused_unless_allowed_and_order_still_holds():
    look = {"name": "look", "arguments": {}}
    book = {"name": "book", "arguments": {"id": 3}}
    pay = {"name": "pay", "arguments": {"amount": 10}}
    expected = [{"name": "book", "arguments": {"id": 3}}, {"name": "pay", "arguments": {"amount": 10}}]
    j = _match([look, book, look, pay], expected)
    assert j.value is False and j.raw["kind"] == "name"
    assert _match([look, book, look, pay], expected, extra="allow").value is True
    j = _match([pay, look, book], expected, extra="allow")
    assert j.value is False and j.raw["kind"] == "missing_call"
    assert _match([pay, look, book], expected, extra="allow", ordered="false").value is True
    j = _match([pay, look, book], expected, ordered="false")
    assert j.value is False and j.raw["kind"] == "extra_call" and "look" in j.raw["mismatch"]
    j = _match([book], expected)
    assert j.value is False and j.raw["kind"] == "missing_call" and j.raw == {**j.raw, "calls": 1, "expected": 2}


def test_bfcl_nested_accepted_objects_and_optional_keys():
    expected = [{"paint": {"area": [{"width": [20], "height": [12, 12.0], "unit": ["m", ""]}]}}]
    assert _match([{"name": "paint", "arguments": {"area": {"width": 20, "height": 12}}}], expected).value is True
    j = _match([{"name": "paint", "arguments": {"area": {"width": 20}}}], expected)
    assert j.value is False and j.raw["kind"] == "value"


def test_a_candidate_that_is_not_json_calls_nothing():
    graph = graph_of("response: text, gold_calls: json", 'rule.tool_calls_match { expected = "gold_calls" }')
    j = judge(graph, {"response": "I would call f(x=1)", "gold_calls": [{"f": {"x": [1]}}]})
    assert j.value is False and j.raw["kind"] == "not_json" and "not valid JSON" in j.raw["mismatch"]
    j = judge(graph, {"response": '[{"name": "f", "arguments": "{x: 1}"}]', "gold_calls": [{"f": {"x": [1]}}]})
    assert j.value is False and j.raw["kind"] == "arguments"


@pytest.mark.parametrize(
    ("calls", "expected", "words"),
    [
        ([], {"f": {}}, "`gold_calls` is not an array of expected tool calls"),
        ([], [{"f": {"x": 1}}], "`gold_calls[0].f.x` is not a list of accepted values"),
        ([], [{"name": "f"}], "`gold_calls[0]` has no `arguments`"),
        ([], [{"name": "f", "arguments": "[1]"}], "`gold_calls[0].arguments` holds an array, not a JSON object"),
        ({"x": 1}, [], "`response` is an object, not an array of tool calls"),
        ([3], [], "`response[0]` is not a tool call"),
    ],
)
def test_malformed_calls_fail_the_judgment_in_words(calls, expected, words):
    j = _match(calls, expected)
    assert j.value is None and words in j.error


def test_deeply_nested_arguments_fail_no_judgment_with_an_exception():
    deep = "[" * 100_000 + "]" * 100_000
    graph = graph_of("response: text", "rule.json_valid { arguments = true }")
    j = judge(graph, {"response": deep})
    assert j.value is False and "nested too deeply" in j.raw


def test_values_nested_deeper_than_python_recurses_fail_the_judgment_in_words():
    deep: list = []
    for _ in range(700):  # JSON reads it; comparing it element by element recurses deeper
        deep = [deep]
    graph = graph_of("response: text, gold_calls: json", 'rule.tool_calls_match { expected = "gold_calls" }')
    calls = json.dumps([{"name": "f", "arguments": {"x": deep}}])
    j = judge(graph, {"response": calls, "gold_calls": [{"f": {"x": [deep]}}]})
    assert j.value is None and j.error == "the item's values are nested too deeply for `rule.tool_calls_match`"


def test_an_item_read_without_the_rubrics_shape_is_refused_in_words():
    graph = graph_of("documents: documents", "rule.citations_valid {}")
    unread = item_from_json({"id": "1", "response": "[d1]", "documents": [{"no": "id"}]}, "items.jsonl:1", 1)
    j = LocalBackend().judge_now(JudgmentRequest(unread, "response", graph.criteria[0]))
    assert j.value is None and j.error == "the item's `documents` was not read as the rubric declares it (`documents`)"


def test_the_audit_sees_every_field_a_structure_rule_reads():
    from rubriclang.audit.judge import reads

    graph = graph_of("response: json, gold_calls: json", 'rule.tool_calls_match { expected = "gold_calls" }')
    assert reads(graph.criteria[0]) == {"response", "gold_calls"}
    graph = graph_of("documents: documents, answer: text", 'rule.citations_valid { field = "answer" }')
    assert reads(graph.criteria[0]) == {"answer", "documents"}


def test_the_compiler_refuses_a_structure_rule_reading_a_reference_items_will_not_carry():
    from rubriclang.catalog.types import JType
    from rubriclang.llm.compiler.loop import contract_problems
    from rubriclang.llm.compiler.spec import Spec

    graph = graph_of("response: json, reference: text", 'rule.tool_calls_match { expected = "reference" }')
    spec = Spec(name="r", rubric="Calls right?", scale=JType("bool"), output=JType("bool"))
    assert contract_problems(graph, spec) == [
        "criterion `c` reads the item's reference answer, but items will carry none"
    ]


# -- rule.json_schema -----------------------------------------------------------


def test_json_schema_names_the_path_of_the_first_violation():
    schema = '{ "type": "object", "properties": { "items": { "type": "array", "items": { "required": ["price"] } } } }'
    graph = graph_of("response: json", f"rule.json_schema {{ schema = {schema} }}")
    assert judge(graph, {"response": {"items": [{"price": 1}]}}).value is True
    j = judge(graph, {"response": {"items": [{"price": 1}, {"name": "x"}, {}]}})
    assert j.value is False and j.raw == "`response.items[1]`: 'price' is a required property"
    later = [{"price": 1}] * 2 + [{}] + [{"price": 1}] * 7 + [{}]  # indices 2 and 10: 2 comes first
    assert judge(graph, {"response": {"items": later}}).raw == "`response.items[2]`: 'price' is a required property"


def test_json_schema_parses_text_and_judges_text_that_is_not_json_false():
    graph = graph_of("response: text", 'rule.json_schema { schema = { "type": "array" } }')
    assert judge(graph, {"response": "[1, 2]"}).value is True
    j = judge(graph, {"response": "[1, 2"})
    assert j.value is False and j.raw.startswith("`response` is not valid JSON")


def test_json_schema_of_tool_call_arguments_names_the_call():
    graph = graph_of(
        "response: conversation",
        'rule.json_schema { schema = { "type": "object", "required": ["user_id"] }, arguments = true }',
    )
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [_openai("a", "get_user", {"user_id": "u1"})]},
        {"role": "tool", "tool_call_id": "a", "content": "{}"},
        {"role": "assistant", "content": None, "tool_calls": [_openai("b", "get_user", {"id": "u1"})]},
    ]
    j = judge(graph, {"response": messages})
    assert j.value is False
    assert j.raw == "`response[3].tool_calls[0].function.arguments`: 'user_id' is a required property"


def _openai(call_id, name, arguments):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def test_an_invalid_schema_fails_the_judgment_in_words():
    graph = graph_of("response: json", 'rule.json_schema { schema = { "type": 5 } }')
    j = judge(graph, {"response": {}})
    assert j.value is None and "the criterion's `schema` is not a valid JSON Schema" in j.error


def test_a_schema_file_is_read_at_check_time_and_its_content_is_in_the_hash(tmp_path: Path):
    (tmp_path / "answer.schema.json").write_text('{"type": "object", "required": ["answer"]}')
    path = str(tmp_path / "r.rbg")
    criterion = 'rule.json_schema { schema = "answer.schema.json" }'
    graph = graph_of("response: json", criterion, path=path)
    assert judge(graph, {"response": {"answer": 1}}).value is True
    j = judge(graph, {"response": {}})
    assert j.value is False and "'answer' is a required property" in j.raw
    before = criterion_hashes(graph)["c"]
    (tmp_path / "answer.schema.json").write_text('{"type": "object"}')
    assert criterion_hashes(graph_of("response: json", criterion, path=path))["c"] != before


def test_checking_a_rubric_with_structure_rules_imports_no_schema_library():
    source = Path(__file__).parent / "corpus" / "valid" / "structure_rules.rbg"
    code = (
        "import sys\n"
        "from rubriclang.checker import check_source\n"
        f"r = check_source(open({str(source)!r}).read(), 'x.rbg')\n"
        "assert r.graph is not None\n"
        "print('jsonschema' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- rule.citations_valid -------------------------------------------------------

DOCS = [{"id": "d1", "text": "One."}, {"id": 2, "title": "Two", "text": "Two."}]


def test_citations_must_name_existing_documents():
    graph = graph_of("documents: documents", "rule.citations_valid {}")
    assert judge(graph, {"response": "As [d1] and [2] say.", "documents": DOCS}).value is True
    j = judge(graph, {"response": "As [d1, d3] and [see above] say.", "documents": DOCS})
    assert j.value is False and j.raw == {"cited": ["d1", "d3"], "unknown": ["d3"]}
    assert judge(graph, {"response": "No sources.", "documents": DOCS}).value is True


def test_citations_at_least_and_a_custom_pattern():
    graph = graph_of("documents: documents", 'rule.citations_valid { at_least = 2, pattern = "<(\\\\w+)>" }')
    assert judge(graph, {"response": "<d1> <2>", "documents": DOCS}).value is True
    j = judge(graph, {"response": "<d1> [2] <d1>", "documents": DOCS})
    assert j.value is False and j.raw == {"cited": ["d1"], "unknown": []}


def test_citations_of_an_item_without_its_optional_documents_fail_in_words():
    graph = graph_of("documents: documents?", "rule.citations_valid {}")
    j = judge(graph, {"response": "[d1]"})
    assert j.value is None and j.error == "the item has no `documents`"


# -- rule.count -----------------------------------------------------------------

CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Book it."},
    {"role": "assistant", "content": None, "tool_calls": [_openai("a", "find", {}), _openai("b", "book", {"x": 1})]},
    {"role": "tool", "tool_call_id": "a", "content": "[]"},
    {"role": "tool", "tool_call_id": "b", "content": "ok"},
    {"role": "assistant", "content": None, "tool_calls": [_openai("c", "find", {})]},
    {"role": "tool", "tool_call_id": "c", "content": "[]"},
    {"role": "assistant", "content": "Booked."},
]


@pytest.mark.parametrize(
    ("criterion", "value"),
    [
        ("rule.count {}", 8),
        ("rule.count { role = tool }", 3),
        ("rule.count { of = tool_calls }", 3),
        ('rule.count { of = tool_calls, name = "find" }', 2),
    ],
)
def test_count_of_turns_and_tool_calls(criterion, value):
    graph = graph_of("response: conversation", criterion, "ordinal[0, 20]")
    j = judge(graph, {"response": CHAT})
    assert j.value == value and j.raw == value


def test_count_within_bounds():
    at_most_two = graph_of("response: conversation", "rule.count { of = tool_calls, max = 2 }")
    assert judge(at_most_two, {"response": CHAT}).value is False
    between = graph_of("response: conversation", "rule.count { of = tool_calls, min = 1, max = 3 }")
    assert judge(between, {"response": CHAT}).value is True


# -- end to end -----------------------------------------------------------------


def test_rbg_run_and_replay_a_structure_graph(tmp_path: Path):
    graph = tmp_path / "g.rbg"
    graph.write_text((Path(__file__).parent / "corpus" / "valid" / "structure_rules.rbg").read_text())
    trajectory = [
        {"role": "user", "content": "Look me up."},
        {"role": "assistant", "content": None, "tool_calls": [_openai("a", "get_user_details", {"user_id": "u1"})]},
        {"role": "tool", "tool_call_id": "a", "content": "{}"},
        {"role": "assistant", "content": "Found you."},
    ]
    item = {
        "id": "i1",
        "input": [{"role": "user", "content": "Look me up."}],
        "response": trajectory,
        "gold_calls": [{"get_user_details": {"user_id": ["u1"]}}],
        "documents": [{"id": "d1", "text": "Policy."}],
        "answer": '{"answer": "see [d1]"}',
    }
    bad = {**item, "id": "i2", "gold_calls": {"not": "a list"}}
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps(item) + "\n" + json.dumps(bad) + "\n")
    traces = tmp_path / "t.jsonl"
    result = CliRunner().invoke(cli, ["run", str(graph), str(items), "--out", str(traces)])
    assert result.exit_code == 1 and "ok 1   abstain 0   error 1" in result.output, result.output
    records = {r["item"]: r for r in map(json.loads, traces.read_text().splitlines()) if "item" in r}
    assert records["i1"]["readout"]["decision"] is True
    failed = records["i2"]["criteria"]["right_calls"]["response"]
    assert failed["value"] is None and failed["error"] == "`gold_calls` is not an array of expected tool calls"
    replay = CliRunner().invoke(cli, ["replay", str(graph), str(traces)])
    assert replay.exit_code == 0, replay.output
