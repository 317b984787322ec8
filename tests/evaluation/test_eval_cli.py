"""`rbg eval` end to end: traces are replayed, never trusted; every column is
scored on the same items, and every item left out is named with its reason;
baselines and comparisons; --min-coverage; deterministic output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubriclang.cli.main import cli

from .judges import BOOL, ORDINAL, PAIRWISE, SCORE, pair, pointwise, write, write_items


def rbg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _json(r) -> dict:
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def _score_items(tmp_path, n=30) -> Path:
    rows = [pointwise(i, 1 + (i * 7) % 5, a=1 + i % 5, b=1 + (i * 3) % 5, c=1 + (i // 2) % 5) for i in range(n)]
    return write_items(tmp_path / "items.jsonl", rows)


def test_eval_on_traces_agrees_with_eval_after_a_run(tmp_path):
    g = write(tmp_path / "g.rbg", SCORE)
    items = _score_items(tmp_path)
    traces = tmp_path / "t.jsonl"
    assert rbg("run", g, items, "--out", traces).exit_code == 0
    live = rbg("eval", g, items, "--format", "json")
    replayed = rbg("eval", g, items, "--traces", traces, "--format", "json")
    assert _json(live) == _json(replayed)


def test_traces_are_replayed_under_the_graph_given_not_read_as_recorded(tmp_path):
    g = write(tmp_path / "g.rbg", SCORE)
    items = _score_items(tmp_path)
    traces = tmp_path / "t.jsonl"
    rbg("run", g, items, "--out", traces)
    # Another version over the same criteria: its own decisions, from the same judgments.
    other = write(
        tmp_path / "min.rbg", SCORE.replace("reduce.mean", "reduce.min").replace("rubric sc", "rubric sc_min")
    )
    by_replay = _json(rbg("eval", other, items, "--traces", traces, "--format", "json", "--baseline", "none"))
    by_run = _json(rbg("eval", other, items, "--format", "json", "--baseline", "none"))
    assert by_replay == by_run
    assert (
        by_replay["modes"]["pointwise"]["metrics"]["sc_min"]
        != _json(rbg("eval", g, items, "--traces", traces, "--format", "json", "--baseline", "none"))["modes"][
            "pointwise"
        ]["metrics"]["sc"]
    )


def test_traces_of_another_graph_are_refused_with_the_line(tmp_path):
    g = write(tmp_path / "g.rbg", SCORE)
    items = _score_items(tmp_path)
    traces = tmp_path / "t.jsonl"
    rbg("run", g, items, "--out", traces)
    ordinal = write(tmp_path / "o.rbg", ORDINAL)
    r = rbg("eval", ordinal, items, "--traces", traces)
    assert r.exit_code == 2 and f"{traces}:1: the trace has no judgments for criterion `q`" in r.output
    redefined = write(tmp_path / "r.rbg", SCORE.replace('key = "c"', 'key = "d"'))
    r = rbg("eval", redefined, items, "--traces", traces)
    assert r.exit_code == 2 and "criterion `c` is defined differently" in r.output


def test_items_left_out_are_left_out_of_every_column_and_named_with_their_reason(tmp_path):
    g = write(tmp_path / "g.rbg", SCORE)
    rows = [pointwise(i, 3, a=3, b=3, c=3) for i in range(6)]
    rows[1] = pointwise(1, None, a=3, b=3, c=3)  # no gold
    rows[2] = pointwise(2, 3, a=3, b=3)  # criterion c has no recorded value: the judgment fails
    items = write_items(tmp_path / "items.jsonl", rows)
    report = _json(rbg("eval", g, items, "--format", "json"))
    mode = report["modes"]["pointwise"]
    assert mode["scored"] == 4 and mode["items"] == 6
    assert mode["left_out"]["by_item"] == [
        {"item": "i1", "reason": "no gold", "column": None},
        {"item": "i2", "reason": "judgment failed", "column": "sc"},
    ]
    assert {m["n"] for col in mode["metrics"].values() for m in col.values()} == {4}
    text = rbg("eval", g, items).output
    assert "4 of 6 items scored in every column" in text
    assert "no gold: 1 (i1)" in text and "judgment failed in `sc`: 1 (i2)" in text


def test_a_baseline_identical_to_the_graph_agrees_with_it_exactly(tmp_path):
    g = write(tmp_path / "g.rbg", SCORE)
    items = _score_items(tmp_path, n=60)
    for baseline in ("equal", "graph-weights"):
        mode = _json(rbg("eval", g, items, "--format", "json", "--baseline", baseline))["modes"]["pointwise"]
        graph, base = mode["metrics"]["sc"], mode["metrics"][f"{baseline} baseline"]
        assert graph == base
        diffs = mode["differences"][f"{baseline} baseline"]
        assert all(d["value"] == 0 for d in diffs.values())
        # No resample moves the difference: never a zero-width interval, which would read as certainty.
        assert all(d["low"] < 0 < d["high"] for m, d in diffs.items() if m in ("exact", "within_1"))
        assert all((d["low"], d["high"]) == (None, None) for m, d in diffs.items() if m not in ("exact", "within_1"))


def test_graph_weights_baseline_takes_the_top_reducers_weights_and_equal_does_not(tmp_path):
    weighted = SCORE.replace(
        "reduce.mean(inputs: [a, b, c])", "reduce.weighted_mean(inputs: [a, b, c]) { weights = [3, 1, 0] }"
    )
    g = write(tmp_path / "g.rbg", weighted)
    items = _score_items(tmp_path)
    cols = {
        c["name"]: c for c in _json(rbg("eval", g, items, "--format", "json", "--baseline", "graph-weights"))["columns"]
    }
    assert cols["graph-weights baseline"]["weights"] == {"a": 3.0, "b": 1.0, "c": 0.0}
    cols = {c["name"]: c for c in _json(rbg("eval", g, items, "--format", "json"))["columns"]}
    assert cols["equal baseline"]["weights"] == {"a": 1.0, "b": 1.0, "c": 1.0}
    assert [c["name"] for c in _json(rbg("eval", g, items, "--format", "json", "--baseline", "none"))["columns"]] == [
        "sc"
    ]


def test_several_graphs_are_scored_on_the_same_items_with_paired_differences(tmp_path):
    a = write(tmp_path / "a.rbg", SCORE)
    b = write(tmp_path / "b.rbg", SCORE.replace("reduce.mean", "reduce.max"))
    rows = [pointwise(i, 1 + i % 5, a=1 + i % 5, b=1 + (i * 3) % 5, c=1 + (i // 2) % 5) for i in range(40)]
    items = write_items(tmp_path / "items.jsonl", rows)
    report = _json(rbg("eval", a, b, items, "--format", "json", "--baseline", "none"))
    # Both are `rubric sc`: the columns are named by path.
    assert [c["name"] for c in report["columns"]] == [str(a), str(b)]
    mode = report["modes"]["pointwise"]
    diff = mode["differences"][str(b)]["mae"]
    # The first column minus each other one, as the JSON's `differences_of` says.
    assert report["differences_of"] == str(a)
    assert diff["value"] == pytest.approx(
        mode["metrics"][str(a)]["mae"]["value"] - mode["metrics"][str(b)]["mae"]["value"], abs=1e-6
    )
    assert diff["low"] <= diff["value"] <= diff["high"]
    assert list(mode["differences"]) == [str(b)]


def test_an_item_failed_in_one_graph_is_left_out_of_all_of_them(tmp_path):
    a = write(tmp_path / "a.rbg", SCORE)
    b = write(tmp_path / "b.rbg", SCORE.replace('key = "c"', 'key = "d"').replace("rubric sc", "rubric sd"))
    rows = [pointwise(i, 3, a=3, b=3, c=3, d=3) for i in range(5)]
    rows[0] = pointwise(0, 3, a=3, b=3, c=3)  # no `d`: fails in b only
    items = write_items(tmp_path / "items.jsonl", rows)
    mode = _json(rbg("eval", a, b, items, "--format", "json"))["modes"]["pointwise"]
    assert mode["scored"] == 4
    assert mode["left_out"]["counts"] == {"judgment failed": {"sd": 1}}
    assert all(m["n"] == 4 for col in mode["metrics"].values() for m in col.values())


def test_graphs_with_different_outputs_cannot_share_gold(tmp_path):
    a = write(tmp_path / "a.rbg", SCORE)
    b = write(tmp_path / "b.rbg", ORDINAL.replace("output = ordinal[1, 5]", "output = score[1, 5]"))
    r = rbg("eval", a, b, _score_items(tmp_path))
    assert r.exit_code == 2 and "same output type" in r.output


def test_min_coverage_fails_when_too_few_items_are_scored(tmp_path):
    g = write(tmp_path / "g.rbg", SCORE)
    rows = [pointwise(i, 3, a=3, b=3, c=3) for i in range(4)] + [pointwise(9, 3, a=3)]
    items = write_items(tmp_path / "items.jsonl", rows)
    assert rbg("eval", g, items, "--min-coverage", "0.8").exit_code == 0
    r = rbg("eval", g, items, "--min-coverage", "0.9")
    assert r.exit_code == 1 and "coverage 0.800 is below --min-coverage 0.9" in r.output


def test_pairwise_rows_are_named_once_and_ties_count_in_agreement_but_not_in_agreement_without_ties(tmp_path):
    g = write(tmp_path / "g.rbg", PAIRWISE)
    rows = [
        pair(0, "a", 0.9, 0.1),
        pair(1, "b", 0.9, 0.1),
        pair(2, "tie", 0.9, 0.1),
        pair(3, "tie", 0.5, 0.5),
        pair(4, "a", 0.5, 0.5),
    ]
    items = write_items(tmp_path / "items.jsonl", rows)
    r = rbg("eval", g, items, "--baseline", "none")
    rows_named = [
        line.split()[0] for line in r.output.splitlines() if line.startswith("  ") and not line.startswith("   ")
    ]
    names = ("agreement", "agreement_without_ties", "coverage", "tie_rate", "abstain_rate")
    metric_rows = [n for n in rows_named if n in names]
    assert metric_rows == list(names) and "accuracy" not in rows_named
    m = _json(rbg("eval", g, items, "--baseline", "none", "--format", "json"))["modes"]["pairwise"]["metrics"]["pref"]
    assert "accuracy" not in m  # one name, one formula: accuracy is the bool and label judges' mean [p = g]
    # p0 right, p1 wrong; p2 (gold tie) and p3, p4 (judge tie) are not counted
    assert m["agreement_without_ties"]["value"] == 0.5
    assert m["agreement"]["value"] == 0.4  # three-way: p0 and p3 right of 5
    assert (m["coverage"]["value"], m["tie_rate"]["value"]) == (0.6, 0.4)


def test_the_report_is_byte_identical_across_runs(tmp_path):
    g = write(tmp_path / "g.rbg", SCORE)
    items = _score_items(tmp_path)
    assert rbg("eval", g, items).output == rbg("eval", g, items).output


def test_eval_prints_no_numpy_warnings_on_constant_figures(tmp_path):
    g = write(tmp_path / "g.rbg", BOOL)
    # Constant decisions and gold: correlations, precision and kappa are undefined.
    items = write_items(tmp_path / "items.jsonl", [pointwise(i, True, good=True) for i in range(5)])
    exe = str(Path(sys.executable).with_name("rbg"))
    proc = subprocess.run([exe, "eval", str(g), str(items)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "" and "Warning" not in proc.stdout
    assert "n/a" in proc.stdout


RESCALED = """rubric rs { version = 1 }
contract { scale = score[1, 5] }
criterion a: score[0, 1] = recorded.value { key = "a" }
criterion b: ordinal[1, 3] = recorded.value { key = "b" }
node a5 = transform.rescale(value: a) { to = score[1, 5] }
node b5 = transform.rescale(value: b) { to = score[1, 5] }
node m = reduce.mean(inputs: [a5, b5])
sink m
readout pointwise { output = ordinal[1, 5] }
"""


def test_a_baseline_rescaling_criteria_as_the_graph_does_agrees_with_it_exactly(tmp_path):
    g = write(tmp_path / "g.rbg", RESCALED)
    # Values that land on quantization boundaries after rescaling (x.5).
    rows = [pointwise(i, 1 + i % 5, a=[0.0, 0.125, 0.375, 0.625, 1.0][i % 5], b=1 + i % 3) for i in range(45)]
    items = write_items(tmp_path / "items.jsonl", rows)
    mode = _json(rbg("eval", g, items, "--format", "json"))["modes"]["pointwise"]
    assert mode["metrics"]["rs"] == mode["metrics"]["equal baseline"]
    assert mode["confusion"] is None and mode["differences"]["equal baseline"]["exact"]["value"] == 0


def test_traced_items_missing_from_the_items_are_counted_in_a_note(tmp_path):
    g = write(tmp_path / "g.rbg", SCORE)
    traces = tmp_path / "t.jsonl"
    items = _score_items(tmp_path, n=10)
    rbg("run", g, items, "--out", traces)
    # The first 4 items as they were judged (a changed item's record would be refused, not scored).
    fewer = tmp_path / "few.jsonl"
    fewer.write_text("".join(items.read_text().splitlines(keepends=True)[:4]))
    report = _json(rbg("eval", g, fewer, "--traces", traces, "--format", "json"))
    assert report["notes"] == [f"6 records of `{traces}` are for items not in `{fewer}`: not scored"]
    assert report["modes"]["pointwise"]["scored"] == 4


def test_a_label_judge_gets_accuracy_macro_f1_kappa_and_its_confusion_matrix(tmp_path):
    from .judges import LABEL

    g = write(tmp_path / "g.rbg", LABEL)
    said = ["good", "good", "bad", "bad", "ugly", "ugly"]
    gold = ["good", "bad", "bad", "bad", "ugly", "good"]
    items = write_items(
        tmp_path / "items.jsonl", [pointwise(i, gv, c=s) for i, (s, gv) in enumerate(zip(said, gold, strict=True))]
    )
    report = _json(rbg("eval", g, items, "--format", "json"))
    mode = report["modes"]["pointwise"]
    assert report["notes"] == ["no equal baseline: the contract's scale `label{good, bad, ugly}` has no mean"]
    assert mode["metrics"]["lab"]["accuracy"]["value"] == pytest.approx(4 / 6, abs=1e-6)
    assert set(mode["metrics"]["lab"]) == {"accuracy", "macro_f1", "kappa"}
    assert mode["confusion"]["lab"] == {
        "gold": ["good", "bad", "ugly"],
        "predicted": ["good", "bad", "ugly"],
        "counts": [[1, 0, 1], [1, 2, 0], [0, 0, 1]],
    }
