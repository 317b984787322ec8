"""The audit's operators on declared structured fields (documents,
conversations with tool calls): each keeps the item coherent (a dropped
call takes its result with it), is reproducible from the seed, passes its
own check, and every variant still fits the declared shape, over real items
of examples/tau_bench, examples/begin and examples/bfcl."""

from __future__ import annotations

import json
from pathlib import Path
from random import Random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from rubriclang.audit.applicability import target_fields, why_skipped
from rubriclang.audit.judge import judge_info
from rubriclang.audit.perturb import structured as st
from rubriclang.audit.perturb.fields import RuleVariants
from rubriclang.audit.perturb.generate import rng_for
from rubriclang.audit.perturbations import load_perturbations
from rubriclang.audit.variants import apply_changes
from rubriclang.checker import check_source
from rubriclang.interp.items import read_items
from rubriclang.items.validate import check_value

REPO = Path(__file__).resolve().parents[2]
RULES = [n for n, op in load_perturbations().items() if op.acts_on and op.generator == "rule"]


def graph(item_decl: str, criterion: str):
    source = (
        "rubric r { version = 1 }\ncontract { scale = bool }\n"
        f"item {{ {item_decl} }}\ncriterion c: bool = {criterion}\nsink c\nreadout pointwise {{ output = bool }}\n"
    )
    result = check_source(source, "<test>")
    assert result.graph is not None, [str(d) for d in result.errors]
    return result.graph


JUDGES = {
    "tau_bench": graph(
        "response: conversation, actions: json",
        'rule.tool_calls_match { expected = "actions", extra = allow }',
    ),
    "begin": graph("input: conversation, documents: documents", "rule.citations_valid"),
    "bfcl": graph(
        "input: conversation, response: json, possible_answer: json",
        'rule.tool_calls_match { field = "response", expected = "possible_answer" }',
    ),
}


def items_of(name: str, n: int = 12):
    g = JUDGES[name]
    out = []
    for it in read_items(str(REPO / "examples" / name / "items.jsonl"), g.item_shape):
        out.append(it)
        if len(out) == n:
            break
    return g, out


def _variant(op_name: str, g, items, item, seed: int):
    op = load_perturbations()[op_name]
    return RuleVariants(items).variant(op, item, target_fields(op, g), lambda k: rng_for(seed, item.id, op_name, k))


@pytest.mark.parametrize("name", ["tau_bench", "begin", "bfcl"])
@settings(max_examples=25, deadline=None)
@given(seed=hs.integers(0, 10_000), pick=hs.integers(0, 11), op_index=hs.integers(0, len(RULES) - 1))
def test_every_rule_variant_of_a_real_item_fits_the_declared_shape_and_its_check(name, seed, pick, op_index):
    g, items = items_of(name)
    item = items[pick % len(items)]
    changes, v, detail = _variant(RULES[op_index], g, items, item, seed)
    if v.verdict == "failed":  # nothing of that kind to perturb in this item
        assert not changes
        return
    assert v.verdict == "accept", v.reason
    perturbed = apply_changes(item, changes)
    for spec in g.item_shape.fields:
        if spec.name == "response":
            for cid in perturbed.candidate_ids:
                check_value(spec, perturbed.fields["response"][cid], "response")
        elif spec.name in perturbed.fields:
            check_value(spec, perturbed.fields[spec.name], spec.name)
    assert perturbed.fields != item.fields
    assert detail["elements"] and all(e["field"] in changes["fields"] for e in detail["elements"])
    # The same seed makes the same variant.
    assert _variant(RULES[op_index], g, items, item, seed)[0] == changes


def _tau_item_with_calls():
    g, items = items_of("tau_bench")
    return g, items, next(it for it in items if st.call_sites("conversation", it.fields["response"][("response")]))


