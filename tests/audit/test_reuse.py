"""An audit re-judges only the criteria a perturbation changed (issue 28.3):
a variant's criterion whose rendered prompt is the baseline's reuses the
baseline's judgment of the same repeat (with the call cache or without it),
the report counts the calls so saved, no figure moves, and the estimate of
a deterministic audit is its usage to the call."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .helpers import report, user_text

# One criterion with a scale (its template shows the anchors, so
# `criterion_reorder` rewrites it) and two without (left as they were).
JUDGE = """\
rubric reused { version = 1 }
contract { scale = score[1, 5] }
criterion quality: ordinal[1, 5] = llm.rate {
  question = "How good is the response?"
  anchors = { 1: "Poor.", 3: "Adequate.", 5: "Excellent." }
}
criterion correct: bool = llm.check {
  question = "Is the response's final answer right?"
}
criterion clear: bool = llm.check {
  question = "Is the response clear?"
}
node gated = gate.cap(value: quality, when: correct) { max = 3 }
node shown = gate.veto(value: gated, when: clear) { to = 1 }
sink shown
readout pointwise { output = ordinal[1, 5] }
"""

OPERATORS = '["criterion_reorder", "instruction_ordering", "typo_noise"]'
REPEATS = 2
ITEMS = 4


def _deterministic(role, body) -> str:
    """The same request always gets the same reply, and different prompts
    different ones: a judge at temperature 0 on a deterministic server."""
    h = int(hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).hexdigest(), 16)
    fields = (body.get("response_format") or {}).get("json_schema", {}).get("schema", {}).get("properties", {})
    if "answer" in fields:
        return json.dumps({"reason": "scripted", "answer": h % 3 != 0})
    return json.dumps({"reason": "scripted", "score": 1 + h % 5})


def _suite(tmp_path, items_file, url: str) -> str:
    (tmp_path / "judge.rbg").write_text(JUDGE)
    path = tmp_path / "suite.toml"
    path.write_text(
        f'items = "{items_file}"\ngold = false\nlimit = {ITEMS}\nrepeats = {REPEATS}\noperators = {OPERATORS}\n'
        f'[judge]\ngraph = "judge.rbg"\nbase_url = "{url}"\nmodel = "scripted"\ntemperature = 0\nseed = 3\n'
        "max_tokens = 64\nmax_retries = 0\n"
    )
    return path


def _figures(out) -> str:
    """report.json without what reuse is meant to change (the calls)."""
    doc = report(out)
    doc.pop("usage")
    return json.dumps(doc, sort_keys=True, indent=1)


def test_reuse_changes_no_figure_and_saves_the_calls_of_the_criteria_no_perturbation_changed(
    rbg, scripted, tmp_path, items_file
):
    server = scripted(_deterministic)
    path = _suite(tmp_path, items_file, server.url)
    assert rbg("audit", path, "--out", tmp_path / "fresh", "--no-cache", "--no-reuse").exit_code == 0
    sent_fresh = len(server.calls("judge"))
    result = rbg("audit", path, "--out", tmp_path / "reused", "--no-cache")
    assert result.exit_code == 0, result.output
    sent_reused = len(server.calls("judge")) - sent_fresh
    # Every figure of the report, byte for byte, and the text's too.
    assert _figures(tmp_path / "reused") == _figures(tmp_path / "fresh")
    text = {
        d: [line for line in (tmp_path / d / "report.txt").read_text().splitlines() if not line.startswith("Reused")]
        for d in ("fresh", "reused")
    }
    assert text["reused"] == text["fresh"]
    fresh, reused = report(tmp_path / "fresh")["usage"]["judge"], report(tmp_path / "reused")["usage"]["judge"]
    assert (fresh["calls"], reused["calls"]) == (sent_fresh, sent_reused)
    # The same requests, fewer of them sent: criterion_reorder left `correct`
    # and `clear` as they were, on each item and repeat.
    assert fresh["calls"] + fresh["reused"] == reused["calls"] + reused["reused"]
    assert reused["reused"] == ITEMS * REPEATS * 2
    assert reused["calls"] == fresh["calls"] + fresh["reused"] - ITEMS * REPEATS * 2
    assert f"Reused, not sent (answered by an identical request of the audit): judge {reused['reused']}" in (
        (tmp_path / "reused" / "report.txt").read_text()
    )
    page = (tmp_path / "reused" / "report.html").read_text()
    assert "Judge calls" in page and f"<dt>reused</dt><dd>{reused['reused']}</dd>" in page


def test_reuse_with_the_call_cache_counts_as_without_it(rbg, scripted, tmp_path, items_file):
    server = scripted(_deterministic)
    path = _suite(tmp_path, items_file, server.url)
    assert rbg("audit", path, "--out", tmp_path / "private", "--no-cache").exit_code == 0
    sent = len(server.calls("judge"))
    assert rbg("audit", path, "--out", tmp_path / "cached", "--cache", tmp_path / "c.sqlite").exit_code == 0
    assert len(server.calls("judge")) == 2 * sent
    assert report(tmp_path / "cached")["usage"] == report(tmp_path / "private")["usage"]
    assert _figures(tmp_path / "cached") == _figures(tmp_path / "private")


def test_the_estimate_of_a_deterministic_audit_is_its_usage_to_the_call(rbg, scripted, tmp_path, items_file):
    server = scripted(_deterministic)
    path = _suite(tmp_path, items_file, server.url)
    est = rbg("audit", path, "--estimate", "--format", "json")
    assert est.exit_code == 0, est.output
    judge = json.loads(est.output)["phases"]["judge"]
    assert rbg("audit", path, "--out", tmp_path / "out", "--no-cache").exit_code == 0
    usage = report(tmp_path / "out")["usage"]["judge"]
    assert usage["calls"] == judge["calls"] == len(server.calls("judge"))
    # The estimate says what reuse saves: the run's `reused`, to the call.
    (said,) = [n for n in json.loads(est.output)["notes"] if "of the judge's calls are reused" in n]
    assert said.startswith(f"{usage['reused']} of the judge's calls are reused") and usage["reused"] > 0


def test_an_estimate_without_reuse_is_refused(rbg, scripted, tmp_path, items_file):
    path = _suite(tmp_path, items_file, "http://127.0.0.1:9/v1")
    result = rbg("audit", path, "--estimate", "--no-reuse")
    assert result.exit_code == 2 and "drop --no-reuse" in result.output


def _rewriting(role, body) -> str:
    """The judge as `_deterministic`; a generator that rewords every anchor,
    and a validator that accepts every rewrite."""
    if role == "generator":
        shown = user_text(body).split("<anchors>\n", 1)[1].split("\n</anchors>", 1)[0]
        return json.dumps({"anchors": {k: f"{v} Indeed." for k, v in json.loads(shown).items()}})
    if role == "validator":
        return json.dumps({"verdict": "accept", "reason": "the same scale"})
    return _deterministic(role, body)


def test_the_estimate_of_an_llm_rubric_operator_counts_only_the_criteria_it_rewrites(
    rbg, scripted, tmp_path, items_file
):
    server = scripted(_rewriting)
    path = Path(_suite(tmp_path, items_file, server.url))
    text = path.read_text().replace(OPERATORS, '["rubric_paraphrase", "criterion_reorder"]')
    path.write_text(text + f'[generator]\nbase_url = "{server.url}"\n[validator]\nbase_url = "{server.url}"\n')
    doc = json.loads(rbg("audit", path, "--estimate", "--format", "json").output)
    assert any("assumes every criterion text they rewrite is accepted" in n for n in doc["notes"])
    result = rbg("audit", path, "--out", tmp_path / "out", "--no-cache")
    assert result.exit_code == 0, result.output
    usage = report(tmp_path / "out")["usage"]["judge"]
    # rubric_paraphrase rewrote `quality`'s scale alone: `correct` and `clear` were reused.
    assert usage["reused"] == 2 * ITEMS * REPEATS * 2
    assert doc["phases"]["judge"]["calls"] == usage["calls"] == len(server.calls("judge"))


def test_a_private_cache_that_cannot_be_made_is_an_error_saying_what_to_do(
    rbg, scripted, tmp_path, items_file, monkeypatch
):
    import tempfile

    server = scripted(_deterministic)
    path = _suite(tmp_path, items_file, server.url)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no such folder"))
    result = rbg("audit", path, "--out", tmp_path / "out", "--no-cache")
    assert result.exit_code == 2 and "private call cache" in result.output and "--no-reuse" in result.output
    assert "Traceback" not in result.output and server.calls("judge") == []
