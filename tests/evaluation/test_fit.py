"""`rbg fit`: only numbers move, fixed nodes keep theirs, the held-out
labels never reach the fit, and the same seed gives the same file."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from rubriclang.checker import check_source
from rubriclang.cli.main import cli
from rubriclang.evaluation.fit import dev_ids, folds
from rubriclang.evaluation.params import fixed_nodes, free_params
from rubriclang.interp.trace import graph_json
from rubriclang.syntax import parse

# Gold leans on `a` four times as much as on `b`; the graph, as written,
# weighs them the same, and caps long answers at 2.
GRAPH = """\
# Quality from two recorded ratings.
rubric q { version = 1 }

contract { scale = score[1, 5] }

criterion a: ordinal[1, 5] = recorded.value { key = "a" }
criterion b: ordinal[1, 5] = recorded.value { key = "b" }
criterion long: bool = recorded.value { key = "long" }

# Both ratings count.
node m = reduce.weighted_mean(inputs: [a, b]) { weights = [1, 1] }
node capped = gate.cap(value: m, when: long) { max = 2 }

sink capped

readout pointwise { output = ordinal[1, 5] }
"""


def _items(n=80, poison=None):
    rows = []
    for i in range(n):
        a, b, long = 1 + (i * 7) % 5, 1 + (i * 3) % 5, i % 9 == 0
        gold = min(5, max(1, round((4 * a + b) / 5)))
        if long:
            gold = min(gold, 4)
        if poison is not None and str(i) not in poison:
            gold = 6 - gold  # every held-out label reversed
        rows.append(
            {"id": str(i), "input": "", "response": "r", "gold": gold, "recorded": {"a": a, "b": b, "long": long}}
        )
    return rows


def _write(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _fit(tmp_path, graph=GRAPH, rows=None, *extra, out="fitted.rbg"):
    g = tmp_path / "g.rbg"
    g.write_text(graph)
    items = _write(tmp_path / "items.jsonl", rows if rows is not None else _items())
    o = tmp_path / out
    r = CliRunner().invoke(cli, ["fit", str(g), str(items), "-o", str(o), "--folds", "2", "--max-iter", "15", *extra])
    return r, o


def _numbers_blanked(text: str) -> str:
    return re.sub(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", "N", text)


def test_fit_changes_only_numbers_and_keeps_every_comment(default_fit):
    r, out = default_fit()
    assert r.exit_code == 0, r.output
    fitted = out.read_text()
    assert fitted != GRAPH
    assert _numbers_blanked(fitted) == _numbers_blanked(GRAPH)
    assert "# Both ratings count." in fitted and "# Quality from two recorded ratings." in fitted
    before, after = (check_source(t, "g.rbg").graph for t in (GRAPH, fitted))
    assert before is not None and after is not None
    strip = lambda gj: {**gj, "operators": [{k: v for k, v in o.items() if k != "params"} for o in gj["operators"]]}  # noqa: E731
    assert strip(graph_json(before)) == strip(graph_json(after))


def test_fit_recovers_the_heavier_weight_and_never_scores_worse_on_dev(default_fit):
    r, _ = default_fit("--format", "json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    w = {p["param"]: p["fitted"] for p in report["params"]}
    assert w["m.weights[0]"] > 2 * w["m.weights[1]"]
    assert report["dev"]["fitted"] >= report["dev"]["written"]
    assert abs(w["m.weights[0]"] + w["m.weights[1]"] - 2) < 0.01  # the written total is kept


def test_the_same_seed_writes_the_same_file_and_report(tmp_path):
    r1, o1 = _fit(tmp_path, GRAPH, None, "--seed", "3", out="a.rbg")
    r2, o2 = _fit(tmp_path, GRAPH, None, "--seed", "3", out="b.rbg")
    assert r1.exit_code == r2.exit_code == 0
    assert o1.read_bytes() == o2.read_bytes()
    assert r1.output.replace("a.rbg", "X") == r2.output.replace("b.rbg", "X")


def test_held_out_labels_never_reach_the_fit(tmp_path, default_fit):
    dev = dev_ids([str(i) for i in range(80)], 0.7, 0)
    r1, o1 = default_fit()
    r2, o2 = _fit(tmp_path, GRAPH, _items(poison=dev))
    assert r1.exit_code == r2.exit_code == 0, r2.output
    assert o1.read_bytes() == o2.read_bytes()
    # The report does read them: the poisoned held-out labels show in its
    # figures (both runs write a file of the same name, so names cannot differ).
    held1, held2 = (r.output.split("Held-out split")[1] for r in (r1, r2))
    assert "fitted (fitted.rbg)" in held1 and "fitted (fitted.rbg)" in held2
    figures1, figures2 = (re.findall(r"\d+\.\d+|n/a", h) for h in (held1, held2))
    assert figures1 != figures2


def test_a_fixed_node_keeps_its_numbers(tmp_path):
    graph = GRAPH.replace(
        "node capped = gate.cap(value: m, when: long) { max = 2 }",
        "node capped = gate.cap(value: m, when: long) { max = 2 }  # rbg: fixed",
    )
    graph = graph.replace("# Both ratings count.", "# Both ratings count.\n# rbg: fixed")
    r, out = _fit(tmp_path, graph)
    assert r.exit_code == 0, r.output
    assert out.read_text() == graph
    assert "no free numbers" in r.output


def test_a_fixed_marker_that_marks_no_node_is_an_error_at_its_line(tmp_path):
    graph = GRAPH.replace("sink capped", "sink capped  # rbg: fixed")
    r, out = _fit(tmp_path, graph)
    assert r.exit_code == 2
    assert "g.rbg:14" in r.output and "marks no node" in r.output
    assert not out.exists()


def test_numbers_on_an_ordinal_stay_whole(tmp_path):
    graph = GRAPH.replace(
        "node capped = gate.cap(value: m, when: long) { max = 2 }",
        "node capped = gate.cap(value: a, when: long) { max = 2 }\nnode unused = reduce.mean(inputs: [m, capped])",
    ).replace("sink capped", "sink unused")
    parsed = parse(graph, "g.rbg")
    g = check_source(graph, "g.rbg").graph
    assert g is not None and parsed.module is not None
    cap = next(p for p in free_params(g, parsed.module, set()) if p.node == "capped")
    assert cap.integer and (cap.lo, cap.hi) == (1, 5)
    r, out = _fit(tmp_path, graph)
    assert r.exit_code == 0, r.output
    assert re.search(r"\{ max = \d+ \}", out.read_text())


def test_search_ranges_follow_the_operators(tmp_path):
    graph = """rubric r { version = 1 }