def test_a_dropped_tool_call_takes_its_tool_result_with_it_and_the_rendering_follows():
    g, items, item = _tau_item_with_calls()
    changes, v, detail = _variant("tool_calls.drop", g, items, item, 0)
    assert v.verdict == "accept"
    (element,) = detail["elements"]
    dropped = element["key"]
    before, after = item.fields["response"]["response"], changes["fields"]["response"]["response"]
    assert any(m.get("tool_call_id") == dropped for m in before)
    assert not any(m.get("tool_call_id") == dropped for m in after)
    assert not any(c["id"] == dropped for m in after for c in m.get("tool_calls") or ())
    assert f"[tool call {dropped}]" in item.candidates["response"]
    assert f"[tool call {dropped}]" not in dict(changes["candidates"])["response"]
    assert st.check_dropped(before, after, dropped) is None
    assert st.check_dropped(before, before, dropped) is not None


def test_a_corrupted_argument_keeps_its_json_type_and_the_arguments_stay_a_json_object():
    conversation: list[dict[str, Any]] = [
        {"role": "user", "content": "book it"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"n": 3, "ok": true}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "done"},
    ]
    for seed in range(20):
        corrupted = st.corrupt_argument("conversation", conversation, (1, 0), Random(seed))
        assert corrupted is not None
        new, name = corrupted
        args = json.loads(new[1]["tool_calls"][0]["function"]["arguments"])
        assert type(args[name]) is type(json.loads(conversation[1]["tool_calls"][0]["function"]["arguments"])[name])
        assert args[name] != {"n": 3, "ok": True}[name]
        assert st.check_corrupted("conversation", conversation, new, (1, 0), name) is None
    assert st.check_corrupted("conversation", conversation, conversation, (1, 0), "n") is not None


def test_the_supporting_document_is_the_gold_one_else_the_cited_one_else_the_most_overlapping():
    docs = [{"id": "a", "text": "cats purr"}, {"id": "b", "text": "dogs bark loudly at night"}]
    assert st.supporting_document(docs, "dogs bark at night", gold="a") == (0, "supporting")
    assert st.supporting_document(docs, "as [a] says, dogs bark at night") == (0, "cited")
    assert st.supporting_document(docs, "dogs bark at night") == (1, "overlap")
    assert st.supporting_document([], "x") is None


def test_an_inserted_document_gets_a_unique_id_and_the_originals_keep_their_order():
    docs = [{"id": "1", "text": "one"}, {"id": "2", "text": "two"}]
    new, new_id = st.insert_document(docs, {"id": "1", "text": "elsewhere"}, Random(3))
    assert new_id == "1~2" and [d["id"] for d in new if d["id"] != new_id] == ["1", "2"]
    assert st.check_insert(docs, new, new_id) is None
    assert st.check_insert(docs, [*docs, {"id": "9", "text": "one"}], "9") is not None


def test_a_shuffle_changes_the_order_and_nothing_else():
    docs = [{"id": i, "text": str(i)} for i in range(4)]
    new = st.shuffle_documents(docs, Random(1))
    assert new is not None and new != docs and st.check_shuffle(docs, new) is None
    assert st.shuffle_documents(docs, Random(1)) == new
    assert st.shuffle_documents(docs[:1], Random(1)) is None
    assert st.check_shuffle(docs, docs) is not None


def test_operators_apply_by_the_declared_kinds_a_criterion_reads_and_text_operators_skip_structured_fields():
    g, items = items_of("tau_bench", 2)
    judge = judge_info(g, items)
    ops = load_perturbations()
    assert why_skipped(ops["tool_calls.drop"], judge) is None
    assert "documents" in (why_skipped(ops["documents.shuffle"], judge) or "")
    typo = ops["typo_noise"].with_options({"fields": ["response"]})
    assert "response: conversation" in (why_skipped(typo, judge) or "")
    g, items = items_of("begin", 2)
    judge = judge_info(g, items)
    assert why_skipped(ops["documents.shuffle"], judge) is None
    assert "directional operators apply to pointwise" not in (
        why_skipped(ops["documents.remove_supporting"], judge) or ""
    )


def _as_trajectory(actions: list[dict]) -> list[dict]:
    """Gold actions as an agent's run: one assistant call each, with its result."""
    out: list[dict] = [{"role": "user", "content": "help me"}]
    for i, a in enumerate(actions):
        call = {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": a["name"], "arguments": json.dumps(a["kwargs"])},
        }
        out += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{i}", "content": "ok"},
        ]
    return [*out, {"role": "assistant", "content": "Done."}]


