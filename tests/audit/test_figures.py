"""The audit's figures cannot mislead: a failed judgment is not a flip, a
judge that only says "tie" is flagged, a proportion's interval is honest at
0% and 100%, and every figure a report holds is defined once (the registry
in rubriclang/audit/figures.py, printed in docs/audit.md) and shown under
its label."""

from __future__ import annotations

import json
import re
from html import escape as html_escape
from typing import Any

from rubriclang.audit.figures import FIGURES, GOLD_FIGURES, markdown_table
from rubriclang.audit.html.page import render_html
from rubriclang.audit.metrics import Tally, excess, newcombe
from rubriclang.audit.report_json import render_text
from rubriclang.evaluation.metrics import proportion

from .helpers import REPO, report
from .test_position_bias import COMPARE, PAIRS, _shown

TYPOS_IN_RESPONSE = '[options.typo_noise]\nfields = ["response"]\n'
DOC = (REPO / "docs" / "audit.md").read_text(encoding="utf-8")


def _pairwise_audit(rbg, tmp_path, scripted, order: str, answer):
    server = scripted(answer)
    (tmp_path / "judge.rbg").write_text(COMPARE.format(order=order))
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PAIRS))
    (tmp_path / "suite.toml").write_text(
        'items = "items.jsonl"\nrepeats = 2\noperators = ["position_swap"]\n[judge]\ngraph = "judge.rbg"\n'
        f'base_url = "{server.url}"\nmax_retries = 0\n'
    )
    result = rbg("audit", tmp_path / "suite.toml", "--out", tmp_path / "out")
    return result, report(tmp_path / "out")


def _always_first(role, body) -> str:
    return json.dumps({"reason": "The first one.", "preference": "A"})


def _unreadable(role, body) -> str:
    return "I would rather not say."


# --- a failed judgment measured nothing ---------------------------------------


def test_an_audit_whose_judgments_all_failed_is_not_reported_as_flips(rbg, tmp_path, scripted):
    result, r = _pairwise_audit(rbg, tmp_path, scripted, "as_given", _unreadable)
    assert r["counts"]["failed_judgments"] == r["counts"]["judgments"] == (8 + 8) * 2
    inv = r["metrics"]["invariant"]
    # Not "flip rate 1.000 [1.000, 1.000], excess 1.000": nothing was measured.
    for rate in (inv["flip_rate"], inv["judgment_flip_rate"], r["metrics"]["repeat_flip_rate"]):
        assert (rate["value"], rate["low"], rate["high"], rate["count"], rate["total"]) == (None, None, None, 0, 0)
        assert rate["coverage"] in (0.0, None)
    assert inv["flip_rate"]["failed"] == 8 and inv["excess_over_noise"]["value"] is None
    assert r["flips"] and {f["outcome"] for f in r["flips"]} == {"failed"}
    # The exit status says so, and so do the text, the summary and the page.
    assert result.exit_code == 3, result.output
    assert "nothing was measured" in result.output
    text = (tmp_path / "out" / "report.txt").read_text()
    assert "NOTHING WAS MEASURED" in text
    flip_line = next(x for x in text.splitlines() if x.strip().startswith("invariant flip rate"))
    assert "not measured (8 failed)" in flip_line and "1.000" not in flip_line
    assert "Flips (0 flipped, 8 failed):" in text
    assert r["summary"]["findings"][0]["text"].startswith("Nothing was measured")
    html = (tmp_path / "out" / "report.html").read_text()
    assert "Nothing was measured" in html and "not measured: 8 failed" in html


def test_a_failed_variant_lowers_the_coverage_of_its_rate_and_is_in_neither_count():
    t = Tally()
    t.unit("a", True)
    t.unit("a", False, failed=True)
    t.unit("b", False)
    r = t.rate()
    assert (r["count"], r["total"], r["failed"], r["coverage"], r["value"]) == (1, 2, 1, 0.666667, 0.5)


# --- a judge whose decisions collapse ---------------------------------------------


