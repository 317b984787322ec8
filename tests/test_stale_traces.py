"""Stale traces (issue 24, item 1): a trace record carries the digest of the
item it judged (`item_hash`), and every command that pairs records with
items by id (eval --traces, fit --traces, replay --items, diff --traces
--items, a resumed run) refuses records whose item has changed since, at
`traces:line`, instead of scoring old judgments as the new items'."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from rubriclang.cli.main import cli
from rubriclang.interp.items import item_from_json
from rubriclang.interp.trace import item_hash

REPO = Path(__file__).resolve().parents[1]
VERIFIER = REPO / "examples" / "gsm8k" / "rubric.rbg"
GSM8K = REPO / "examples" / "gsm8k" / "items.jsonl"

# A GSM8K graph with numbers to fit: correctness and brevity, weighted.
FITTABLE = """\
rubric weighted { version = 1 }

contract { scale = score[1, 5] }

criterion correct: bool = rule.matches_reference { mode = numeric }
criterion short: bool = rule.length { under = 300 }

node c = transform.map(value: correct) { values = { true: 5, false: 1 } }
node s = transform.map(value: short) { values = { true: 5, false: 1 } }
node m = reduce.weighted_mean(inputs: [c, s]) { weights = [1, 1] }

sink m

readout pointwise { output = ordinal[1, 5] }
"""

WRONG = "The answer is 12345."


def gsm8k(n: int = 20) -> list[dict]:
    """The first `n` GSM8K items whose response is the full worked answer (gold true)."""
    rows = [json.loads(line) for line in GSM8K.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if r["id"].endswith("-full")][:n]


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def rbg(*args) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def with_responses(rows: list[dict], response: str, which=lambda i: True) -> list[dict]:
    return [{**r, "response": response} if which(i) else r for i, r in enumerate(rows)]


@pytest.fixture
def judged(tmp_path):
    """(items, traces of them, the same ids with every response changed to a wrong answer)."""
    items = write(tmp_path / "items.jsonl", gsm8k())
    traces = tmp_path / "t.jsonl"
    r = rbg("run", VERIFIER, items, "--out", traces)
    assert r.exit_code == 0, r.output
    changed = write(tmp_path / "changed.jsonl", with_responses(gsm8k(), WRONG))
    return items, traces, changed


def accuracy(result) -> float:
    doc = json.loads(result.stdout)
    return doc["modes"]["pointwise"]["metrics"]["gsm8k_verifier"]["accuracy"]["value"]


def test_every_record_carries_the_digest_of_the_item_it_judged(judged):
    items, traces, _ = judged
    records = [json.loads(line) for line in traces.read_text().splitlines()]
    rows = [json.loads(line) for line in items.read_text().splitlines()]
    assert [r["item_hash"] for r in records] == [item_hash(item_from_json(x, "x")) for x in rows]
    assert all(r["item_hash"].startswith("sha256:") for r in records)


def test_eval_refuses_traces_of_changed_responses_instead_of_scoring_them(judged):
    items, traces, changed = judged
    fresh = rbg("eval", VERIFIER, changed, "--format", "json")
    assert accuracy(fresh) == 0.0  # every changed response is wrong
    assert accuracy(rbg("eval", VERIFIER, items, "--traces", traces, "--format", "json")) == 1.0
    r = rbg("eval", VERIFIER, changed, "--traces", traces, "--format", "json")
    assert r.exit_code == 2
    assert f"{traces}:1: 20 trace record(s) judged other content than `{changed}`" in r.output
    assert f"`gsm8k-0000-full` ({traces}:1, now {changed}:1)" in r.output
    assert "and 15 more" in r.output and "--rejudge-changed" in r.output
    assert "accuracy" not in r.output


def test_only_the_changed_items_are_named_at_their_lines(judged, tmp_path):
    _, traces, _ = judged
    some = write(tmp_path / "some.jsonl", with_responses(gsm8k(), WRONG, lambda i: i in (3, 11)))
    r = rbg("eval", VERIFIER, some, "--traces", traces)
    assert r.exit_code == 2
    assert f"{traces}:4: 2 trace record(s)" in r.output
    assert f"`gsm8k-0003-full` ({traces}:4, now {some}:4), `gsm8k-0011-full` ({traces}:12, now {some}:12)" in r.output


@pytest.mark.parametrize(
    "field, value",
    [("input", "Another question?"), ("reference", "#### 7"), ("rubric", "Score 1-5."), ("recorded", {"k": 1})],
)
def test_any_judged_field_that_changes_is_refused(judged, tmp_path, field, value):
    _, traces, _ = judged
    rows = gsm8k()
    rows[0] = {**rows[0], field: value}
    r = rbg("eval", VERIFIER, write(tmp_path / "other.jsonl", rows), "--traces", traces)
    assert r.exit_code == 2 and "1 trace record(s) judged other content" in r.output


def test_unchanged_items_score_the_same_reordered_and_relabelled(judged, tmp_path):
    items, traces, _ = judged
    before = rbg("eval", VERIFIER, items, "--traces", traces, "--format", "json")
    assert before.exit_code == 0, before.output
    reordered = write(tmp_path / "reordered.jsonl", gsm8k()[::-1])
    again = rbg("eval", VERIFIER, reordered, "--traces", traces, "--format", "json")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["modes"] == json.loads(before.stdout)["modes"]
    # Gold is not what was judged: relabelling it keeps the traces valid, and the score follows the new labels.
    relabelled = write(tmp_path / "relabelled.jsonl", [{**r, "gold": False} for r in gsm8k()])
    r = rbg("eval", VERIFIER, relabelled, "--traces", traces, "--format", "json")
    assert r.exit_code == 0, r.output
    assert accuracy(r) == 0.0
    assert "warning" not in r.stderr


def test_replay_with_items_refuses_changed_items_and_passes_unchanged_ones(judged):
    items, traces, changed = judged
    assert rbg("replay", VERIFIER, traces).exit_code == 0  # without items there is nothing to check against
    ok = rbg("replay", VERIFIER, traces, "--items", items)
    assert ok.exit_code == 0 and "every decision is identical" in ok.output
    r = rbg("replay", VERIFIER, traces, "--items", changed)
    assert r.exit_code == 2 and f"{traces}:1: 20 trace record(s) judged other content" in r.output


def test_diff_verdict_impact_refuses_traces_of_changed_items(judged, tmp_path):
    items, traces, changed = judged
    new = tmp_path / "exact.rbg"
    new.write_text(VERIFIER.read_text().replace("mode = numeric", "mode = exact"))
    ok = rbg("diff", VERIFIER, new, "--traces", traces, "--items", items)
    assert ok.exit_code == 1, ok.output  # a change, and its impact
    r = rbg("diff", VERIFIER, new, "--traces", traces, "--items", changed)
    assert r.exit_code == 2 and f"{traces}:1: 20 trace record(s) judged other content" in r.output
    usage = rbg("diff", VERIFIER, new, "--items", items)
    assert usage.exit_code == 2 and "give --traces too" in usage.output


def test_fit_refuses_traces_of_changed_items(tmp_path):
    graph = tmp_path / "w.rbg"
    graph.write_text(FITTABLE)
    rows = [{**r, "gold": 5} for r in gsm8k(40)]
    items = write(tmp_path / "items.jsonl", rows)
    traces = tmp_path / "t.jsonl"
    assert rbg("run", graph, items, "--out", traces).exit_code == 0
    quick = ("--folds", "2", "--max-iter", "15")  # a short search: what the fit finds is not the point
    ok = rbg("fit", graph, items, "-o", tmp_path / "fitted.rbg", "--traces", traces, *quick)
    assert ok.exit_code == 0, ok.output
    changed = write(tmp_path / "changed.jsonl", with_responses(rows, WRONG, lambda i: i % 2 == 0))
    r = rbg("fit", graph, changed, "-o", tmp_path / "stale.rbg", "--traces", traces, *quick)
    assert r.exit_code == 2 and f"{traces}:1: 20 trace record(s) judged other content" in r.output
    assert not (tmp_path / "stale.rbg").exists()


def test_a_resumed_run_refuses_changed_items_before_touching_the_file(judged):
    _, traces, changed = judged
    before = traces.read_bytes()
    r = rbg("run", VERIFIER, changed, "--out", traces)
    assert r.exit_code == 2
    assert f"{traces}:1: 20 trace record(s) judged other content than `{changed}`" in r.output
    assert "--rejudge-changed" in r.output
    assert traces.read_bytes() == before


def test_a_resumed_run_judges_changed_items_again_with_rejudge_changed(judged, tmp_path):
    _items, traces, _ = judged
    half = write(tmp_path / "half.jsonl", with_responses(gsm8k(), WRONG, lambda i: i < 10))
    r = rbg("run", VERIFIER, half, "--out", traces, "--rejudge-changed", "--format", "json")
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert (summary["rejudged"], summary["judged"], summary["resumed"]) == (10, 10, 10)
    # The file is now exactly a run of the changed items: eval from it agrees with a fresh eval.
    ok = rbg("eval", VERIFIER, half, "--traces", traces, "--format", "json")
    assert ok.exit_code == 0, ok.output
    assert accuracy(ok) == accuracy(rbg("eval", VERIFIER, half, "--format", "json")) == 0.5
    fresh = tmp_path / "fresh.jsonl"
    rbg("run", VERIFIER, half, "--out", fresh)
    assert sorted(traces.read_text().splitlines()) == sorted(fresh.read_text().splitlines())


def test_a_resumed_run_from_a_pipe_stops_at_the_first_changed_item(judged, tmp_path):
    _, traces, changed = judged
    rbg_exe = str(Path(sys.executable).with_name("rbg"))
    run = [rbg_exe, "run", str(VERIFIER), "/dev/stdin", "--out", str(traces)]
    r = subprocess.run(run, input=changed.read_text(), capture_output=True, text=True)
    assert r.returncode == 2
    assert f"{traces}:1: 1 trace record(s) judged other content than `/dev/stdin`" in r.stderr
    pipe = subprocess.run([*run, "--rejudge-changed"], input=changed.read_text(), capture_output=True, text=True)
    assert pipe.returncode == 2 and "must be a file, not a pipe" in pipe.stderr


def test_records_without_a_digest_are_scored_with_a_warning_that_they_are_unchecked(judged, tmp_path):
    items, traces, changed = judged
    old = tmp_path / "old.jsonl"
    old.write_text(
        "".join(
            json.dumps({k: v for k, v in json.loads(line).items() if k != "item_hash"}, sort_keys=True) + "\n"
            for line in traces.read_text().splitlines()
        )
    )
    r = rbg("eval", VERIFIER, changed, "--traces", old, "--format", "json")
    assert r.exit_code == 0
    assert f"warning: 20 record(s) of `{old}` (the first at line 1) carry no `item_hash`" in r.stderr
    resumed = rbg("run", VERIFIER, items, "--out", old)
    assert resumed.exit_code == 0 and "carry no `item_hash`" in resumed.stderr


def test_a_digest_that_is_not_a_string_is_a_malformed_record(judged, tmp_path):
    items, traces, _ = judged
    lines = traces.read_text().splitlines()
    rec = json.loads(lines[2])
    rec["item_hash"] = 5
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:2], json.dumps(rec), *lines[3:]]) + "\n")
    r = rbg("eval", VERIFIER, items, "--traces", bad)
    assert r.exit_code == 2 and f"{bad}:3: `item_hash` must be a string" in r.output


def test_the_viewer_refuses_to_show_traces_beside_items_they_did_not_judge(judged, tmp_path):
    items, traces, changed = judged
    ok = rbg("view", items, traces, "--export", tmp_path / "ok")
    assert ok.exit_code == 0, ok.output
    r = rbg("view", changed, traces, "--export", tmp_path / "stale")
    assert r.exit_code == 2 and f"{traces}:1: 20 trace record(s) judged other content" in r.output
    assert not (tmp_path / "stale").exists()


PAIRWISE = """\
rubric longer { version = 1 }

