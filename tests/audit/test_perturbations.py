"""The operator catalog as data, `rbg audit catalog`, `rbg audit init`, and
which operators apply to which judges."""

from __future__ import annotations

import json

from rubriclang.audit.applicability import why_skipped
from rubriclang.audit.judge import judge_info
from rubriclang.audit.perturbations import GENERATORS, RELATIONS, SURFACES, load_perturbations
from rubriclang.audit.suite import load_suite
from rubriclang.checker import check_source
from rubriclang.interp.items import item_from_json

EXPECTED = {
    "judge_prompt": {"instruction_ordering", "reasoning_style", "role_framing", "prompt_paraphrase"},
    "rubric": {"criterion_reorder", "rubric_paraphrase"},
    "input": {
        "typo_noise", "input_paraphrase", "distractor_insertion", "context_compression", "documents.shuffle",
        "documents.insert_irrelevant", "documents.remove_supporting", "conversation.paraphrase_turn",
    },
    "output": {
        "format_conversion", "tone_shift", "uncertainty_calibration", "verbosity_shift", "unmet_requirement",
        "partial_completion", "format_violation", "unsupported_claim", "factual_inconsistency",
        "requirement_omission", "over_refusal", "conversation.paraphrase_tool_result", "tool_calls.drop",
        "tool_calls.corrupt_argument",
    },
    "paired": {"position_swap", "entity_renaming"},
}  # fmt: skip
RULES = {
    "instruction_ordering", "criterion_reorder", "typo_noise", "position_swap", "partial_completion",
    "documents.shuffle", "documents.insert_irrelevant", "documents.remove_supporting", "tool_calls.drop",
    "tool_calls.corrupt_argument",
}  # fmt: skip
DIRECTIONAL = {
    "unmet_requirement",
    "partial_completion",
    "format_violation",
    "unsupported_claim",
    "factual_inconsistency",
    "requirement_omission",
    "over_refusal",
    "documents.remove_supporting",
    "tool_calls.drop",
    "tool_calls.corrupt_argument",
}


def test_the_catalog_holds_every_operator_of_the_issue():
    ops = load_perturbations()
    assert {s: {n for n, op in ops.items() if op.surface == s} for s in SURFACES} == EXPECTED
    assert {n for n, op in ops.items() if op.generator == "rule"} == RULES
    assert {n for n, op in ops.items() if op.relation == "directional"} == DIRECTIONAL
    for op in ops.values():
        assert op.relation in RELATIONS and op.generator in GENERATORS
        assert op.summary and op.preserves and op.validation
        assert (op.generator == "llm") == bool(op.instruction) == bool(op.target)
        assert not op.breaks or op.relation == "directional"


def test_catalog_command_lists_every_operator(rbg):
    text = rbg("audit", "catalog").output
    assert all(f"{name}  (" in text for name in load_perturbations())
    data = json.loads(rbg("audit", "catalog", "--format", "json").output)
    assert [d["name"] for d in data] == list(load_perturbations())


LLM_JUDGE = """\
rubric helpful { version = 1 }
contract { scale = score[1, 5] }
criterion correct: ordinal[1, 5] = llm.rate {
  question = "How correct is it?"
  anchors = { 1: "Wrong.", 5: "Right." }
}
criterion long: bool = rule.length { over = 300 }
node capped = gate.cap(value: correct, when: long) { max = 3 }
sink capped
readout pointwise { output = ordinal[1, 5] }
"""


def _judge(text: str, item: dict):
    graph = check_source(text, "j.rbg").graph
    assert graph is not None
    return judge_info(graph, [item_from_json(item, "x")])


def test_which_operators_apply_follows_the_judge():
    judge = _judge(LLM_JUDGE, {"id": "1", "input": "q", "response": "r"})
    ops = load_perturbations()
    for name in ("prompt_paraphrase", "instruction_ordering", "role_framing", "reasoning_style", "criterion_reorder"):
        assert why_skipped(ops[name], judge) is None, name
    assert "measures the response's length" in (why_skipped(ops["verbosity_shift"], judge) or "")
    assert why_skipped(ops["over_refusal"], judge) is None
    assert "pairwise" in (why_skipped(ops["position_swap"], judge) or "")
    labels = LLM_JUDGE.replace("contract { scale = score[1, 5] }", "contract { scale = label{good, bad} }")
    labels = labels.replace(
        "node capped = gate.cap(value: correct, when: long) { max = 3 }\nsink capped",
        'criterion tone: label{good, bad} = llm.choose { question = "Tone?" }\nsink tone',
    )
    labels = labels.replace("output = ordinal[1, 5]", "output = label{good, bad}")
    categorical = _judge(labels, {"id": "1", "input": "q", "response": "r"})
    assert categorical.type == "categorical"
    assert "has no order" in (why_skipped(ops["over_refusal"], categorical) or "")


def test_init_writes_a_suite_that_loads_and_lists_what_applies(rbg, tmp_path, items_file):
    (tmp_path / "judge.rbg").write_text(LLM_JUDGE)
    out = tmp_path / "sub" / "suite.toml"
    out.parent.mkdir()
    result = rbg(
        "audit", "init", tmp_path / "judge.rbg", items_file, "-o", out, "--base-url", "http://localhost:8000/v1"
    )
    assert result.exit_code == 0, result.output
    suite = load_suite(str(out))
    assert suite.repeats == 5 and suite.judge_model.base_url == "http://localhost:8000/v1"
    assert suite.judge == str(tmp_path / "judge.rbg")
    assert suite.operators is not None
    assert "prompt_paraphrase" in suite.operators and "verbosity_shift" not in suite.operators
    assert "#   verbosity_shift: criterion `long` measures" in out.read_text()
    assert "(ordinal judge)" in out.read_text() and "[judge]" in out.read_text()
    assert rbg("audit", "init", tmp_path / "judge.rbg", items_file, "-o", out).exit_code == 2  # exists: not overwritten


def test_init_on_the_embedded_model_writes_rule_operators_and_two_repeats_and_says_why(rbg, tmp_path, items_file):
    (tmp_path / "judge.rbg").write_text(LLM_JUDGE)
    out = tmp_path / "suite.toml"
    result = rbg("audit", "init", tmp_path / "judge.rbg", items_file, "-o", out)
    assert result.exit_code == 0, result.output
    assert "sized for the embedded model" in result.output
    suite = load_suite(str(out))
    assert suite.repeats == 2
    assert suite.operators and all(suite.perturbation(n).generator == "rule" for n in suite.operators)
    text = out.read_text()
    assert "#   prompt_paraphrase: written by a generator model" in text and "--base-url" in text


def test_init_for_a_deterministic_judge_asks_for_one_repeat(rbg, tmp_path, items_file):
    from .helpers import GSM8K_JUDGE

    out = tmp_path / "suite.toml"
    assert (
        rbg("audit", "init", GSM8K_JUDGE, items_file, "-o", out, "--base-url", "http://localhost:8000/v1").exit_code
        == 0
    )
    suite = load_suite(str(out))
    assert suite.repeats == 1
    assert suite.operators is not None and suite.operators[:2] == ("format_conversion", "tone_shift")
    assert "partial_completion" in suite.operators and "typo_noise" not in suite.operators