contract { scale = score[0, 10] }
criterion s: score[0, 10] = recorded.value { key = "s" }
criterion ok: bool = recorded.value { key = "ok" }
node m = transform.map(value: ok) { values = { true: 8, false: 2 } }
node c = transform.clamp(value: s) { lo = 1, hi = 9 }
node v = gate.veto(value: c, when: ok) { to = 3 }
node t = reduce.weighted_mean(inputs: [m, v]) { weights = [2, 1] }
sink t
readout pointwise { output = score[0, 10] }
"""
    parsed = parse(graph, "g.rbg")
    g = check_source(graph, "g.rbg").graph
    assert g is not None and parsed.module is not None
    ranges = {p.label: (p.lo, p.hi, p.integer) for p in free_params(g, parsed.module, set())}
    assert ranges == {
        "m.values[True]": (2, 8, True),
        "m.values[False]": (2, 8, True),
        "c.lo": (0, 10, False),
        "c.hi": (0, 10, False),
        "v.to": (1, 9, False),
        "t.weights[0]": (0, 1, False),
        "t.weights[1]": (0, 1, False),
    }


def test_fixed_markers_cover_the_node_they_sit_in_after_or_above(tmp_path):
    graph = GRAPH.replace("node m =", "# rbg: fixed\nnode m =").replace("{ max = 2 }", "{ max = 2 } # rbg:fixed")
    parsed = parse(graph, "g.rbg")
    assert parsed.module is not None
    assert fixed_nodes(parsed.module, parsed.source) == ({"m", "capped"}, [])


def test_a_split_file_names_the_dev_items(tmp_path):
    ids = tmp_path / "dev.txt"
    ids.write_text("# dev\n" + "".join(f"{i}\n" for i in range(0, 80, 2)))
    r, _ = _fit(tmp_path, GRAPH, None, "--split-file", str(ids))
    assert r.exit_code == 0, r.output
    assert "on 40 of 40 dev items" in r.output and "40 items held out" in r.output
    ids.write_text("0\nnope\n")
    r, _ = _fit(tmp_path, GRAPH, None, "--split-file", str(ids))
    assert r.exit_code == 2 and "dev.txt:2" in r.output and "`nope`" in r.output


def test_the_hash_split_is_stable_and_near_its_share():
    ids = [f"item-{i}" for i in range(2000)]
    dev = dev_ids(ids, 0.7, 0)
    assert dev == dev_ids(list(reversed(ids)), 0.7, 0)
    assert 0.66 < len(dev) / len(ids) < 0.74
    assert dev != dev_ids(ids, 0.7, 1)
    parts = folds(sorted(dev), 5, 0)
    assert sorted(i for p in parts for i in p) == sorted(dev) and max(map(len, parts)) - min(map(len, parts)) <= 1


def test_a_bad_dev_label_is_an_error_at_its_line(tmp_path):
    rows = _items()
    dev = sorted(dev_ids([r["id"] for r in rows], 0.7, 0), key=int)
    rows[int(dev[0])]["gold"] = "high"
    r, out = _fit(tmp_path, GRAPH, rows)
    assert r.exit_code == 2
    assert f"items.jsonl:{int(dev[0]) + 1}" in r.output and "Traceback" not in r.output
    assert not out.exists()


def test_a_graph_with_llm_criteria_needs_traces(tmp_path):
    graph = GRAPH.replace(
        'recorded.value { key = "a" }', 'llm.rate { question = "How good?", anchors = { 1: "Bad.", 5: "Good." } }'
    )
    r, out = _fit(tmp_path, graph)
    assert r.exit_code == 2 and "--traces" in r.output
    assert not out.exists()


def test_the_report_puts_every_column_on_the_same_held_out_items(tmp_path):
    other = tmp_path / "direct.rbg"
    other.write_text("""rubric direct { version = 1 }
