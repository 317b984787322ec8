"""One name, one formula: every figure that `rbg eval`, `rbg fit` and the
viewer's eval page print is defined once (`metrics.DEFINITIONS`), and
docs/evaluation.md states that definition; proportions are honest at 0%
and 100% in every output."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubriclang.cli.main import cli
from rubriclang.evaluation.metrics import DEFINITIONS, METRICS
from rubriclang.view.pages import _eval_modes

from .judges import BOOL, LABEL, PAIRWISE, SCORE, pair, pointwise, write, write_items

DOCS = Path(__file__).resolve().parents[2] / "docs" / "evaluation.md"


def rbg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _docs_rows() -> list[tuple[str, bool, str]]:
    """(name, marked a proportion, formula) of every row of the Metrics tables."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("## Metrics") : text.index("## Intervals and paired differences")]
    rows = re.findall(r"^\| `(\w+)`( \*p\*)?(?: \((?:bool)\))? \| (.+) \|$", section, re.M)
    return [(name, bool(p), formula) for name, p, formula in rows]


def test_docs_define_every_figure_once_with_the_formula_the_code_prints():
    rows = _docs_rows()
    names = [name for name, _, _ in rows]
    # `accuracy` heads two tables (bool and label judges): the same row, the same formula.
    assert set(names) == set(DEFINITIONS)
    for name, proportion, formula in rows:
        d = DEFINITIONS[name]
        assert formula == d.formula, name
        assert proportion == d.proportion, name
    assert len({(n, f) for n, _, f in rows}) == len(DEFINITIONS)  # one formula per name


def test_every_family_names_only_defined_figures_and_pairwise_has_no_accuracy():
    assert all(name in DEFINITIONS for family in METRICS.values() for name in family)
    assert "accuracy" not in METRICS["pairwise"]
    assert list(METRICS["pairwise"]) == ["agreement", "agreement_without_ties", "coverage", "tie_rate", "abstain_rate"]
    assert all(m.proportion for m in METRICS["pairwise"].values())
    assert not any(DEFINITIONS[m].proportion for m in ("mae", "pearson", "spearman", "kendall", "macro_f1", "kappa"))


JUDGES = {
    "numeric": (SCORE, lambda i: pointwise(i, 1 + (i * 7) % 5, a=1 + i % 5, b=1 + (i * 3) % 5, c=1 + (i // 2) % 5)),
    "bool": (BOOL, lambda i: pointwise(i, i % 3 == 0, good=i % 2 == 0)),
    "label": (LABEL, lambda i: pointwise(i, ["good", "bad", "ugly"][i % 3], c=["good", "bad", "ugly"][i % 2])),
    "pairwise": (PAIRWISE, lambda i: pair(i, ["a", "b", "tie"][i % 3], 0.1 * (i % 7), 0.1 * (i % 5))),
}


@pytest.mark.parametrize("kind", sorted(JUDGES))
def test_eval_text_json_and_the_viewer_print_the_defined_names_in_one_order(tmp_path, kind):
    graph, row = JUDGES[kind]
    g = write(tmp_path / "g.rbg", graph)
    items = write_items(tmp_path / "items.jsonl", [row(i) for i in range(24)])
    doc = json.loads(rbg("eval", g, items, "--format", "json").output)
    mode = next(iter(doc["modes"].values()))
    order = list(METRICS[kind])
    for figures in mode["metrics"].values():
        assert sorted(figures) == sorted(order)
    assert doc["definitions"] == {name: DEFINITIONS[name].to_json() for name in order}
    text = rbg("eval", g, items).output
    rows = [line.split()[0] for line in text.splitlines() if line.startswith("  ") and line.split()[0] in order]
    assert rows[: len(order)] == order  # the metrics table, in the catalog's order
    for name in order:
        assert f"  {name}: {DEFINITIONS[name].formula}" in text  # the legend, from the one definition
    shape = next(iter(_eval_modes(doc).values()))
    assert shape["metrics"] == [(name, DEFINITIONS[name].formula) for name in order]
    assert shape["columns"] == [c["name"] for c in doc["columns"]]


@pytest.mark.parametrize(("good", "shown"), [(True, "1.000 [0.886, 1.000]"), (False, "0.000 [0.000, 0.114]")])
def test_a_proportion_of_30_of_30_or_0_of_30_has_an_interval_of_nonzero_width(tmp_path, good, shown):
    g = write(tmp_path / "g.rbg", BOOL)
    items = write_items(tmp_path / "items.jsonl", [pointwise(i, True, good=good) for i in range(30)])
    r = rbg("eval", g, items, "--baseline", "none")
    accuracy = next(line for line in r.output.splitlines() if line.split()[:1] == ["accuracy"])
    assert shown in accuracy
    est = json.loads(rbg("eval", g, items, "--baseline", "none", "--format", "json").output)
    acc = est["modes"]["pointwise"]["metrics"]["ok"]["accuracy"]
    assert acc["high"] - acc["low"] == pytest.approx(0.114, abs=0.001)


def test_a_paired_difference_of_two_constant_columns_is_not_printed_as_certain(tmp_path):
    g = write(tmp_path / "g.rbg", BOOL)
    h = write(tmp_path / "h.rbg", BOOL.replace("rubric ok", "rubric ok2"))
    items = write_items(tmp_path / "items.jsonl", [pointwise(i, True, good=True) for i in range(30)])
    doc = json.loads(rbg("eval", g, h, items, "--baseline", "none", "--format", "json").output)
    diff = doc["modes"]["pointwise"]["differences"]["ok2"]
    assert (diff["accuracy"]["value"], diff["accuracy"]["low"], diff["accuracy"]["high"]) == (0.0, -0.113513, 0.113513)
    # Not a proportion: no interval at all rather than [0, 0].
    assert (diff["macro_f1"]["value"], diff["macro_f1"]["low"], diff["macro_f1"]["high"]) == (0.0, None, None)
    text = rbg("eval", g, h, items, "--baseline", "none").output
    assert "+0.000 [-0.114, +0.114]" in text and "[+0.000, +0.000]" not in text


def test_rbg_fit_names_its_metric_and_the_held_out_figures_by_the_same_definitions(default_fit):
    r, _ = default_fit("--format", "json")
    doc = json.loads(r.stdout)
    assert doc["metric"] == "exact" and doc["metric_definition"] == DEFINITIONS["exact"].to_json()
    held = doc["held_out"]
    assert held["definitions"] == {name: DEFINITIONS[name].to_json() for name in METRICS["numeric"]}
    for figures in held["modes"]["pointwise"]["metrics"].values():
        assert sorted(figures) == sorted(METRICS["numeric"])
