"""Gold values that do not fit the judge are errors at `file:line` with exit
2, in `rbg eval`, `rbg run` and the audit alike: never a traceback, never a
silent zero, never a value read as something else."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from evaluation.judges import BOOL, LABEL, ORDINAL, PAIRWISE, SCORE, pair, pointwise, write, write_items

from rubriclang.cli.main import cli


def rbg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _eval_error(tmp_path, judge: str, rows, *extra):
    g = write(tmp_path / "g.rbg", judge)
    items = write_items(tmp_path / "items.jsonl", rows)
    r = rbg("eval", g, items, *extra)
    assert r.exit_code == 2, r.output
    assert ("Traceback" not in r.output and r.exception is None) or isinstance(r.exception, SystemExit)
    return items, r.output


def _bad_point(judge, key, value):
    return judge, [
        pointwise(0, 3 if judge == ORDINAL else True, **{key: 3 if judge == ORDINAL else True}),
        pointwise(1, value, **{key: 3 if judge == ORDINAL else True}),
    ]


@pytest.mark.parametrize(
    "judge, key, gold, says",
    [
        (ORDINAL, "q", "abc", 'gold "abc" is not a whole number in `ordinal[1, 5]`'),
        (ORDINAL, "q", 7, "gold 7 lies outside `ordinal[1, 5]`"),
        (ORDINAL, "q", 2.5, "gold 2.5 is not an integer"),
        (ORDINAL, "q", [1], "gold a list is not a whole number"),
        (ORDINAL, "q", True, "gold true is not a whole number"),
        (ORDINAL, "q", "NaN", 'gold "NaN" is not a whole number'),
        (BOOL, "good", "maybe", 'gold "maybe" is not a bool'),
        (BOOL, "good", 1, "gold 1 is not a bool"),
        (BOOL, "good", {"x": 1}, "gold an object is not a bool"),
    ],
)
def test_pointwise_gold_outside_the_output_type_is_an_error_at_its_line(tmp_path, judge, key, gold, says):
    items, out = _eval_error(tmp_path, *_bad_point(judge, key, gold))
    assert f"{items}:2: item `i1`: {says}" in out


def test_label_gold_must_be_one_of_the_labels(tmp_path):
    rows = [pointwise(0, "good", c="good"), pointwise(1, "Good", c="good")]
    items, out = _eval_error(tmp_path, LABEL, rows)
    assert f'{items}:2: item `i1`: gold "Good" is not one of the labels `good`, `bad`, `ugly`' in out


@pytest.mark.parametrize("gold", [1, 2, 0, "A", "B", "first"])
def test_pairwise_gold_that_names_no_candidate_is_an_error_not_accuracy_zero(tmp_path, gold):
    items, out = _eval_error(tmp_path, PAIRWISE, [pair(0, gold, 0.9, 0.1)])
    assert f"{items}:1: item `p0`: gold" in out and "is not a candidate id (`a` or `b`) or `tie`" in out
    assert "--label" in out


def test_pairwise_codes_mapped_by_a_label_map_are_scored(tmp_path):
    g = write(tmp_path / "g.rbg", PAIRWISE)
    rows = [pair(0, 1, 0.9, 0.1), pair(1, 2, 0.1, 0.9), pair(2, 0, 0.5, 0.5), pair(3, 2, 0.9, 0.1)]
    items = write_items(tmp_path / "items.jsonl", rows)
    r = rbg("eval", g, items, "--label", "1=a,2=b", "--label", "0=tie", "--baseline", "none", "--format", "json")
    assert r.exit_code == 0, r.output
    m = json.loads(r.output)["modes"]["pairwise"]["metrics"]["pref"]
    assert m["agreement_without_ties"]["value"] == pytest.approx(2 / 3) and m["agreement_without_ties"]["n"] == 4
    assert m["agreement"]["value"] == 0.75


def test_a_code_the_label_map_misses_is_an_error_naming_it(tmp_path):
    items, out = _eval_error(
        tmp_path, PAIRWISE, [pair(0, 1, 0.9, 0.1), pair(1, 3, 0.9, 0.1)], "--label", "1=a,2=b,0=tie"
    )
    assert f"{items}:2: item `p1`: gold 3 is not a code of the label map (it maps `1`, `2`, `0`)" in out


def test_a_label_map_onto_a_value_the_judge_cannot_give_is_an_error(tmp_path):
    items, out = _eval_error(tmp_path, PAIRWISE, [pair(0, 1, 0.9, 0.1)], "--label", "1=c")
    assert f"{items}:1: item `p0`: gold 1 is not a candidate id" in out and "fix the map" in out


@pytest.mark.parametrize("spec", ["1", "=a", "1=", "1=a,1=b"])
def test_a_malformed_label_map_is_a_usage_error(tmp_path, spec):
    g = write(tmp_path / "g.rbg", PAIRWISE)
    items = write_items(tmp_path / "items.jsonl", [pair(0, "a", 0.9, 0.1)])
    r = rbg("eval", g, items, "--label", spec)
    assert r.exit_code == 2 and "--label" in r.output and "Traceback" not in r.output


@pytest.mark.parametrize(
    "gold, truth",
    [
        (False, False),
        ("false", False),
        ("no", False),
        ("NO", False),
        ("False", False),
        (True, True),
        ("yes", True),
        ("True", True),
    ],
)
def test_bool_gold_spellings_mean_what_they_say(tmp_path, gold, truth):
    g = write(tmp_path / "g.rbg", BOOL)
    items = write_items(tmp_path / "items.jsonl", [pointwise(0, gold, good=False)])
    r = rbg("eval", g, items, "--format", "json", "--baseline", "none")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["modes"]["pointwise"]["metrics"]["ok"]["accuracy"]["value"] == (0.0 if truth else 1.0)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
@pytest.mark.parametrize("command", ["eval", "run"])
def test_non_finite_gold_is_an_error_at_its_line_in_eval_and_run(tmp_path, literal, command):
    g = write(tmp_path / "g.rbg", ORDINAL)
    items = tmp_path / "items.jsonl"
    good = json.dumps(pointwise(0, 3, q=3))
    items.write_text(good + "\n" + good.replace('"i0"', '"i1"').replace('"gold": 3', f'"gold": {literal}') + "\n")
    args = ["--out", tmp_path / "t.jsonl"] if command == "run" else []
    r = rbg(command, g, items, *args)
    assert r.exit_code == 2, r.output
    assert f"{items}:2: malformed JSON" in r.output and "Traceback" not in r.output


def test_gold_in_a_score_judge_is_read_as_a_number(tmp_path):
    g = write(tmp_path / "g.rbg", SCORE)
    items = write_items(tmp_path / "items.jsonl", [pointwise(0, "4", a=4, b=4, c=4), pointwise(1, 4.0, a=4, b=4, c=4)])
    r = rbg("eval", g, items, "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["modes"]["pointwise"]["metrics"]["sc"]["exact"]["value"] == 1.0


# --- the audit reads gold with the same reader ----------------------------------------

AUDIT_JUDGE = PAIRWISE.replace("recorded.value", "human.annotation")


def _audit_items(tmp_path, golds):
    rows = [
        {
            "id": f"p{i}",
            "input": "Which?",
            "responses": {"a": "A.", "b": "B."},
            "annotations": {"a": {"q": 0.9}, "b": {"q": 0.1}},
            "gold": g,
        }
        for i, g in enumerate(golds)
    ]
    write_items(tmp_path / "items.jsonl", rows)
    write(tmp_path / "judge.rbg", AUDIT_JUDGE)
    return write(
        tmp_path / "suite.toml",
        'judge = "judge.rbg"\nitems = "items.jsonl"\nrepeats = 1\noperators = ["position_swap"]\n',
    )


def test_the_audit_refuses_gold_that_names_no_candidate_before_it_runs(tmp_path):
    suite = _audit_items(tmp_path, ["a", 1])
    r = rbg("audit", suite, "--out", tmp_path / "out")
    assert r.exit_code == 2, r.output
    assert "items.jsonl:2: item `p1`: gold 1 is not a candidate id (`a` or `b`) or `tie`" in r.output
    assert not (tmp_path / "out").exists()


def test_the_audit_compares_gold_as_eval_reads_it(tmp_path):
    from rubriclang.audit.judge import judge_info
    from rubriclang.audit.metrics import Scorer, Summary, Verdict
    from rubriclang.checker import check_source
    from rubriclang.interp.items import item_from_json

    graph = check_source(BOOL, "g.rbg").graph
    assert graph is not None
    items = [
        item_from_json({"id": str(i), "response": "x", "gold": g}, "x")
        for i, g in enumerate([True, "true", "yes", "no"])
    ]
    scorer = Scorer(judge_info(graph, items), 0.0)
    said_true = Summary("ok", True, (Verdict("ok", True),))
    golds = [scorer.gold(said_true, it) for it in items]
    assert [g[0] if g else None for g in golds] == [True, True, True, False]


def test_an_audit_suite_with_gold_false_ignores_gold_that_would_not_fit(tmp_path):
    suite = _audit_items(tmp_path, ["a", 1])
    suite.write_text(suite.read_text() + "gold = false\n")
    r = rbg("audit", suite, "--out", tmp_path / "out")
    assert r.exit_code == 0, r.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["metrics"]["gold"] is None
    assert all(e["gold"] is None and e["correct"] is None for e in report["by_item"].values())


def test_the_audit_error_for_bad_gold_says_how_to_ignore_it(tmp_path):
    r = rbg("audit", _audit_items(tmp_path, ["A"]), "--out", tmp_path / "out")
    assert r.exit_code == 2 and "gold = false" in r.output