def test_a_judge_that_only_says_tie_is_flagged_not_passed_clean(rbg, tmp_path, scripted):
    # order = both on a server that always prefers the first answer: every
    # verdict is a tie, so nothing flips, and that must not read as robust.
    _, r = _pairwise_audit(rbg, tmp_path, scripted, "both", _always_first)
    inv = r["by_operator"]["position_swap"]["invariant"]
    assert inv["flipped"] == 0
    dec = r["metrics"]["decisions"]
    assert dec["collapsed"] == {"status": "ok", "decision": "tie"}
    assert dec["values"] == [{"status": "ok", "decision": "tie", "count": 16}]
    assert (dec["tie_rate"]["count"], dec["tie_rate"]["total"], dec["tie_rate"]["value"]) == (16, 16, 1.0)
    assert dec["tie_rate"]["low"] < 1.0  # an interval, not certainty
    # The tie rate under the swap, and its change: 0, with an interval that is not of zero width.
    assert inv["tie_rate"]["value"] == 1.0
    change = inv["tie_rate_change"]
    assert change["value"] == 0.0 and change["low"] < 0.0 < change["high"]
    finding = r["summary"]["findings"][0]
    assert "collapse to one value" in finding["text"] and finding["figures"] == ["metrics.decisions.collapsed"]
    text = (tmp_path / "out" / "report.txt").read_text()
    assert "COLLAPSED: every one of 16 judgment(s) is `tie`" in text
    assert "tie rate change" in text
    html = (tmp_path / "out" / "report.html").read_text()
    assert "tie rate change (variants - originals) +0.0 pp [" in html


def _prefers_x_on_even_items(role, body) -> str:
    first, _ = _shown(body)
    even = int(first[-1]) % 2 == 0
    return json.dumps({"reason": "By content.", "preference": "A" if even == first.startswith("answer x") else "B"})


def test_a_judge_that_decides_is_not_collapsed(rbg, tmp_path, scripted):
    _, r = _pairwise_audit(rbg, tmp_path, scripted, "as_given", _prefers_x_on_even_items)
    assert {v["decision"] for v in r["metrics"]["decisions"]["values"]} == {"x", "y"}
    assert r["metrics"]["decisions"]["collapsed"] is None
    assert r["metrics"]["decisions"]["tie_rate"]["count"] == 0


# --- intervals honest at 0% and 100% -------------------------------------------------


def _tally(hits: int, n: int) -> Tally:
    t = Tally()
    for i in range(n):
        t.unit(f"item{i:02}", i < hits)
    return t


def test_a_rate_of_0_of_30_has_an_interval_up_to_0_114():
    r = _tally(0, 30).rate()
    assert (r["value"], r["low"], round(r["high"], 3)) == (0.0, 0.0, 0.114)
    assert "0.000 [0.000, 0.114]  (0/30" in render_text_rate(r)


def test_a_rate_of_30_of_30_has_an_interval_down_to_0_886():
    r = _tally(30, 30).rate()
    assert (r["value"], round(r["low"], 3), r["high"]) == (1.0, 0.886, 1.0)
    assert "1.000 [0.886, 1.000]  (30/30" in render_text_rate(r)


def test_a_difference_of_two_rates_at_zero_has_an_interval_of_nonzero_width():
    d = newcombe(proportion([0] * 30, [1] * 30), proportion([0] * 30, [1] * 30))
    assert d.low is not None and d.high is not None
    assert d.value == 0.0 and round(d.low, 3) == -0.114 and round(d.high, 3) == 0.114
    e = excess(_tally(30, 30), _tally(30, 30))
    assert e["value"] == 0.0 and e["low"] < 0 < e["high"]


def render_text_rate(rate: dict) -> str:
    from rubriclang.audit.report_json import _rate

    return _rate(rate, "variants")


# --- one definition of each figure ---------------------------------------------------


def _figures_in(obj, path=()):
    """(name, figure) of every Rate or Estimate in a report (or a
    comparison, whose sides `a` and `b` hold the figure named above them),
    by its key."""
    if isinstance(obj, dict):
        if "value" in obj and "low" in obj and "high" in obj:
            yield (path[-2] if path[-1] in ("a", "b") else path[-1]), obj
            return
        for k, v in obj.items():
            yield from _figures_in(v, (*path, k))
    elif isinstance(obj, list):
        for v in obj:
            yield from _figures_in(v, path)


def test_the_docs_print_the_registry_of_figures():
    assert markdown_table() in DOC


def test_every_difference_is_labelled_by_what_it_subtracts():
    for f in FIGURES.values():
        if f.kind == "difference":
            assert " - " in f.label and " - " in f.formula, f.name


