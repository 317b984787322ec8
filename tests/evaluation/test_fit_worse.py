"""`rbg fit` says when its own figures say the fit is worse than the graph
as written (and refuses with --refuse-worse), shows how much the figures
move with the split (--repeats), and reads every paired difference as
fitted minus the other column. Small synthetic items, fast fits."""

from __future__ import annotations

import json

from click.testing import CliRunner

from evaluation.test_fit import GRAPH, _fit, _items
from rubriclang.cli.main import cli


def _hurting_items(n=40):
    """Dev items (even ids) whose gold is `a`, held-out ones (odd) whose gold
    is `b`: a fit on dev leans on `a`, which the held-out labels punish."""
    rows = []
    for i in range(n):
        a, b = 1 + (i * 7) % 5, 1 + (i * 3) % 5
        gold = a if i % 2 == 0 else b
        rows.append({"id": str(i), "input": "", "response": "r", "gold": gold, "recorded": {"a": a, "b": b}})
    return rows


def _split_file(tmp_path, n=40):
    path = tmp_path / "dev.txt"
    path.write_text("".join(f"{i}\n" for i in range(0, n, 2)))
    return path


def _fit_hurting(tmp_path, *extra):
    graph = GRAPH.replace('criterion long: bool = recorded.value { key = "long" }\n', "").replace(
        "node capped = gate.cap(value: m, when: long) { max = 2 }\n\nsink capped", "sink m"
    )
    return _fit(tmp_path, graph, _hurting_items(), "--split-file", _split_file(tmp_path), *extra)


def test_a_fit_the_held_out_split_says_is_worse_is_written_with_a_warning(tmp_path):
    r, out = _fit_hurting(tmp_path)
    assert r.exit_code == 0, r.output
    assert out.exists()
    said = "warning: the held-out split says the fitted graph is worse than as written: exact fitted - as written -"
    assert said in r.stderr
    assert "was written all the same (--refuse-worse does not write it)" in r.stderr
    doc = json.loads(_fit_hurting(tmp_path, "--format", "json")[0].stdout)
    assert doc["written"] is True and any("held-out split says" in w for w in doc["warnings"])
    diff = doc["held_out"]["modes"]["pointwise"]["differences"]["as written (g.rbg)"]["exact"]
    assert diff["value"] < 0  # fitted minus as written: negative, the fitted graph is worse


def test_refuse_worse_exits_1_and_writes_nothing_when_the_fit_is_worse(tmp_path):
    r, out = _fit_hurting(tmp_path, "--refuse-worse")
    assert r.exit_code == 1, r.output
    assert not out.exists()
    assert "not written: the fit is worse than the graph as written (--refuse-worse)" in r.stderr
    assert "not written (--refuse-worse)" in r.stdout and "Wrote" not in r.stdout


def test_a_fit_that_helps_is_written_with_no_warning_even_with_refuse_worse(tmp_path):
    r, out = _fit(tmp_path, GRAPH, _items(), "--refuse-worse", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert out.exists() and doc["written"] is True and doc["warnings"] == []
    assert "warning" not in r.stderr
    assert doc["dev"]["fitted_minus_written"] == round(doc["dev"]["fitted"] - doc["dev"]["written"], 6) > 0


def test_paired_differences_read_fitted_minus_each_column(default_fit):
    r, _ = default_fit("--format", "json")
    held = json.loads(r.stdout)["held_out"]
    assert held["differences_of"] == "fitted (fitted.rbg)"
    mode = held["modes"]["pointwise"]
    for col, figures in mode["differences"].items():
        for name in ("mae", "spearman"):
            want = mode["metrics"]["fitted (fitted.rbg)"][name]["value"] - mode["metrics"][col][name]["value"]
            assert abs(figures[name]["value"] - want) < 1e-5
    text = default_fit()[0].stdout
    assert "paired differences, `fitted (fitted.rbg)` minus each column:" in text
    assert "fitted - as written" in text


def test_repeats_report_each_figures_mean_sd_and_range_across_random_splits(tmp_path):
    r, _out = _fit(tmp_path, GRAPH, _items(), "--repeats", "3", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    reps = doc["repeats"]
    assert reps["seeds"] == [0, 1, 2]
    exact = reps["held_out"]["pointwise"]["metrics"]["fitted (fitted.rbg)"]["exact"]
    assert exact["splits"] == 3 and exact["min"] <= exact["mean"] <= exact["max"] and exact["sd"] is not None
    # The first split's figure is one of the three.
    first = doc["held_out"]["modes"]["pointwise"]["metrics"]["fitted (fitted.rbg)"]["exact"]["value"]
    assert exact["min"] <= first <= exact["max"]
    assert set(reps["held_out"]["pointwise"]["differences"]) == {"as written (g.rbg)", "equal baseline"}
    assert reps["cross_validation"]["fitted_minus_written"]["splits"] == 3
    text = _fit(tmp_path, GRAPH, _items(), "--repeats", "3")[0].stdout
    assert "Across 3 random splits (seeds 0 to 2" in text and "mean, sd and [min, max]" in text


def test_one_split_says_repeats_would_show_how_much_it_moves(default_fit):
    r, _ = default_fit()
    assert "--repeats N shows how much each figure moves with the split" in r.stdout


def test_repeats_with_a_split_file_is_a_usage_error(tmp_path):
    r, out = _fit_hurting(tmp_path, "--repeats", "2")
    assert r.exit_code == 2 and "--repeats draws random splits" in r.output
    assert not out.exists()


def test_fit_help_documents_the_exit_status_and_the_refusal():
    r = CliRunner().invoke(cli, ["fit", "--help"])
    assert "--refuse-worse" in r.output and "--repeats" in r.output
    assert "1 refused by" in r.output and "2 bad input" in r.output
