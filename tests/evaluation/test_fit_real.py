"""The fits of docs/results.md ("Fitted numbers"), rerun and pinned: the
fitted numbers and the held-out figures (cross-validation off: it changes
neither), and the SFRES items as `rbg items convert` makes them. The pins are
in tests/real_figures.json (scripts/pin_real_figures.py rewrites them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from pinned import assert_pinned

from rubriclang.cli.main import cli

ROOT = Path(__file__).resolve().parent.parent.parent
EX = ROOT / "examples"
SFRES_SOURCE = ROOT.parent.parent / "shared" / "data" / "sfres" / "sfres.json"

# name -> (rbg fit's arguments, the parameters it fits, the report's columns)
CASES: dict[str, tuple[list[str | Path], list[str], list[str]]] = {
    "topical_chat": (
        [
            "topical_chat/weighted.rbg",
            "topical_chat/items.jsonl",
            "--annotations",
            EX / "topical_chat/annotations.jsonl",
        ],
        ["aspects.weights[3]", "understood.at", "overall.max"],
        ["fitted", "as written", "equal baseline"],
    ),
    "llm_rubric": (
        [
            "llm_rubric/weighted.rbg",
            "llm_rubric/items.jsonl",
            "--recorded",
            EX / "llm_rubric/recorded.jsonl",
            "--split-file",
            EX / "llm_rubric/dev_ids.txt",
            "--compare",
            EX / "llm_rubric/direct.rbg",
        ],
        ["satisfaction.weights[7]"],
        ["fitted", "as written", "equal baseline", "direct"],
    ),
    "llm_rubric_graded": (
        [
            "llm_rubric/graded.rbg",
            "llm_rubric/items.jsonl",
            "--recorded",
            EX / "llm_rubric/recorded.jsonl",
            "--split-file",
            EX / "llm_rubric/dev_ids.txt",
            "--metric",
            "exact",
            "--compare",
            EX / "llm_rubric/direct_graded.rbg",
        ],
        ["cut_2.at", "cut_3.at", "cut_4.at"],
        ["fitted", "as written", "equal baseline", "direct"],
    ),
    "sfres": (
        ["sfres/rubric.rbg", "sfres/items.jsonl"],
        ["aspects.weights[0]", "aspects.weights[1]", "informative.at", "overall.max"],
        ["fitted", "as written", "equal baseline"],
    ),
}


@pytest.mark.slow  # each fit is a minute of optimisation on 2 cores
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_results_page_fits_are_what_rbg_fit_computes(name, tmp_path):
    args, params, spearman = CASES[name]
    graph, items, *rest = args
    r = CliRunner().invoke(
        cli,
        [
            "fit",
            str(EX / graph),
            str(EX / items),
            *map(str, rest),
            "-o",
            str(tmp_path / "f.rbg"),
            "--folds",
            "0",
            "--format",
            "json",
        ],
    )
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)  # a fit worse than as written warns on stderr
    fitted = {p["param"]: p["fitted"] for p in report["params"]}
    for k in params:
        assert_pinned(f"fit.{name}.{k}", fitted[k])
    metrics = report["held_out"]["modes"]["pointwise"]["metrics"]
    for col in spearman:
        column = next(n for n in metrics if n.startswith(col))
        assert_pinned(f"fit.{name}.spearman.{col}", metrics[column]["spearman"]["value"], 3)


def test_the_sfres_items_are_what_the_documented_conversion_writes(tmp_path):
    if not SFRES_SOURCE.exists():
        pytest.skip("shared data not present")
    out = tmp_path / "items.jsonl"
    r = CliRunner().invoke(
        cli,
        [
            "items",
            "convert",
            str(SFRES_SOURCE),
            "-o",
            str(out),
            "--field",
            "id=doc_id",
            "--field",
            "input=source",
            "--field",
            "response=system_output",
            "--field",
            "annotations.informativeness=scores.informativeness",
            "--field",
            "annotations.naturalness=scores.naturalness",
            "--gold",
            "scores.overall",
            "--graph",
            str(EX / "sfres/rubric.rbg"),
        ],
    )
    assert r.exit_code == 0, r.output
    assert out.read_bytes() == (EX / "sfres/items.jsonl").read_bytes()
