"""The HTML report rendered from a report.json: escaping, anchors, order,
evidence, and byte-for-byte determinism."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from rubriclang.audit.html import render_html
from rubriclang.audit.html.markup import anchor, el, link

from .dom import Dom
from .fixture import BAD_ITEM, JS_URL, PAYLOADS, SCRIPT, make_report, summary

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "rubriclang" / "audit" / "report.schema.json"
# Every element the page may contain; anything else came from the data.
ALLOWED_TAGS = {
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "header",
    "nav",
    "main",
    "section",
    "footer",
    "article",
    "div",
    "p",
    "span",
    "a",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "code",
    "strong",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "ul",
    "ol",
    "li",
    "dl",
    "dt",
    "dd",
    "details",
    "summary",
    "figure",
    "figcaption",
    "svg",
    "line",
    "rect",
    "text",
    "del",
    "ins",
    "pre",  # a structured field's text and JSON (structure.py)
}
STATIC_IDS = {"overview", "summary", "operators", "charts", "criteria", "notes", "queue", "evidence"}


@pytest.fixture
def report() -> dict:
    return make_report()


@pytest.fixture
def page(report) -> str:
    return render_html(report)


def test_the_fixture_matches_the_report_schema(report):
    jsonschema.validate(report, json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))


def test_payloads_in_the_data_appear_only_as_escaped_text(page):
    for payload in PAYLOADS:
        if payload != JS_URL:  # no markup in it: it is plain text, and no attribute holds it (below)
            assert payload not in page
    assert "<script" not in page.lower() and "<img" not in page.lower()
    assert html.escape(SCRIPT, quote=True) in page
    dom = Dom(page)
    assert dom.tags() <= ALLOWED_TAGS
    # The payloads are shown, as text, where the data put them.
    for payload in PAYLOADS:
        assert payload in dom.text


def test_no_attribute_carries_a_handler_or_an_outside_url(page):
    dom = Dom(page)
    for e in dom.elements:
        assert not any(name.startswith("on") for name in e.attrs), e
        assert not any("javascript:" in (v or "").lower() for v in e.attrs.values()), e
    assert all(href.startswith("#") for href in dom.hrefs())


def test_the_page_forbids_scripts_and_outside_fetches(page):
    csp = next(e.attrs["content"] for e in Dom(page).elements if e.attrs.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in csp and "script-src 'none'" in csp


def test_ids_are_unique_and_derived_from_data_by_hashing(page):
    ids = Dom(page).ids()
    assert len(ids) == len(set(ids))
    assert all(i in STATIC_IDS or re.fullmatch(r"[vi]-[0-9a-f]{16}", i) for i in ids)


def test_every_in_page_link_points_to_an_element_that_exists(page):
    dom = Dom(page)
    ids = set(dom.ids())
    assert {href[1:] for href in dom.hrefs()} <= ids


def test_the_queue_links_each_finding_to_its_evidence(page, report):
    dom = Dom(page)
    evidence = {e.attrs["id"] for e in dom.elements if e.tag == "article"}
    findings = report["flips"] + report["misses"]
    assert evidence == {anchor("v", f["variant"]) for f in findings}
    queue_links = [
        e.attrs["href"][1:] for e in dom.elements if e.tag == "a" and e.attrs.get("href", "")[1:] in evidence
    ]
    assert set(queue_links) == evidence


def test_the_queue_puts_the_worst_item_first(page):
    # q1 and the payload item flipped on every repeat (q1 by more); q3 has a
    # miss on two repeats of three and one failed repeat.
    queue = page[page.index('id="queue"') : page.index('id="evidence"')]
    order = [queue.index(f'id="{anchor("i", item)}"') for item in ("q1", BAD_ITEM, "q3")]
    assert order == sorted(order)


def test_a_finding_of_every_repeat_outranks_a_single_failed_repeat(report):
    report["flips"] = [f for f in report["flips"] if f["item"] in ("q3", BAD_ITEM)]
    report["misses"] = []
    page = render_html(report)
    assert page.index(anchor("i", BAD_ITEM)) < page.index(anchor("i", "q3"))


def test_the_evidence_marks_the_changed_words(page):
    assert "<del>answer</del>" in page and "<ins>answre</ins>" in page
    assert "<del>because</del>" in page and "<ins>becuase</ins>" in page


def test_a_judge_side_variant_shows_the_changed_criterion_parameter(page):
    assert "criterion.correct.question" in page
    assert "<ins>right</ins>" in page or "right</ins>" in page


def test_the_evidence_shows_every_repeat_and_marks_those_that_went_wrong(page):
    dom = Dom(page)
    article = page[page.index(f'id="{anchor("v", "q1/prompt_paraphrase")}"') :]
    article = article[: article.index("</article>")]
    cells = re.findall(r'<td class="(dec[^"]*)"[^>]*>([^<]*)</td>', article)
    assert cells == [("dec", "4"), ("dec", "4"), ("dec off", "5"), ("dec off", "2"), ("dec off", "2"), ("dec off", "3")]
    assert dom.with_class("off")


def test_the_localization_shows_moved_nodes_absorption_and_the_sink(page):
    assert "The move reached the sink." in page
    assert "absorbed the move of clear" in page
    assert "The sink&#x27;s summary did not move." in page


def test_skipped_operators_are_listed_with_their_reason(page):
    assert "needs pairwise items " + html.escape(SCRIPT) in page


def test_the_overview_gives_each_metric_with_its_interval_and_n(page):
    overview = page[page.index('id="overview"') : page.index('id="operators"')]
    row = overview[overview.index("Repeat flip rate") : overview.index("</tr>", overview.index("Repeat flip rate"))]
    assert "11.1%" in row and "[0.0%, 33.3%]" in row and "1/9" in row and ">3<" in row
    assert "+25.0 pp" in overview and "[-5.0 pp, +50.0 pp]" in overview
    assert "MAE vs gold" in overview and "0.444" in overview


def test_the_llm_summary_is_marked_as_machine_written(page):
    section = page[page.index('id="summary"') :]
    assert "written by an LLM" in section[:400] and "Machine-written" in section[:1000]


def test_without_a_summary_there_is_no_summary_section(report):
    report["summary"] = None
    assert 'id="summary"' not in render_html(report)


def test_a_summary_that_failed_says_why(report):
    report["summary"] = {"written_by": "llm", "model": None, "text": None, "error": "the model was unreachable"}
    assert "No summary could be written: the model was unreachable" in render_html(report)


def test_a_chart_bar_is_as_long_as_its_rate(page):
    svg = page[page.index("<svg") : page.index("</svg>")]
    # typo_noise flipped 1/1 (the full plot width), add_emoji 1/3.
    assert 'width="330"' in svg and 'width="110"' in svg
    for name in ("typo_noise", "add_emoji", "prompt_paraphrase", "input_paraphrase"):
        assert f">{name}</text>" in svg


def test_an_audit_without_findings_says_there_is_nothing_to_review(report):
    report["flips"], report["misses"] = [], []
    report["metrics"]["invariant"] = report["metrics"]["directional"] = None
    report["by_surface"], report["by_operator"] = {}, {}
    page = render_html(report)
    assert "Nothing to review" in page and "No variants were judged." in page
    assert "not measured: no invariant variants" in page


def test_a_position_swap_matches_candidates_by_id():
    report = make_report()
    f = report["flips"][0]
    texts: dict[str, Any] = {
        "input": "Which is better?",
        "candidates": [["a", "First answer."], ["b", "Second answer."]],
        "reference": None,
    }
    f.update(
        operator="position_swap",
        surface="paired",
        changed=["candidates"],
        original=texts,
        perturbed={**texts, "candidates": texts["candidates"][::-1]},
    )
    page = render_html(report)
    assert "candidate a (position 1 \u2192 2)" in page and "candidate b (position 2 \u2192 1)" in page
    article = page[page.index(f'id="{anchor("v", f["variant"])}"') :]
    article = article[: article.index("</article>")]
    assert "order of the candidates" in article
    # The texts are matched by id, so neither is marked as changed.
    assert "answer.</del>" not in article and "answer.</ins>" not in article and "First answer." in article


def _reversed(x):
    """The same JSON with every object's keys in reverse order."""
    if isinstance(x, dict):
        return {k: _reversed(x[k]) for k in reversed(list(x))}
    if isinstance(x, list):
        return [_reversed(v) for v in x]
    return x


def test_the_same_report_gives_the_same_bytes(report, page):
    assert render_html(make_report()) == page
    assert render_html(_reversed(report)) == page
    assert render_html(json.loads(json.dumps(report, sort_keys=True))) == page


def test_markup_refuses_names_and_links_it_did_not_make():
    with pytest.raises(ValueError):
        el("img src=x", None)
    with pytest.raises(ValueError):
        el("a", {"onclick x": "1"})
    with pytest.raises(ValueError):
        link("javascript:alert(1)", "x")
    assert el("a", {"title": '"><b>'}, "<i>") == '<a title="&quot;&gt;&lt;b&gt;">&lt;i&gt;</a>'


def test_decisions_that_abstained_or_failed_read_as_such(report):
    report["misses"][0]["result"] = summary(["abstain", "failed", 5])
    report["misses"][0]["result"]["decisions"][0]["status"] = "abstain"
    assert ">abstain</td>" in render_html(report) and ">failed</td>" in render_html(report)
