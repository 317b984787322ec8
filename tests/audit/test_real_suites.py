"""The audit suites of examples/audit/ and the figures docs/results.md
reports for them ("Judge audits"). Only the deterministic GSM8K audit is run
here (about a second); the LLM audits need the embedded model and minutes,
so for them this checks what can be checked without it: the suites load, the
judges fit their items, and the item files are what the build script makes.
"""

from __future__ import annotations

import collections
import subprocess
import sys
from pathlib import Path

import pytest

from rubriclang.audit.judge import judge_info
from rubriclang.audit.suite import load_suite
from rubriclang.checker import check_source
from rubriclang.evaluation.gold import read_gold
from rubriclang.interp.items import read_items
from rubriclang.items.shape import shape_of

from .helpers import REPO, report

SUITES = REPO / "examples" / "audit"
DATA = REPO.parent / "shared" / "data"
# suite -> (judge type, items in its item file, whether the judge calls an LLM)
EXPECTED = {
    "gsm8k.toml": ("binary", 450, False),
    "gsm8k_all.toml": ("binary", 450, False),
    "gsm8k_math.toml": ("ordinal", 450, True),
    "llmbar_natural.toml": ("pairwise", 30, True),
    "llmbar_mt_bench.toml": ("pairwise", 30, True),
    "mt_bench_multi.toml": ("ordinal", 12, True),
    "mt_bench_direct.toml": ("ordinal", 12, True),
    # Judges over declared item shapes (issue 26's ported judges).
    "begin.toml": ("categorical", 430, True),
    "bfcl.toml": ("binary", 298, False),
    "faithdial.toml": ("categorical", 240, True),
    "mt_bench_pair_both.toml": ("pairwise", 30, True),
    "mt_bench_pair_multi_turn.toml": ("pairwise", 6, True),
    "mt_bench_single_multi_turn.toml": ("ordinal", 6, True),
    "ragchecker.toml": ("pairwise", 100, True),
    "tau_bench.toml": ("binary", 32, True),
    "tau_bench_rules.toml": ("binary", 32, False),
}


def test_every_suite_is_listed_here():
    assert sorted(p.name for p in SUITES.glob("*.toml")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_suite_loads_and_its_judge_fits_its_items(name):
    suite = load_suite(str(SUITES / name))
    checked = check_source(Path(suite.judge).read_text("utf-8"), suite.judge)
    assert checked.graph is not None and not checked.diagnostics, checked.diagnostics
    items = list(read_items(suite.items, shape_of(checked.graph)))
    kind, count, uses_llm = EXPECTED[name]
    assert len(items) == count
    assert judge_info(checked.graph, items, suite.positive).type == kind
    if suite.gold:
        read_gold(items, checked.graph, suite.items)  # every gold fits the judge
    assert any(c.procedure.startswith("llm.") for c in checked.graph.criteria) == uses_llm


def test_pairwise_items_keep_llmbar_ids_and_name_the_better_output_as_gold():
    for name in ("llmbar_natural.jsonl", "llmbar_mt_bench.jsonl"):
        items = list(read_items(str(SUITES / name)))
        assert all(it.candidate_ids == ("output_1", "output_2") and it.gold in it.candidate_ids for it in items)


def test_the_side_by_side_suites_differ_only_in_the_judge():
    multi, direct = (load_suite(str(SUITES / n)) for n in ("mt_bench_multi.toml", "mt_bench_direct.toml"))
    same = ("items", "repeats", "tolerance", "seed", "operators", "options")
    assert all(getattr(multi, k) == getattr(direct, k) for k in same)
    assert multi.judge_model == direct.judge_model and multi.judge != direct.judge


@pytest.mark.skipif(not DATA.is_dir(), reason="the shared data folder is not here")
def test_build_script_regenerates_the_committed_item_files(tmp_path):
    script = REPO / "scripts" / "build_audit_items.py"
    subprocess.run(
        [sys.executable, str(script), "--data", str(DATA), "--out", str(tmp_path)], check=True, capture_output=True
    )
    for name in ("llmbar_natural.jsonl", "llmbar_mt_bench.jsonl", "mt_bench_short.jsonl"):
        assert (tmp_path / name).read_bytes() == (SUITES / name).read_bytes(), name


def _outcomes(r: dict) -> collections.Counter:
    """(answer kind, operator, outcome) -> variants; the kind is the item id's
    suffix: full, bare or early."""
    return collections.Counter(
        (item_id.rsplit("-", 1)[1], v["operator"], v["outcome"])
        for item_id, e in r["by_item"].items()
        for v in e["variants"].values()
    )


def test_gsm8k_audit_figures_are_those_reported(rbg, tmp_path):
    result = rbg("audit", SUITES / "gsm8k_all.toml", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    r = report(tmp_path / "out")
    m = r["metrics"]

    def rate(x):
        return (x["count"], x["total"], x["n"], x["value"], x["low"], x["high"])

    # Wilson intervals: 0 of 1350 repeats is not certainty ([0, 0.0028]), nor 0 of 450 variants.
    assert rate(m["repeat_flip_rate"]) == (0, 1350, 450, 0.0, 0.0, 0.002837)
    assert rate(m["invariant"]["flip_rate"]) == (0, 450, 450, 0.0, 0.0, 0.008464)
    assert m["invariant"]["excess_over_noise"]["value"] == 0.0
    assert rate(m["directional"]["detection_rate"]) == (150, 297, 297, 0.505051, 0.448489, 0.561483)
    assert (m["directional"]["ineligible"], m["directional"]["missed"], m["directional"]["failed"]) == (153, 147, 0)
    assert rate(m["gold"]["accuracy"]) == (447, 450, 450, 0.993333, 0.980585, 0.99773)
    assert _outcomes(r) == {
        ("full", "typo_noise", "stable"): 150,
        ("bare", "typo_noise", "stable"): 150,
        ("early", "typo_noise", "stable"): 150,
        ("bare", "partial_completion", "detected"): 147,
        ("bare", "partial_completion", "ineligible"): 3,
        ("full", "partial_completion", "missed"): 147,
        ("full", "partial_completion", "detected"): 3,
        ("early", "partial_completion", "ineligible"): 150,
    }
    # The three `bare` answers the verifier already misreads (a quantity
    # named after the answer) are the three `full` answers whose cut is
    # "detected": the cut leaves exactly that misread bare solution.
    misread = sorted(i for i, e in r["by_item"].items() if e["correct"] is False)
    assert misread == ["gsm8k-0020-bare", "gsm8k-0035-bare", "gsm8k-0147-bare"]
    detected_full = sorted(
        v
        for i, e in r["by_item"].items()
        if i.endswith("-full")
        for v, x in e["variants"].items()
        if x["outcome"] == "detected"
    )
    assert detected_full == [f"{i.removesuffix('-bare')}-full/partial_completion" for i in misread]