def test_an_audit_of_a_rules_only_tool_call_judge_detects_dropped_and_corrupted_calls(rbg, tmp_path):
    judge = tmp_path / "calls.rbg"
    judge.write_text(
        "rubric calls { version = 1 }\ncontract { scale = bool }\n"
        "item { response: conversation, actions: json, documents: documents, note: text }\n"
        'criterion right: bool = rule.tool_calls_match { expected = "actions" }\n'
        'criterion cited: bool = rule.citations_valid { field = "note", at_least = 1 }\n'
        "node both = reduce.all(inputs: [right, cited])\nsink both\nreadout pointwise { output = bool }\n",
        "utf-8",
    )
    rows = []
    for line in (REPO / "examples" / "tau_bench" / "items.jsonl").read_text("utf-8").splitlines():
        row = json.loads(line)
        if row["actions"] and all(a["kwargs"] for a in row["actions"]):
            docs = [{"id": "p1", "text": f"policy of {row['id']}"}, {"id": "p2", "text": "policy two"}]
            trajectory = _as_trajectory(row["actions"])
            rows.append(
                {"id": row["id"], "response": trajectory, "actions": row["actions"], "documents": docs, "note": "[p1]"}
            )
        if len(rows) == 4:
            break
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    suite = tmp_path / "suite.toml"
    ops = '["tool_calls.drop", "tool_calls.corrupt_argument", "documents.shuffle", "documents.insert_irrelevant"]'
    suite.write_text(f'judge = "{judge}"\nitems = "{items}"\nrepeats = 1\noperators = {ops}\n', "utf-8")
    result = rbg("audit", suite, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    rep = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    for name in ("tool_calls.drop", "tool_calls.corrupt_argument"):
        rate = rep["by_operator"][name]["directional"]["detection_rate"]
        assert (rate["count"], rate["total"]) == (4, 4), rate
    for name in ("documents.shuffle", "documents.insert_irrelevant"):
        assert rep["by_operator"][name]["invariant"]["flipped"] == 0
    variants = rep["by_item"][rows[0]["id"]]["variants"]
    (dropped,) = variants[f"{rows[0]['id']}/tool_calls.drop"]["elements"]
    assert dropped["kind"] == "tool_call" and dropped["key"].startswith("call_")
    assert variants[f"{rows[0]['id']}/documents.insert_irrelevant"]["elements"][0]["kind"] == "document"


def _tau_suite(tmp_path, operators: str, extra: str = "") -> Path:
    judge = tmp_path / "calls.rbg"
    judge.write_text(
        "rubric calls { version = 1 }\ncontract { scale = bool }\nitem { response: conversation, actions: json }\n"
        'criterion right: bool = rule.tool_calls_match { expected = "actions" }\nsink right\n'
        "readout pointwise { output = bool }\n",
        "utf-8",
    )
    rows = []
    for line in (REPO / "examples" / "tau_bench" / "items.jsonl").read_text("utf-8").splitlines()[:8]:
        row = json.loads(line)
        if row["actions"]:
            rows.append({"id": row["id"], "response": _as_trajectory(row["actions"]), "actions": row["actions"]})
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    suite = tmp_path / "suite.toml"
    suite.write_text(f'judge = "{judge}"\nitems = "{items}"\nrepeats = 1\noperators = {operators}\n{extra}', "utf-8")
    return suite


def test_llm_paraphrases_change_one_turn_or_tool_result_are_validated_and_localised(rbg, scripted, tmp_path):
    from .helpers import user_text

    def answer(role, body):
        text = user_text(body)
        if role == "validator":
            return json.dumps({"reason": "scripted", "verdict": "accept"})
        for tag in ("turn", "tool_result"):
            if f"<{tag}>" in text:
                original = text.split(f"<{tag}>\n", 1)[1].split(f"\n</{tag}>", 1)[0]
                return json.dumps({tag: "In other words: " + original})
        raise AssertionError(text)

    server = scripted(answer)
    tables = f'[generator]\nbase_url = "{server.url}"\nmax_retries = 0\n[validator]\nbase_url = "{server.url}"\n'
    ops = '["conversation.paraphrase_turn", "conversation.paraphrase_tool_result"]'
    result = rbg("audit", _tau_suite(tmp_path, ops, tables), "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    rep = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    counts = {op["name"]: op["variants"] for op in rep["operators"]}
    n = rep["counts"]["items"]
    assert all(c["accepted"] == n and c["failed"] == 0 for c in counts.values()), counts
    assert rep["metrics"]["invariant"]["flipped"] == 0  # the rule reads calls, not their wording
    sealed = json.loads((tmp_path / "out" / "sealed.json").read_text("utf-8"))
    for v in sealed["variants"]:
        (element,) = v["detail"]["elements"]
        new = v["changes"]["fields"]["response"]["response"]
        if v["operator"] == "conversation.paraphrase_turn":
            assert element == {"field": "response", "kind": "turn", "key": "0", "candidate": "response"}
            assert new[0]["content"] == "In other words: help me"
        else:
            assert element["kind"] == "tool_result" and element["key"].startswith("call_")
            (changed,) = [m for m in new if m.get("content") == "In other words: ok"]
            assert changed["tool_call_id"] == element["key"]


def test_a_finding_names_the_element_it_changed_in_text_and_on_the_page():
    from rubriclang.audit.html.evidence import localization
    from rubriclang.audit.report_json import element_words

    elements = [{"field": "response", "kind": "tool_call", "key": "call_1", "candidate": "response", "argument": "n"}]
    assert element_words(elements) == "response: tool call call_1 argument `n`"
    assert element_words([{"field": "documents", "kind": "order", "key": None}]) == "documents: order"
    finding = {"localization": {"moved": [], "absorbed": [], "reached_sink": False}, "outcome": "missed"}
    page = str(localization({**finding, "elements": elements}))
    assert "Changed: response: tool call call_1 argument `n`." in page
    assert "Changed:" not in str(localization(finding))


def test_a_call_dropped_from_a_json_array_is_that_call_alone():
    calls = [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"x": 1}}, {"name": "c", "arguments": {}}]
    assert st.call_sites("json", calls) == [(0,), (1,), (2,)]
    new = st.drop_json_call(calls, (1,))
    assert [c["name"] for c in new] == ["a", "c"] and st.check_dropped_json(calls, new, 1) is None
    assert st.check_dropped_json(calls, calls[1:], 1) is not None
    assert st.check_dropped_json(calls, calls, 1) is not None