contract { scale = ordinal[1, 5] }
criterion a: ordinal[1, 5] = recorded.value { key = "a" }
sink a
readout pointwise { output = ordinal[1, 5] }
""")
    r, _ = _fit(tmp_path, GRAPH, None, "--compare", str(other), "--format", "json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    held = report["held_out"]
    assert [c["name"] for c in held["columns"]] == [
        "fitted (fitted.rbg)",
        "as written (g.rbg)",
        "equal baseline",
        "direct.rbg",
    ]
    mode = held["modes"]["pointwise"]
    assert mode["scored"] == report["split"]["held_out"]
    assert set(mode["differences"]) == {"as written (g.rbg)", "equal baseline", "direct.rbg"}
    assert report["cross_validation"] and len(report["cross_validation"]["folds"]) == 2


def test_check_and_fmt_import_neither_the_fit_nor_its_numerics(tmp_path):
    from test_cli import _imported

    g = tmp_path / "g.rbg"
    g.write_text(GRAPH)
    for command in (["check"], ["fmt", "--check"]):
        modules = _imported(*command, g)
        assert "rubriclang.syntax" in modules
        assert not {
            m for m in modules if m.split(".")[0] in ("scipy", "numpy") or m.startswith("rubriclang.evaluation")
        }


def test_fitted_numbers_keep_every_type_the_graph_was_checked_with(tmp_path):
    # Moving the clamp's bounds apart would widen the sink past the contract.
    graph = """rubric c { version = 1 }
