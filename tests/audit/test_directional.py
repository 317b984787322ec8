"""Directional measures, unstable baselines and failed judgments: exact
figures on the rule-only GSM8K verifier, and scripted loopback judges with
known behaviour (one that ignores degradations, one that raises its score on
them, one whose repeats disagree, one that fails some judgments)."""

from __future__ import annotations

import json
import re

from .helpers import report, user_text

RATE_JUDGE = """\
rubric rated { version = 1 }
contract { scale = score[1, 5] }
criterion quality: ordinal[1, 5] = llm.rate {
  question = "How good is the response?"
}
sink quality
readout pointwise { output = ordinal[1, 5] }
"""

CHECK_JUDGE = """\
rubric checked { version = 1 }
contract { scale = bool }
criterion correct: bool = llm.check {
  question = "Is the response right?"
}
sink correct
readout pointwise { output = bool }
"""


def _suite(tmp_path, items_file, graph: str, url: str, body: str) -> str:
    (tmp_path / "judge.rbg").write_text(graph)
    path = tmp_path / "llm.toml"
    path.write_text(
        f'items = "{items_file}"\n{body}\n'
        f'[judge]\ngraph = "judge.rbg"\nbase_url = "{url}"\ntemperature = 0.7\nseed = 10\nmax_retries = 0\n'
    )
    return path


def _response(body: dict) -> str:
    m = re.search(r"<response>\n(.*?)\n</response>", user_text(body), re.DOTALL)
    assert m, body
    return m.group(1)


def _finished(text: str) -> bool:
    return bool(re.search(r"The answer is [\d,]+\.$", text))


def test_rule_verifier_has_exact_directional_figures_and_a_confusion_matrix(rbg, suite, tmp_path):
    assert (
        rbg("audit", suite('repeats = 1\noperators = ["partial_completion"]\n'), "--out", tmp_path / "out").exit_code
        == 0
    )
    d = report(tmp_path / "out")["metrics"]["directional"]
    # Bare solutions lose their final answer (true -> false): 4 of 12 fall by 1.
    assert d["score_shift"]["value"] == round(-4 / 12, 6)
    # Only the four wrong (`early`) answers have room to rise; none rose.
    assert (d["contradicted"], d["contradiction_rate"]["count"], d["contradiction_rate"]["total"]) == (0, 0, 4)
    # One repeat measures no noise: there is nothing to subtract, so the
    # difference is not measured (it was once the detection rate itself).
    assert d["detection_over_noise"]["value"] is None
    assert d["detection_rate"]["failed"] == 0
    gold = report(tmp_path / "out")["metrics"]["gold"]
    assert gold["confusion"] == {
        "gold": [False, True],
        "predicted": [{"status": "ok", "decision": False}, {"status": "ok", "decision": True}],
        "counts": [[4, 0], [0, 8]],
    }
    assert gold["rank_correlation"] is None  # a binary judge has no rank correlation


def test_a_judge_that_ignores_degradations_has_contradiction_and_detection_zero(scripted, rbg, tmp_path, items_file):
    server = scripted(lambda role, body: json.dumps({"reason": "scripted", "score": 3}))
    path = _suite(
        tmp_path, items_file, RATE_JUDGE, server.url, 'gold = false\nrepeats = 2\noperators = ["partial_completion"]'
    )
    assert rbg("audit", path, "--out", tmp_path / "out").exit_code == 0
    d = report(tmp_path / "out")["metrics"]["directional"]
    assert d["eligible"] == d["variants"] > 0
    assert (d["detection_rate"]["value"], d["detection_rate"]["count"]) == (0.0, 0)
    assert d["contradiction_rate"]["value"] == 0.0 and d["contradiction_rate"]["total"] == d["variants"]
    assert d["detection_over_noise"]["value"] == 0.0
    assert d["score_shift"]["value"] == 0.0