def test_every_figure_of_a_report_is_in_the_registry_and_shown_by_its_label(rbg, suite, tmp_path):
    result = rbg(
        "audit",
        suite('repeats = 2\noperators = ["partial_completion", "typo_noise"]\n' + TYPOS_IN_RESPONSE),
        "--out",
        tmp_path / "o",
    )
    assert result.exit_code == 0, result.output
    r = report(tmp_path / "o")
    names = {name for name, _ in _figures_in(r)}
    assert names - set(FIGURES) == set()
    for name in names:
        assert f"| `{name}` | {FIGURES[name].label} |" in DOC
    text = render_text(r)
    page = render_html(r, {})
    headline = {
        "repeat_flip_rate",
        "flip_rate",
        "judgment_flip_rate",
        "excess_over_noise",
        "detection_rate",
        "accuracy",
    }
    viewer = _viewer_report(tmp_path / "o")
    for name in headline:
        assert FIGURES[name].label in text, name
        for html in (page, viewer):
            assert FIGURES[name].label.capitalize() in html, name
            assert html_escape(FIGURES[name].formula) in html, name


def _viewer_report(folder) -> str:
    """The audit's report page as `rbg view FOLDER` serves it."""
    from starlette.testclient import TestClient

    from rubriclang.cli.view import load_sources
    from rubriclang.view.server import make_app

    client = TestClient(make_app(load_sources((str(folder),)), "tok"), base_url="http://127.0.0.1:8123")
    response = client.get("/report?n=0&token=tok", follow_redirects=True)
    assert response.status_code == 200
    return response.text


def test_a_pairwise_judges_gold_figures_are_rbg_evals(rbg, tmp_path, scripted):
    from rubriclang.evaluation.metrics import DEFINITIONS

    pairs = [{**p, "gold": "x"} for p in PAIRS]
    server = scripted(_always_first)
    (tmp_path / "judge.rbg").write_text(COMPARE.format(order="as_given"))
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
    (tmp_path / "suite.toml").write_text(
        f'items = "items.jsonl"\nrepeats = 1\noperators = []\n[judge]\ngraph = "judge.rbg"\nbase_url = "{server.url}"\n'
    )
    assert rbg("audit", tmp_path / "suite.toml", "--out", tmp_path / "out").exit_code == 0
    gold = report(tmp_path / "out")["metrics"]["gold"]
    assert "accuracy" not in gold
    for name in GOLD_FIGURES:
        if name in DEFINITIONS and name in gold:
            assert DEFINITIONS[name].formula in FIGURES[name].formula
    # Always the first shown, which is gold: agreement 8/8, with a Wilson interval.
    assert (gold["agreement"]["count"], gold["agreement"]["total"], gold["agreement"]["value"]) == (8, 8, 1.0)
    assert gold["agreement"]["low"] < 1.0
    assert gold["confusion"] == {
        "gold": ["first"],
        "predicted": [{"status": "ok", "decision": "first"}],
        "counts": [[8]],
    }
    assert re.search(r"agreement vs gold\s+1\.000 \[0\.\d+, 1\.000\]", (tmp_path / "out" / "report.txt").read_text())


def test_a_summary_with_no_entry_says_so_in_the_text_and_on_the_page():
    from rubriclang.audit.html.overview import machine_summary
    from rubriclang.audit.summary import render_text as summary_text

    empty: dict[str, Any] = {"written_by": "rules", "model": None, "error": None, "dropped": []}
    empty.update({k: [] for k in ("findings", "actions", "limitations", "follow_ups")})
    assert "no entry" in "\n".join(summary_text(empty))
    assert "No entry" in str(machine_summary({"summary": empty}))


def test_a_failed_criterion_judgment_is_no_move_of_the_criterion():
    from rubriclang.audit.localize import Localizer
    from rubriclang.checker import check_source

    graph = check_source(
        "rubric r { version = 1 }\ncontract { scale = bool }\n"
        "criterion a: bool = rule.length { field = response, over = 3 }\nsink a\nreadout pointwise { output = bool }\n"
    ).graph
    assert graph is not None
    loc = Localizer(graph)

    def trace(value, error=None):
        judgment = {"value": value, "error": error}
        return {"candidates": ["r"], "criteria": {"a": {"r": judgment}}, "operators": {}}

    base = loc.summaries([trace(True), trace(True)])
    moves = loc.repeat_moves([trace(True), trace(None, "timeout"), trace(False)], base)
    assert moves["a"] == (1, 2, 1)  # one move of two measured; the failure is counted apart
