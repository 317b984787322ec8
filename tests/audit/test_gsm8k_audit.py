"""A deterministic GSM8K verifier (`rule.matches_reference { mode = numeric }`)
audited end to end with the rule operators, through the CLI."""

from __future__ import annotations

import json
import re

import jsonschema

from .helpers import REPO, report

SCHEMA = json.loads((REPO / "rubriclang" / "audit" / "report.schema.json").read_text())


def test_deterministic_judge_has_no_repeat_flips_and_typos_keeping_numbers_flip_nothing(rbg, suite, tmp_path):
    path = suite('repeats = 3\noperators = ["typo_noise"]\n[options.typo_noise]\nfields = ["input", "response"]\n')
    result = rbg("audit", path, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    r = report(tmp_path / "out")
    assert r["metrics"]["repeat_flip_rate"]["count"] == 0 and r["metrics"]["repeat_flip_rate"]["total"] == 12 * 3
    inv = r["metrics"]["invariant"]
    assert (inv["variants"], inv["stable"], inv["flipped"], inv["failed"]) == (12, 12, 0, 0)
    assert inv["excess_over_noise"]["value"] == 0.0
    assert r["flips"] == []
    # Typos in the task and the response: the surface is both.
    assert list(r["by_surface"]) == ["paired"]
    # Every item's three repeats are identical.
    assert all(len({json.dumps(d) for d in e["baseline"]["decisions"]}) == 1 for e in r["by_item"].values())


def test_partial_completion_that_removes_the_final_answer_is_detected(rbg, suite, tmp_path):
    result = rbg("audit", suite('repeats = 1\noperators = ["partial_completion"]\n'), "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    r = report(tmp_path / "out")
    outcomes = {vid: v["outcome"] for e in r["by_item"].values() for vid, v in e["variants"].items()}
    # A bare solution ends on its final answer: cutting its last sentence
    # leaves an intermediate number last, and the verifier says false.
    assert {k: v for k, v in outcomes.items() if "-bare/" in k} == {
        f"gsm8k-000{i}-bare/partial_completion": "detected" for i in range(4)
    }
    # A wrong answer is already at the bottom: not eligible.
    assert all(v == "ineligible" for k, v in outcomes.items() if "-early/" in k)
    # `full` keeps the answer in the step before "The answer is N.": missed, honestly.
    assert all(v == "missed" for k, v in outcomes.items() if "-full/" in k)
    d = r["metrics"]["directional"]
    assert (d["eligible"], d["detected"], d["missed"], d["ineligible"]) == (8, 4, 4, 4)
    assert d["detection_rate"]["value"] == 0.5
    detected = r["by_item"]["gsm8k-0000-bare"]["variants"]["gsm8k-0000-bare/partial_completion"]
    assert detected["result"]["value"] is False
    assert r["by_criterion"]["correct"]["in_detections"] == 4
    miss = next(m for m in r["misses"] if m["variant"] == "gsm8k-0000-full/partial_completion")
    assert miss["original"]["candidates"][0][1].endswith("The answer is 18.")
    assert miss["perturbed"]["candidates"][0][1].endswith("market.")
    assert miss["changed"] == ["candidates"] and miss["localization"]["moved"] == []


def test_report_follows_its_schema_and_every_field_is_documented(rbg, suite, tmp_path):
    path = suite(
        'repeats = 2\noperators = ["typo_noise", "partial_completion", "position_swap", "role_framing"]\n'
        '[options.typo_noise]\nfields = ["response"]\n'
    )
    assert rbg("audit", path, "--out", tmp_path / "out").exit_code == 0
    r = report(tmp_path / "out")
    jsonschema.validate(r, SCHEMA)
    doc = (REPO / "docs" / "audit.md").read_text()
    names = set()

    def walk(schema):
        if isinstance(schema, dict):
            names.update(schema.get("properties", {}))
            for v in schema.values():
                walk(v)
        elif isinstance(schema, list):
            for v in schema:
                walk(v)

    walk(SCHEMA)
    # A field is documented when docs/audit.md names it in `code` or "quotes"
    # (alone or in a dotted path such as `suite.sealed`).
    documented = {part for word in re.findall(r'[`"]([A-Za-z_][\w.]*)[`"]', doc) for part in word.split(".")}
    assert sorted(names - documented) == []


def test_operators_that_do_not_apply_are_skipped_with_the_reason(rbg, suite, tmp_path):
    path = suite('repeats = 1\noperators = ["role_framing", "position_swap", "input_paraphrase", "typo_noise"]\n')
    assert rbg("audit", path, "--out", tmp_path / "out").exit_code == 0
    ops = {op["name"]: op for op in report(tmp_path / "out")["operators"]}
    assert all(op["status"] == "skipped" for op in ops.values())
    assert "no llm.* criteria" in ops["role_framing"]["reason"]
    assert "pairwise" in ops["position_swap"]["reason"]
    # The verifier reads the response and the reference, never the task.
    assert "reads the task input" in ops["input_paraphrase"]["reason"]
    assert "reads the task input" in ops["typo_noise"]["reason"]


def test_rerunning_a_finished_audit_gives_a_byte_identical_report(rbg, suite, tmp_path):
    path = suite('repeats = 2\noperators = ["partial_completion"]\n')
    rbg("audit", path, "--out", tmp_path / "out")
    first = (tmp_path / "out" / "report.json").read_bytes()
    lines = (tmp_path / "out" / "runs.jsonl").read_text().count("\n")
    assert rbg("audit", path, "--out", tmp_path / "out").exit_code == 0
    assert (tmp_path / "out" / "report.json").read_bytes() == first
    assert (tmp_path / "out" / "runs.jsonl").read_text().count("\n") == lines == (12 + 12) * 2


def test_text_report_names_the_figures(rbg, suite, tmp_path):
    result = rbg("audit", suite('repeats = 1\noperators = ["partial_completion"]\n'), "--out", tmp_path / "out")
    assert "detection rate         0.500 [0.215, 0.785]  (4/8 eligible, coverage 1.000)" in result.output
    assert (tmp_path / "out" / "report.txt").read_text() in result.output


def test_the_summary_without_a_model_is_computed_from_the_figures_with_exact_pointers(rbg, suite, tmp_path):
    result = rbg(
        "audit", suite('repeats = 1\noperators = ["partial_completion", "typo_noise"]\n'), "--out", tmp_path / "out"
    )
    assert result.exit_code == 0, result.output
    r = report(tmp_path / "out")
    s = r["summary"]
    assert (s["written_by"], s["model"], s["actions"], s["follow_ups"], s["dropped"]) == ("rules", None, [], [], [])
    # No rule fired: the one finding says what was checked, on which operators, and found nothing.
    [nothing] = s["findings"]
    assert nothing["text"].startswith("No finding. Checked:") and "(partial_completion)" in nothing["text"]
    assert nothing["figures"] == [
        "metrics.repeat_flip_rate",
        "by_operator.partial_completion.directional.detection_rate",
    ]
    # Detection is 4/8 (not below one half); typo_noise reads only the input, which the verifier ignores.
    assert [(e["figures"], e["items"]) for e in s["limitations"]] == [(["operators.typo_noise"], [])]
    jsonschema.validate(r, SCHEMA)
    assert "Summary (computed from the figures):" in (tmp_path / "out" / "report.txt").read_text()


def test_rule_summary_reports_a_missed_degradation_and_an_unstable_baseline_with_their_items(rbg, suite, tmp_path):
    from rubriclang.audit.summary import rule_summary

    rbg("audit", suite('repeats = 1\noperators = ["partial_completion"]\n'), "--out", tmp_path / "out")
    r = report(tmp_path / "out")
    block = r["by_operator"]["partial_completion"]["directional"]
    block["detection_rate"] = {**block["detection_rate"], "value": 0.25}
    r["metrics"]["baselines"].update(unstable=1, unstable_items=["gsm8k-0001-full"])
    s = rule_summary(r)
    missed = [f"gsm8k-000{i}-full/partial_completion" for i in range(4)]
    assert [(e["figures"], e["items"]) for e in s["findings"]] == [
        (["by_operator.partial_completion.directional.detection_rate"], missed)
    ]
    assert [(e["figures"], e["items"]) for e in s["limitations"]] == [
        (["metrics.baselines.unstable"], ["gsm8k-0001-full"])
    ]