def test_a_judge_that_raises_scores_on_degradations_has_contradiction_rate_one(scripted, rbg, tmp_path, items_file):
    # A finished solution gets 3, a truncated one 5: every degradation moves up.
    server = scripted(
        lambda role, body: json.dumps({"reason": "scripted", "score": 3 if _finished(_response(body)) else 5})
    )
    path = _suite(
        tmp_path, items_file, RATE_JUDGE, server.url, 'gold = false\nrepeats = 2\noperators = ["partial_completion"]'
    )
    assert rbg("audit", path, "--out", tmp_path / "out").exit_code == 0
    r = report(tmp_path / "out")
    d = r["metrics"]["directional"]
    finished = [k for k, e in r["by_item"].items() if e["baseline"]["value"] == 3]
    assert finished and d["contradiction_rate"]["total"] == len(finished)
    assert d["contradiction_rate"]["value"] == 1.0 and d["contradicted"] == len(finished)
    assert d["detection_rate"]["value"] == 0.0
    # Finished solutions rise by 2; bare ones are at the top already (5 -> 5).
    assert d["score_shift"]["value"] == round(2 * len(finished) / d["variants"], 6)
    assert "contradiction rate     1.000 [" in (tmp_path / "out" / "report.txt").read_text()


def test_an_item_whose_repeats_disagree_is_marked_as_an_unstable_baseline(scripted, rbg, tmp_path, items_file):
    first = json.loads(items_file.read_text().splitlines()[0])

    def answer(role, body):
        # The first item: repeat 0 (seed 10) says true, repeat 1 false; its
        # typo variant says false: a flip on an unstable baseline.
        if _response(body) != first["response"]:
            return json.dumps({"reason": "scripted", "answer": True})
        original = first["input"] in user_text(body)
        return json.dumps({"reason": "scripted", "answer": original and body["seed"] == 10})

    server = scripted(answer)
    path = _suite(
        tmp_path,
        items_file,
        CHECK_JUDGE,
        server.url,
        'repeats = 2\noperators = ["typo_noise"]\n[options.typo_noise]\nrate = 0.3',
    )
    assert rbg("audit", path, "--out", tmp_path / "out").exit_code == 0
    r = report(tmp_path / "out")
    b = r["metrics"]["baselines"]
    assert b == {"stable": 11, "unstable": 1, "failed": 0, "unstable_items": [first["id"]]}
    assert r["by_item"][first["id"]]["baseline_stability"] == "unstable"
    assert r["by_item"]["gsm8k-0001-full"]["baseline_stability"] == "stable"
    inv = r["metrics"]["invariant"]
    assert inv["variants"] == 12
    assert inv["unstable_baseline"] == {"variants": 1, "flipped": 1}
    assert (inv["flip_rate"]["count"], inv["flip_rate"]["total"]) == (1, 12)
    # Over the stable baselines nothing flips.
    assert (inv["flip_rate_stable_baseline"]["count"], inv["flip_rate_stable_baseline"]["total"]) == (0, 11)
    assert [f["baseline_stability"] for f in r["flips"]] == ["unstable"]
    text = (tmp_path / "out" / "report.txt").read_text()
    assert f"unstable baselines     1 item(s): {first['id']}; 0 failed" in text
    assert "unstable baseline" in text.split("Flips (1 flipped, 0 failed):")[1]
    assert "unstable baseline" in (tmp_path / "out" / "report.html").read_text()


def test_a_failed_judgment_is_counted_apart_and_never_shown_as_stable(scripted, rbg, tmp_path, items_file):
    first = json.loads(items_file.read_text().splitlines()[0])

    def answer(role, body):
        # Repeat 1 of the first item's typo variant cannot be read; repeat 0
        # agrees with the baseline, so the variant's verdict alone looks stable.
        if _response(body) == first["response"] and first["input"] not in user_text(body) and body["seed"] == 11:
            return "not json"
        return json.dumps({"reason": "scripted", "answer": True})

    server = scripted(answer)
    path = _suite(
        tmp_path,
        items_file,
        CHECK_JUDGE,
        server.url,
        'repeats = 2\noperators = ["typo_noise"]\n[options.typo_noise]\nrate = 0.3',
    )
    result = rbg("audit", path, "--out", tmp_path / "out")
    assert result.exit_code == 1, result.output  # some judgments failed
    r = report(tmp_path / "out")
    inv = r["metrics"]["invariant"]
    assert inv["failed"] > 0
    # A failed variant measured nothing: it is neither a flip nor stable, and lowers the coverage.
    rate = inv["flip_rate"]
    assert rate["failed"] == inv["failed"] and rate["total"] == inv["variants"] - inv["failed"]
    assert rate["count"] == inv["flipped"] and rate["coverage"] == round(rate["total"] / inv["variants"], 6)
    assert inv["judgment_flip_rate"]["failed"] == r["counts"]["failed_judgments"]
    failed = [f for f in r["flips"] if f["outcome"] == "failed"]
    assert len(failed) == inv["failed"]
    text = (tmp_path / "out" / "report.txt").read_text()
    for f in failed:
        line = next(x for x in text.splitlines() if x.strip().startswith(f["variant"] + ":"))
        assert "with 1/2 repeats failed" in line, line
        assert not re.search(r": (\S+) -> \1 \(failed\)", line), line
    assert f"variants, {inv['failed']} failed, coverage {rate['coverage']:.3f})" in text
    html = (tmp_path / "out" / "report.html").read_text()
    assert "with 1/2 repeats failed" in html
    assert f"({inv['failed']} failed)" in html