contract { scale = score[2, 4] }
criterion a: ordinal[1, 5] = recorded.value { key = "a" }
node c = transform.clamp(value: a) { lo = 2, hi = 4 }
sink c
readout pointwise { output = ordinal[1, 5] }
"""
    rows = [
        {"id": str(i), "input": "", "response": "r", "gold": 1 + i % 5, "recorded": {"a": 1 + i % 5}} for i in range(40)
    ]
    r, out = _fit(tmp_path, graph, rows, "--metric", "exact")
    assert r.exit_code == 0, r.output
    fitted = check_source(out.read_text(), "f.rbg").graph
    written = check_source(graph, "g.rbg").graph
    assert fitted is not None and written is not None and fitted.nodes["c"].type == written.nodes["c"].type


PAIRWISE = """rubric pref { version = 1 }
contract { scale = score[1, 5] }
criterion a: ordinal[1, 5] = recorded.value { key = "a" }
criterion b: ordinal[1, 5] = recorded.value { key = "b" }
node m = reduce.weighted_mean(inputs: [a, b]) { weights = [1, 1] }
sink m
readout pairwise { resolve = tie }
"""


def test_a_pairwise_judge_is_fitted_on_agreement_without_ties_by_default(tmp_path):
    import random

    rng = random.Random(0)
    rows = []
    for i in range(60):
        ra = {c: {"a": rng.randint(1, 5), "b": rng.randint(1, 5)} for c in "xy"}
        sx, sy = (ra[c]["a"] * 9 + ra[c]["b"] for c in "xy")
        gold = "x" if sx > sy else "y" if sy > sx else "tie"
        rows.append({"id": f"p{i}", "input": "", "responses": {"x": "1", "y": "2"}, "gold": gold, "recorded": ra})
    r, _out = _fit(tmp_path, PAIRWISE, rows, "--format", "json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["metric"] == "agreement_without_ties"
    w = {p["param"]: p["fitted"] for p in report["params"]}
    assert w["m.weights[0]"] > w["m.weights[1]"]
    assert report["dev"]["fitted"] > report["dev"]["written"]
    assert "agreement_without_ties" in report["held_out"]["modes"]["pairwise"]["metrics"]["fitted (fitted.rbg)"]


def test_dev_items_the_fit_cannot_use_are_counted_by_reason(tmp_path):
    rows = _items()
    dev = sorted(dev_ids([r["id"] for r in rows], 0.7, 0), key=int)
    rows[int(dev[0])]["gold"] = None
    del rows[int(dev[1])]["recorded"]["a"]
    r, _ = _fit(tmp_path, GRAPH, rows)
    assert r.exit_code == 0, r.output
    assert f"dev items not fitted on, no gold: 1 ({dev[0]})" in r.output
    assert f"dev items not fitted on, judgment failed: 1 ({dev[1]})" in r.output
    assert f"on {len(dev) - 2} of {len(dev)} dev items" in r.output


def test_a_compared_graph_without_the_items_mode_is_refused_before_judging(tmp_path):
    other = tmp_path / "pw.rbg"
    other.write_text(PAIRWISE)
    r, out = _fit(tmp_path, GRAPH, None, "--compare", str(other))
    assert r.exit_code == 2 and "no `pointwise` readout" in r.output and "pw.rbg" in r.output
    assert "Traceback" not in r.output and not out.exists()


def test_an_unwritable_output_is_a_clear_error(tmp_path):
    r, _ = _fit(tmp_path, GRAPH, None, out="missing/fitted.rbg")
    assert r.exit_code == 2 and "cannot write" in r.output and "Traceback" not in r.output


def test_a_bad_held_out_label_is_reported_after_the_fitted_file_is_written(tmp_path, default_fit):
    rows = _items()
    dev = dev_ids([r["id"] for r in rows], 0.7, 0)
    held = next(int(r["id"]) for r in rows if r["id"] not in dev)
    rows[held]["gold"] = "high"
    r, out = _fit(tmp_path, GRAPH, rows)
    assert r.exit_code == 2 and f"items.jsonl:{held + 1}" in r.output
    assert "was written before the held-out labels were read" in r.output
    _clean, clean_out = default_fit()
    assert out.read_bytes() == clean_out.read_bytes()


def test_fitting_from_traces_writes_what_fitting_from_recorded_values_writes(tmp_path, default_fit):
    r, from_values = default_fit()
    assert r.exit_code == 0, r.output
    g, items = tmp_path / "g.rbg", _write(tmp_path / "items.jsonl", _items())
    g.write_text(GRAPH)
    traces = tmp_path / "t.jsonl"
    run = CliRunner().invoke(cli, ["run", str(g), str(items), "--out", str(traces)])
    assert run.exit_code == 0, run.output
    r, from_traces = _fit(tmp_path, GRAPH, None, "--traces", str(traces), out="traces.rbg")
    assert r.exit_code == 0, r.output
    assert from_traces.read_bytes() == from_values.read_bytes()


def test_one_fold_is_refused(tmp_path):
    g = tmp_path / "g.rbg"
    g.write_text(GRAPH)
    items = _write(tmp_path / "items.jsonl", _items())
    r = CliRunner().invoke(cli, ["fit", str(g), str(items), "-o", str(tmp_path / "f.rbg"), "--folds", "1"])
    assert r.exit_code == 2 and "--folds" in r.output


def test_cut_points_written_as_counted_thresholds_are_fitted_for_exact_agreement(tmp_path):
    graph = """rubric cuts { version = 1 }
