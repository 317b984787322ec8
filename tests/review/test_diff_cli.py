"""`rbg diff` end to end: exit codes like diff(1), errors, colour, and the
verdict impact of a change replayed from recorded traces."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubriclang.cli.main import cli

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "diff"

# A graph of human annotations: `rbg run` judges it with no model, so its
# traces are real traces recorded in milliseconds.
ANNOTATED = """\
rubric annotated { version = 1 }
contract { scale = score[1, 5] }
criterion fluent: ordinal[1, 5] = human.annotation { key = "fluent" }
criterion relevant: ordinal[1, 5] = human.annotation { key = "relevant" }
criterion off_topic: bool = human.annotation { key = "off_topic" }
node quality = reduce.weighted_mean(inputs: [fluent, relevant]) { weights = [1, 1] }
node capped = gate.cap(value: quality, when: off_topic) { max = 4 }
sink capped
readout pointwise { output = ordinal[1, 5] }
"""


def rbg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def case(name: str, side: str) -> Path:
    return CORPUS / name / f"{side}.rbg"


@pytest.fixture
def traced(tmp_path):
    """(graph path, trace path) for ANNOTATED judged on 40 annotated items."""
    rng = random.Random(7)
    items = tmp_path / "items.jsonl"
    rows = [
        {
            "id": f"i{n:02d}",
            "input": "q",
            "response": "r",
            "annotations": {
                "fluent": rng.randint(1, 5),
                "relevant": rng.randint(1, 5),
                "off_topic": rng.random() < 0.5,
            },
        }
        for n in range(40)
    ]
    items.write_text("".join(json.dumps(r) + "\n" for r in rows))
    graph = tmp_path / "old.rbg"
    graph.write_text(ANNOTATED)
    traces = tmp_path / "traces.jsonl"
    result = rbg("run", graph, items, "--out", traces)
    assert result.exit_code == 0, result.output
    return graph, traces, rows


# -- exit codes ----------------------------------------------------------------------


def test_no_semantic_change_exits_0():
    result = rbg("diff", case("reformat_only", "old"), case("reformat_only", "new"))
    assert result.exit_code == 0
    assert "No semantic changes." in result.output


def test_changes_exit_1_and_print_the_plan():
    result = rbg("diff", case("param_change", "old"), case("param_change", "new"))
    assert result.exit_code == 1
    assert "~ max: 4 -> 3" in result.output
    assert result.output.rstrip().endswith("Plan: 0 nodes to add, 3 to change, 0 to remove.")


@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_every_format_keeps_the_exit_status(fmt):
    assert rbg("diff", case("rewire", "old"), case("rewire", "new"), "--format", fmt).exit_code == 1
    assert rbg("diff", case("reformat_only", "old"), case("reformat_only", "new"), "--format", fmt).exit_code == 0


def test_a_side_with_errors_prints_them_and_exits_2(tmp_path):
    bad = tmp_path / "bad.rbg"
    bad.write_text(ANNOTATED.replace("sink capped", "sink caped"))
    result = rbg("diff", case("param_change", "old"), bad)
    assert result.exit_code == 2
    assert "RB101" in result.output and "bad.rbg` has 1 error(s)" in result.output
    assert "Traceback" not in result.output


def test_both_sides_errors_are_all_reported(tmp_path):
    a, b = tmp_path / "a.rbg", tmp_path / "b.rbg"
    a.write_text(ANNOTATED.replace("sink capped", "sink caped"))
    b.write_text(ANNOTATED.replace("max = 4", "max = nine"))
    result = rbg("diff", a, b)
    assert result.exit_code == 2
    assert "a.rbg` has" in result.output and "b.rbg` has" in result.output


def test_a_missing_file_exits_2(tmp_path):
    result = rbg("diff", tmp_path / "nope.rbg", case("rewire", "new"))
    assert result.exit_code == 2
    assert "no such file" in result.output


def test_wrong_number_of_arguments_is_a_usage_error():
    result = rbg("diff", case("rewire", "new"))
    assert result.exit_code == 2
    assert "expected OLD and NEW" in result.output


def test_colour_is_on_request_only():
    plain = rbg("diff", case("param_change", "old"), case("param_change", "new")).output
    assert "\x1b[" not in plain
    coloured = (
        CliRunner()
        .invoke(
            cli, ["diff", str(case("param_change", "old")), str(case("param_change", "new")), "--color"], color=True
        )
        .output
    )
    assert "\x1b[33m~ node concise" in coloured


def test_word_diff_is_coloured_by_its_markers():
    out = (
        CliRunner()
        .invoke(
            cli,
            ["diff", str(case("prompt_word_diff", "old")), str(case("prompt_word_diff", "new")), "--color"],
            color=True,
        )
        .output
    )
    assert "\x1b[31m[-Is-]\x1b[0m\x1b[32m{+Could+}\x1b[0m" in out


# -- verdict impact ------------------------------------------------------------------


def _capped(rows, max_):
    """What ANNOTATED with `max = max_` decides on each item, by hand."""
    out = {}
    for r in rows:
        a = r["annotations"]
        v = (a["fluent"] + a["relevant"]) / 2
        if a["off_topic"]:
            v = min(v, max_)
        out[r["id"]] = int(v + 0.5)
    return out


def test_traces_show_which_decisions_a_change_moves(traced, tmp_path):
    graph, traces, rows = traced
    new = tmp_path / "new.rbg"
    new.write_text(ANNOTATED.replace("max = 4", "max = 3"))
    result = rbg("diff", graph, new, "--traces", traces, "--format", "json")
    assert result.exit_code == 1
    impact = json.loads(result.output)["impact"]
    before, after = _capped(rows, 4), _capped(rows, 3)
    moved = {i for i in before if before[i] != after[i]}
    assert moved, "the fixture should move some decisions"
    assert impact["available"] and impact["items"] == 40
    assert {d["item"] for d in impact["differences"]} == moved
    assert impact["transitions"] == {"4 -> 3": len(moved)}


def test_traces_impact_in_text(traced, tmp_path):
    graph, traces, rows = traced
    new = tmp_path / "new.rbg"
    new.write_text(ANNOTATED.replace("max = 4", "max = 3"))
    out = rbg("diff", graph, new, "--traces", traces, "--limit", "1").output
    n = sum(1 for i, v in _capped(rows, 4).items() if v != _capped(rows, 3)[i])
    assert f"Verdict impact over 40 traced items ({traces}): {n} decisions change." in out
    assert f"  {n} items: 4 -> 3 (" in out
    assert f", {n - 1} more)" in out


def test_a_change_that_moves_no_decision_says_so(traced, tmp_path):
    graph, traces, _ = traced
    new = tmp_path / "new.rbg"
    new.write_text(ANNOTATED.replace("version = 1", "version = 2"))
    out = rbg("diff", graph, new, "--traces", traces).output
    assert "no decision changes" in out


def test_new_criteria_make_the_impact_unavailable_not_a_traceback(traced, tmp_path):
    graph, traces, _ = traced
    new = tmp_path / "new.rbg"
    new.write_text(
        ANNOTATED.replace(
            "[fluent, relevant]) { weights = [1, 1] }", "[fluent, relevant, engaging]) { weights = [1, 1, 1] }"
        )
        + 'criterion engaging: ordinal[1, 5] = human.annotation { key = "engaging" }\n'
    )
    result = rbg("diff", graph, new, "--traces", traces)
    assert result.exit_code == 1
    assert "Verdict impact: not available" in result.output
    assert "NEW adds criterion `engaging`, which the traces never judged" in result.output
    assert "Traceback" not in result.output
    doc = json.loads(rbg("diff", graph, new, "--traces", traces, "--format", "json").output)
    assert doc["impact"]["available"] is False and doc["impact"]["differences"] == []


def test_a_redefined_criterion_makes_the_impact_unavailable(traced, tmp_path):
    graph, traces, _ = traced
    new = tmp_path / "new.rbg"
    new.write_text(ANNOTATED.replace('key = "fluent"', 'key = "fluency"'))
    out = rbg("diff", graph, new, "--traces", traces).output
    assert "NEW defines criterion `fluent` differently from when the traces judged them" in out


def test_impact_in_markdown_is_a_table(traced, tmp_path):
    graph, traces, _ = traced
    new = tmp_path / "new.rbg"
    new.write_text(ANNOTATED.replace("max = 4", "max = 3"))
    out = rbg("diff", graph, new, "--traces", traces, "--format", "markdown").output
    assert "#### Verdict impact" in out and "| OLD → NEW | items |" in out and "| 4 -> 3 |" in out


def test_malformed_traces_exit_2_naming_the_line(traced, tmp_path):
    graph, _, _ = traced
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    result = rbg("diff", graph, graph, "--traces", bad)
    assert result.exit_code == 2
    assert "bad.jsonl:1" in result.output


def test_the_verdict_impact_moves_exactly_what_replaying_the_new_graph_changes(traced, tmp_path):
    # `rbg diff --traces` and `rbg replay` share one replay: the items the
    # diff says move are the ones replaying NEW over OLD's traces changes.
    graph, traces, _ = traced
    new = tmp_path / "new.rbg"
    new.write_text(ANNOTATED.replace("max = 4", "max = 2"))
    impact = json.loads(rbg("diff", graph, new, "--traces", traces, "--format", "json").output)["impact"]
    from rubriclang.checker import check_source
    from rubriclang.interp.replay import replay

    graph = check_source(new.read_text()).graph
    assert graph is not None
    replayed = [r for r in replay(graph, str(traces)) if r.changed]
    assert [d["item"] for d in impact["differences"]] == [r.item for r in replayed]
    assert [f"{d['old']} -> {d['new']}" for d in impact["differences"]] == [r.transition() for r in replayed]
    assert replayed, "the fixture should move some decisions"
