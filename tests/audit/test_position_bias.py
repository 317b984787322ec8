"""position_swap on LLM judges: an `llm.compare` judge sees the candidates
swapped in its prompt, so a judge that prefers a position is caught; a
judge whose criteria each see one candidate skips the operator, saying why
in every report."""

from __future__ import annotations

import json
import re

from .helpers import report, user_text

COMPARE = """\
rubric side_by_side {{ version = 1 }}
contract {{ scale = score[0, 1] }}
criterion better: score[0, 1] = llm.compare {{
  question = "Which response answers the question better?"
  order = {order}
}}
sink better
readout pairwise {{ epsilon = 0.1, resolve = tie }}
"""

ONE_AT_A_TIME = """\
rubric one_at_a_time { version = 1 }
contract { scale = score[1, 5] }
criterion quality: ordinal[1, 5] = llm.rate { question = "How good is the response?" }
sink quality
readout pairwise { epsilon = 0.5, resolve = abstain }
"""

PAIRS = [
    {"id": f"p{i}", "input": f"Question {i}?", "responses": {"x": f"answer x{i}", "y": f"answer y{i}"}}
    for i in range(8)
]


def _first_position(role, body) -> str:
    """A judge with pure position bias: response A (the one shown first) always wins."""
    assert role == "judge"
    return json.dumps({"reason": "The first one.", "preference": "A"})


def _shown(body: dict) -> tuple[str, str]:
    text = user_text(body)
    a, b = (re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.S) for tag in ("response_a", "response_b"))
    assert a and b, text
    return a.group(1), b.group(1)


def _audit(rbg, tmp_path, scripted, judge: str, answer=_first_position):
    server = scripted(answer)
    (tmp_path / "judge.rbg").write_text(judge)
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PAIRS))
    (tmp_path / "suite.toml").write_text(
        'items = "items.jsonl"\nrepeats = 2\noperators = ["position_swap"]\n[judge]\ngraph = "judge.rbg"\n'
        f'base_url = "{server.url}"\nmax_retries = 0\n'
    )
    result = rbg("audit", tmp_path / "suite.toml", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    return server, report(tmp_path / "out"), result.output


def test_position_swap_shows_a_compare_judge_the_candidates_in_the_other_order(rbg, tmp_path, scripted):
    server, _, _ = _audit(rbg, tmp_path, scripted, COMPARE.format(order="as_given"))
    shown = {_shown(b) for b in server.requests if b["messages"][0]["role"] == "system"}
    # Each pair was shown both ways: as given for the original, swapped for the variant.
    assert shown == {(f"answer x{i}", f"answer y{i}") for i in range(8)} | {
        (f"answer y{i}", f"answer x{i}") for i in range(8)
    }


def test_a_judge_that_prefers_the_first_position_flips_on_nearly_every_swap(rbg, tmp_path, scripted):
    _, r, _ = _audit(rbg, tmp_path, scripted, COMPARE.format(order="as_given"))
    op = r["by_operator"]["position_swap"]["invariant"]
    assert op["variants"] == 8 and op["flipped"] == 8
    assert op["flip_rate"]["value"] == 1.0
    assert op["flip_rate"]["low"] > 0.5  # the interval says it too, not only the point
    assert r["metrics"]["repeat_flip_rate"]["value"] == 0.0
    flip = r["flips"][0]
    assert (flip["baseline"]["value"], flip["result"]["value"]) == ("x", "y")
    assert flip["localization"]["moved"][0]["node"] == "better"


def test_order_both_removes_the_position_bias_that_position_swap_finds(rbg, tmp_path, scripted):
    _, r, _ = _audit(rbg, tmp_path, scripted, COMPARE.format(order="both"))
    op = r["by_operator"]["position_swap"]["invariant"]
    assert (op["variants"], op["flipped"]) == (8, 0)
    assert {e["baseline"]["value"] for e in r["by_item"].values()} == {"tie"}


def test_position_swap_is_skipped_with_its_reason_where_each_criterion_sees_one_candidate(rbg, tmp_path, scripted):
    _server, r, output = _audit(
        rbg, tmp_path, scripted, ONE_AT_A_TIME, answer=lambda role, body: json.dumps({"reason": "ok", "score": 3})
    )
    (op,) = r["operators"]
    assert op["name"] == "position_swap" and op["status"] == "skipped"
    assert "sees one candidate at a time" in op["reason"] and "position bias cannot show" in op["reason"]
    assert r["metrics"]["invariant"] is None  # no 0.0% flip rate for an operator that could not run
    text = (tmp_path / "out" / "report.txt").read_text()
    assert "position_swap: every criterion of this judge sees one candidate at a time" in text
    html = (tmp_path / "out" / "report.html").read_text()
    assert "sees one candidate at a time" in html
    assert "position_swap" in output