contract { scale = ordinal[1, 4] }
criterion s: score[0, 1] = recorded.value { key = "s" }
node c2 = transform.threshold(value: s) { at = 0.25 }
node c3 = transform.threshold(value: s) { at = 0.5 }
node c4 = transform.threshold(value: s) { at = 0.75 }
node reached = reduce.count(inputs: [c2, c3, c4])
node grade = transform.map(value: reached) { values = { 0: 1, 1: 2, 2: 3, 3: 4 } } # rbg: fixed
sink grade
readout pointwise { output = ordinal[1, 4] }
"""
    # The gold grades change at 0.1, 0.2 and 0.9, not at the quarters.
    rows = [
        {
            "id": str(i),
            "input": "",
            "response": "r",
            "recorded": {"s": i / 100},
            "gold": 1 + (i >= 10) + (i >= 20) + (i >= 90),
        }
        for i in range(100)
    ]
    r, _out = _fit(tmp_path, graph, rows, "--format", "json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["metric"] == "exact"
    assert report["dev"]["fitted"] > 0.95 > report["dev"]["written"]
    cuts = sorted(p["fitted"] for p in report["params"])
    assert 0.05 < cuts[0] <= 0.15 < cuts[1] <= 0.25 and 0.85 < cuts[2] <= 0.95, cuts


def test_a_metric_the_judge_cannot_be_scored_by_is_refused(tmp_path):
    rows = [
        {
            "id": f"p{i}",
            "input": "",
            "responses": {"x": "1", "y": "2"},
            "gold": "x",
            "recorded": {"x": {"a": 2, "b": 1}, "y": {"a": 1, "b": 1}},
        }
        for i in range(20)
    ]
    for metric in ("spearman", "accuracy"):
        r, out = _fit(tmp_path, PAIRWISE, rows, "--metric", metric)
        assert r.exit_code == 2 and f"--metric {metric} does not score a pairwise judge" in r.output
        assert "use --metric agreement or agreement_without_ties" in r.output
        assert not out.exists()


def test_items_that_are_not_utf8_are_an_error_at_their_line(tmp_path):
    g = tmp_path / "g.rbg"
    g.write_text(GRAPH)
    items = tmp_path / "items.jsonl"
    items.write_bytes(b'{"id": "1", "input": "caf\xe9", "response": "r"}\n')
    r = CliRunner().invoke(cli, ["fit", str(g), str(items), "-o", str(tmp_path / "f.rbg")])
    assert r.exit_code == 2 and "items.jsonl:1: not UTF-8 text" in r.output and "Traceback" not in r.output


def test_weights_are_known_by_their_catalog_mark_not_by_their_name():
    # A plugin's list marked `fit = "weights"` may be called anything: it is
    # searched in [0, 1] from its largest, and written back at its total.
    from rubriclang.evaluation.fit import _search_point
    from rubriclang.evaluation.params import Param, concrete, weights_total

    number: Any = None  # where the number is written: not read by these
    params = [Param("q", "coefficients", i, w, 0.0, 1.0, False, number, "weights") for i, w in enumerate((3.0, 1.0))]
    params.append(Param("q", "cap", None, 4.0, 1.0, 5.0, False, number, "interval"))
    assert weights_total(params) == {"q": 4.0}
    assert [_search_point(p, params) for p in params] == [1.0, 1 / 3, 4.0]
    assert concrete(params, [0.5, 0.5, 4.0], weights_total(params)) == [2.0, 2.0, 4.0]