def test_the_planner_is_told_which_declared_field_an_operator_would_perturb():
    from rubriclang.audit.planner import acts_on

    g, items = items_of("begin", 2)
    judge = judge_info(g, items)
    ops = load_perturbations()
    assert "`documents`" in acts_on(ops["documents.shuffle"], judge)
    assert acts_on(ops["typo_noise"], judge) == ""


@pytest.mark.parametrize(
    ("example", "judge", "detected"),
    [("bfcl", "rubric.rbg", {"corrupt_argument": (60, 60), "drop": (60, 60)}),
     ("tau_bench", "rules.rbg", {"corrupt_argument": (5, 10), "drop": (4, 10)})],
)  # fmt: skip
def test_the_figures_docs_audit_md_gives_for_the_examples_rules_only_judges(rbg, tmp_path, example, judge, detected):
    folder = REPO / "examples" / example
    suite = tmp_path / "suite.toml"
    ops = '["tool_calls.corrupt_argument", "tool_calls.drop"]'
    suite.write_text(
        f'judge = "{folder / judge}"\nitems = "{folder / "items.jsonl"}"\nrepeats = 1\noperators = {ops}\n', "utf-8"
    )
    assert rbg("audit", suite, "--out", tmp_path / "out").exit_code == 0
    rep = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    for name, (count, total) in detected.items():
        rate = rep["by_operator"][f"tool_calls.{name}"]["directional"]["detection_rate"]
        assert (rate["count"], rate["total"]) == (count, total)


def test_a_rewritten_json_tool_result_must_return_the_same_values():
    original = '{"flight": "HAT136", "seats": 3}'
    assert st.check_same_values(original, '{ "seats": 3,  "flight": "HAT136" }') is None
    assert "values changed" in (st.check_same_values(original, '{"flight": "HAT137", "seats": 3}') or "")
    assert "is not" in (st.check_same_values(original, "Flight HAT136 has 3 seats.") or "")
    assert st.check_same_values("Booked.", "The booking is done.") is None
