"""An operator that ran but had none of its variants accepted measured
nothing: the report says so, with the count and the commonest reasons, in
report.json's operator list, report.txt (the terminal summary) and the page,
rather than leaving the operator out."""

from __future__ import annotations

import json

from .helpers import report
from .test_llm_paths import _tables, rewriter


def test_an_operator_whose_variants_were_all_rejected_is_listed_with_why(rbg, suite, scripted, tmp_path):
    server = scripted(rewriter(validate=lambda t: "reject"))
    body = 'repeats = 1\noperators = ["tone_shift", "typo_noise"]\n[options.typo_noise]\nfields = ["response"]\n'
    result = rbg("audit", suite(body + _tables(server.url, server.url)), "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    r = report(tmp_path / "out")
    (op,) = [o for o in r["operators"] if o["name"] == "tone_shift"]
    why = "all 12 variant(s) rejected: scripted reject (12)"
    assert op["status"] == "run" and op["reason"] == why
    assert "tone_shift" not in r["by_operator"] and "typo_noise" in r["by_operator"]
    text = (tmp_path / "out" / "report.txt").read_text()
    assert f"  tone_shift               {why}\n" in text
    assert text.index("tone_shift") < text.index("typo_noise")  # in name order among the measured
    assert why in result.stdout
    assert why in (tmp_path / "out" / "report.html").read_text()
    sealed = json.loads((tmp_path / "out" / "sealed.json").read_text())
    assert sealed["rejections"] == {"tone_shift": [{"verdict": "reject", "reason": "scripted reject", "count": 12}]}


def test_an_operator_that_could_make_no_variant_says_each_outcome():
    from rubriclang.audit.report_json import none_accepted

    counts = {"generated": 3, "accepted": 0, "rejected": 1, "unavailable": 2, "failed": 4}
    reasons = [{"verdict": "failed", "reason": "no word is long enough for a typo", "count": 4}]
    assert none_accepted(counts, reasons) == (
        "no variant accepted of 7 (1 rejected, 2 unavailable, 4 failed): no word is long enough for a typo (4)"
    )


def test_operators_with_accepted_variants_carry_no_rejections(rbg, suite, tmp_path):
    body = 'repeats = 1\noperators = ["typo_noise"]\n[options.typo_noise]\nfields = ["response"]\n'
    assert rbg("audit", suite(body), "--out", tmp_path / "out").exit_code == 0
    assert "rejections" not in json.loads((tmp_path / "out" / "sealed.json").read_text())
    assert all(o["reason"] is None for o in report(tmp_path / "out")["operators"])