contract { scale = score[1, 5] }

criterion long: bool = rule.length { over = 3 }

node score = transform.map(value: long) { values = { true: 5, false: 1 } }

sink score

readout pairwise { epsilon = 0.25, resolve = tie }
"""


def test_pairwise_traces_of_swapped_responses_are_refused_not_scored_inverted(tmp_path):
    graph = tmp_path / "longer.rbg"
    graph.write_text(PAIRWISE)
    rows: list[dict[str, Any]] = [
        {
            "id": f"p{i}",
            "input": "Explain.",
            "responses": {"a": "A long and detailed answer.", "b": "Short."},
            "gold": "a",
        }
        for i in range(10)
    ]
    items = write(tmp_path / "pairs.jsonl", rows)
    traces = tmp_path / "t.jsonl"
    assert rbg("run", graph, items, "--out", traces).exit_code == 0

    def agreement(*args) -> float:
        r = rbg("eval", graph, *args, "--format", "json")
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout)["modes"]["pairwise"]["metrics"]["longer"]["agreement"]["value"]

    assert agreement(items, "--traces", traces) == 1.0
    # The same ids and gold, each pair's texts swapped: judged afresh, the judge agrees with no gold label.
    swapped = write(
        tmp_path / "swapped.jsonl",
        [{**r, "responses": {"a": r["responses"]["b"], "b": r["responses"]["a"]}} for r in rows],
    )
    assert agreement(swapped) == 0.0
    r = rbg("eval", graph, swapped, "--traces", traces)
    assert r.exit_code == 2 and f"{traces}:1: 10 trace record(s) judged other content" in r.output
    # The same texts in the other order is another pair too: which is shown first is part of what was judged.
    reordered = write(
        tmp_path / "reordered.jsonl",
        [{**r, "responses": [["b", r["responses"]["b"]], ["a", r["responses"]["a"]]]} for r in rows],
    )
    assert rbg("eval", graph, reordered, "--traces", traces).exit_code == 2
