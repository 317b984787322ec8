"""The fits of docs/results.md ("Fitted numbers"), rerun and pinned: the
fitted numbers and the held-out figures (cross-validation off: it changes
neither), and the SFRES items as `rbg items convert` makes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubriclang.cli.main import cli

ROOT = Path(__file__).resolve().parent.parent.parent
EX = ROOT / "examples"
SFRES_SOURCE = ROOT.parent.parent / "shared" / "data" / "sfres" / "sfres.json"

CASES = {
    "topical_chat": (
        ["topical_chat/weighted.rbg", "topical_chat/items.jsonl", "--annotations", EX / "topical_chat/annotations.jsonl"],
        {"aspects.weights[3]": 1.72, "understood.at": 0.2194, "overall.max": 2.992},
        {"fitted": 0.966, "as written": 0.945, "equal baseline": 0.957},
    ),
    "llm_rubric": (
        ["llm_rubric/weighted.rbg", "llm_rubric/items.jsonl", "--recorded", EX / "llm_rubric/recorded.jsonl", "--split-file", EX / "llm_rubric/dev_ids.txt", "--compare", EX / "llm_rubric/direct.rbg"],
        {"satisfaction.weights[7]": 2.622},
        {"fitted": -0.050, "as written": -0.017, "equal baseline": 0.162, "direct": 0.095},
    ),
    "llm_rubric_graded": (
        ["llm_rubric/graded.rbg", "llm_rubric/items.jsonl", "--recorded", EX / "llm_rubric/recorded.jsonl", "--split-file", EX / "llm_rubric/dev_ids.txt", "--metric", "exact", "--compare", EX / "llm_rubric/direct_graded.rbg"],
        {"cut_2.at": 2.905, "cut_3.at": 1.475, "cut_4.at": 2.484},
        {"fitted": 0.068, "as written": 0.061, "equal baseline": 0.150, "direct": 0.010},
    ),
    "sfres": (
        ["sfres/rubric.rbg", "sfres/items.jsonl"],
        {"aspects.weights[0]": 0.3799, "aspects.weights[1]": 1.62, "informative.at": 5.43, "overall.max": 5.198},
        {"fitted": 0.731, "as written": 0.723, "equal baseline": 0.723},
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_results_page_fits_are_what_rbg_fit_computes(name, tmp_path):
    args, params, spearman = CASES[name]
    graph, items, *rest = args
    r = CliRunner().invoke(cli, ["fit", str(EX / graph), str(EX / items), *map(str, rest), "-o", str(tmp_path / "f.rbg"), "--folds", "0", "--format", "json"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    fitted = {p["param"]: p["fitted"] for p in report["params"]}
    for k, v in params.items():
        assert fitted[k] == v
    metrics = report["held_out"]["modes"]["pointwise"]["metrics"]
    got = {next(n for n in metrics if n.startswith(col)): v for col, v in spearman.items()}
    for col, v in got.items():
        assert round(metrics[col]["spearman"]["value"], 3) == v, col


def test_the_sfres_items_are_what_the_documented_conversion_writes(tmp_path):
    if not SFRES_SOURCE.exists():
        pytest.skip("shared data not present")
    out = tmp_path / "items.jsonl"
    r = CliRunner().invoke(cli, [
        "items", "convert", str(SFRES_SOURCE), "-o", str(out),
        "--field", "id=doc_id", "--field", "input=source", "--field", "response=system_output",
        "--field", "annotations.informativeness=scores.informativeness",
        "--field", "annotations.naturalness=scores.naturalness",
        "--gold", "scores.overall", "--graph", str(EX / "sfres/rubric.rbg"),
    ])
    assert r.exit_code == 0, r.output
    assert out.read_bytes() == (EX / "sfres/items.jsonl").read_bytes()
