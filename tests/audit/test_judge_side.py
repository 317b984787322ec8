"""Judge-side operators: patches of the graph's criteria, and the
`prompt_variant` hook they wait for in the LLM prompt renderer."""

from __future__ import annotations

import json

import pytest

from rubriclang.audit.catalog import load_catalog
from rubriclang.audit.judge import judge_info
from rubriclang.audit.perturb.generate import rule_patches
from rubriclang.audit.variants import Patch, Validation
from rubriclang.checker import check_source
from rubriclang.interp.items import item_from_json
from rubriclang.interp.trace import graph_hash

from .helpers import report

RATED = """\
rubric rated { version = 1 }
contract { scale = score[1, 5] }
criterion correct: ordinal[1, 5] = llm.rate {
  question = "How correct is the response?"
  anchors = { 1: "Wrong.", 3: "Partly right.", 5: "Right." }
}
criterion short: bool = rule.length { under = 3 }
node capped = gate.cap(value: correct, when: short) { max = 2 }
sink capped
readout pointwise { output = ordinal[1, 5] }
"""
HOOKS = frozenset({"format_first", "reasoning", "system", "anchor_order"})


def _judge():
    graph = check_source(RATED, "rated.rbg").graph
    return judge_info(graph, [item_from_json({"id": "1", "input": "q", "response": "r"}, "x")])


def test_rule_patches_set_the_prompt_variant_of_llm_criteria_only():
    judge = _judge()
    ops = load_catalog()
    (ordering,) = rule_patches(ops["instruction_ordering"], judge)
    assert ordering.criteria == {"correct": {"prompt_variant": {"format_first": True}}}
    styles = rule_patches(ops["reasoning_style"], judge)
    assert [p.id for p in styles] == ["reasoning_style.step_by_step", "reasoning_style.criterion_by_criterion"]
    (reorder,) = rule_patches(ops["criterion_reorder"], judge)
    assert reorder.criterion_order == ("short", "correct")
    patched = reorder.apply(judge.graph)
    assert [c.name for c in patched.criteria] == ["short", "correct"]
    assert patched.nodes["correct"].params["prompt_variant"] == {"anchor_order": "descending"}
    assert patched.nodes["short"].params == judge.graph.nodes["short"].params
    assert all(p.validation.verdict == "accept" for p in [ordering, *styles, reorder])


def test_the_patch_check_refuses_what_a_rule_should_never_make():
    from rubriclang.audit.perturb.rules import check_patch

    llm, every = ["correct"], ["correct", "short"]
    good = {"correct": {"prompt_variant": {"format_first": True}}}
    assert check_patch(good, None, llm, every, "format_first") is None
    assert "not an llm.* criterion" in check_patch({"short": good["correct"]}, None, llm, every, "format_first")
    assert "sets more than" in check_patch({"correct": {"prompt_variant": {"format_first": True}, "question": "x"}}, None, llm, every, "format_first")
    assert "cannot be" in check_patch({"correct": {"prompt_variant": {"reasoning": "loudly"}}}, None, llm, every, "reasoning")
    assert "another order" in check_patch({}, ("correct", "short"), llm, every, "anchor_order")
    assert "changes nothing" in check_patch({}, None, llm, every, "anchor_order")


def test_a_sealed_anchor_patch_gets_the_graphs_numeric_keys_back():
    judge = _judge()
    # Sealed JSON turns the anchors' keys into strings.
    patch = Patch("rubric_paraphrase", "rubric_paraphrase", {"correct": {"anchors": {"1": "Incorrect.", "3": "Half right.", "5": "Correct."}}}, None, Validation("llm", "accept"))
    anchors = patch.apply(judge.graph).nodes["correct"].params["anchors"]
    assert anchors == {1: "Incorrect.", 3: "Half right.", 5: "Correct."}


def test_hook_operators_run_through_the_prompt_renderers_variants(rbg, tmp_path, items_file, scripted):
    server = scripted(lambda role, body: json.dumps({"reason": "ok", "score": 4}))
    (tmp_path / "rated.rbg").write_text(RATED)
    path = tmp_path / "s.toml"
    path.write_text(
        f'items = "{items_file}"\ngold = false\nrepeats = 1\noperators = ["instruction_ordering", "reasoning_style", "criterion_reorder"]\n'
        f'[judge]\ngraph = "rated.rbg"\nbase_url = "{server.url}"\n'
    )
    assert rbg("audit", path, "--out", tmp_path / "with").exit_code == 0
    r = report(tmp_path / "with")
    assert all(op["status"] == "run" for op in r["operators"])
    assert r["metrics"]["invariant"]["variants"] == 12 * 4
    # Each patch is judged by its own graph: the traces name four more graphs.
    runs = [json.loads(line) for line in (tmp_path / "with" / "runs.jsonl").read_text().splitlines()]
    assert len({rec["trace"]["graph"]["hash"] for rec in runs}) == 5
    assert graph_hash(check_source(RATED, "rated.rbg").graph) in {rec["trace"]["graph"]["hash"] for rec in runs}
    # The judge really was asked differently: the reply format first, another reasoning instruction.
    users = [m["content"] for body in server.requests for m in body["messages"] if m["role"] == "user"]
    assert any(u.startswith("Give your rating first") for u in users)
    assert any("step by step" in u or "directly" in u or "each point of the scale" in u for u in users)


@pytest.mark.parametrize("op", ["prompt_paraphrase", "rubric_paraphrase"])
def test_text_operators_need_no_hook(op):
    from rubriclang.audit.applicability import why_skipped

    assert why_skipped(load_catalog()[op], _judge(), frozenset()) is None