THRESHOLD_JUDGE = """\
rubric thresholded { version = 1 }
contract { scale = bool }
criterion quality: ordinal[1, 5] = llm.rate {
  question = "How good is the response?"
}
node good = transform.threshold(value: quality) { at = 3 }
sink good
readout pointwise { output = bool }
"""


def test_a_binary_judge_derived_from_a_score_reports_falls_that_do_not_cross_the_threshold(
    scripted, rbg, tmp_path, items_file
):
    # Finished solutions get 5, truncated ones 4: the score notices, the verdict does not.
    server = scripted(
        lambda role, body: json.dumps({"reason": "scripted", "score": 5 if _finished(_response(body)) else 4})
    )
    path = _suite(
        tmp_path,
        items_file,
        THRESHOLD_JUDGE,
        server.url,
        'gold = false\nrepeats = 1\noperators = ["partial_completion"]',
    )
    result = rbg("audit", path, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    d = report(tmp_path / "out")["metrics"]["directional"]
    assert d["detection_rate"]["count"] == 0
    t = d["threshold"]
    assert (t["node"], t["at"], t["inclusive"]) == ("quality", 3.0, True)
    finished = 8  # full and early solutions end on their answer; bare ones are at 4 already
    assert (t["score_fell"]["count"], t["score_fell"]["total"]) == (finished, d["eligible"])
    assert t["fell_without_crossing"]["count"] == finished
    assert t["score_shift"]["value"] == round(-finished / d["eligible"], 6)
    assert "score fell" in (tmp_path / "out" / "report.txt").read_text()


def test_a_judge_whose_sink_is_no_threshold_has_no_threshold_block(rbg, suite, tmp_path):
    assert (
        rbg("audit", suite('repeats = 1\noperators = ["partial_completion"]\n'), "--out", tmp_path / "out").exit_code
        == 0
    )
    assert report(tmp_path / "out")["metrics"]["directional"]["threshold"] is None


def test_an_ordinal_judge_that_matches_gold_has_rank_correlation_one_and_a_diagonal_confusion(
    scripted, rbg, tmp_path, items_file
):
    rows = [json.loads(line) for line in items_file.read_text().splitlines()]
    grade = {"full": 5, "bare": 3, "early": 1}
    for row in rows:
        row["gold"] = grade[row["id"].rsplit("-", 1)[1]]
    items_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    score = {r["response"]: r["gold"] for r in rows}
    server = scripted(lambda role, body: json.dumps({"reason": "scripted", "score": score.get(_response(body), 2)}))
    path = _suite(tmp_path, items_file, RATE_JUDGE, server.url, 'repeats = 1\noperators = ["partial_completion"]')
    result = rbg("audit", path, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    gold = report(tmp_path / "out")["metrics"]["gold"]
    assert gold["rank_correlation"]["value"] == 1.0 and gold["rank_correlation"]["n"] == 12
    assert gold["confusion"]["gold"] == [1, 3, 5]
    assert [p["decision"] for p in gold["confusion"]["predicted"]] == [1, 3, 5]
    assert gold["confusion"]["counts"] == [[4, 0, 0], [0, 4, 0], [0, 0, 4]]
    assert "rank correlation vs gold 1.000 [" in (tmp_path / "out" / "report.txt").read_text()
