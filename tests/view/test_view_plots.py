"""The viewer's plots and numbers: each plot is valid SVG with the marks its
data asks for, escapes its texts and is the same bytes every time; the
evaluation, compare and audit pages draw them; every number is spelled by
one rule; an empty text is marked; every finding of the review queue links
to its evidence, in the live viewer and in a static export."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from audit_html.dom import Dom
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from rubriclang.cli.view import load_sources
from rubriclang.view import plots
from rubriclang.view.export import export
from rubriclang.view.numbers import readable
from rubriclang.view.pages import Site, export_name
from rubriclang.view.server import make_app

from .fixture import GRAPH, SCRIPT, _trace, items, make_run

SVG = "{http://www.w3.org/2000/svg}"
TOKEN = "t0ken-for-plots"


def _svg(markup: str) -> ET.Element:
    root = ET.fromstring(markup)
    assert root.tag == f"{SVG}svg" and root.get("role") == "img" and root.get("aria-label")
    assert root.find(f"{SVG}title") is not None
    return root


def _marks(root: ET.Element, tag: str, cls: str) -> list[ET.Element]:
    return [e for e in root.iter(f"{SVG}{tag}") if cls in (e.get("class") or "").split()]


def _n(mark: ET.Element) -> int:
    """How many items a mark (a point, a cell, a bar) stands for."""
    return int(mark.get("data-n", "0"))


def _svgs(page: str, kind: str) -> list[ET.Element]:
    """The plots of `kind` (`scatter`, `heatmap`, ...) on an HTML page, parsed."""
    out = []
    for chunk in page.split("<svg ")[1:]:
        markup = "<svg " + chunk.split("</svg>")[0] + "</svg>"
        root = _svg(markup)
        if kind in root.get("class", "").split():
            out.append(root)
    return out


# --- the plots alone --------------------------------------------------------------


def test_a_scatter_counts_overlapping_points_as_one_mark_and_draws_the_diagonal():
    root = _svg(plots.scatter("Decision against gold", [(1, 1)] * 3 + [(2, 3), (4.5, 4)], "gold", "decision"))
    points = _marks(root, "circle", "point")
    assert sorted(_n(p) for p in points) == [1, 1, 3]
    assert len(_marks(root, "line", "diagonal")) == 1
    assert "3" in [t.text for t in _marks(root, "text", "count")]
    assert {t.text for t in _marks(root, "text", "tick")} >= {"1", "2", "3", "4", "5"}


def test_a_heat_map_has_a_cell_per_pair_with_its_count_and_links_only_counted_cells():
    root = _svg(
        plots.heatmap(
            "Confusion",
            ["a", "b"],
            ["a", "b", "c"],
            [[3, 0, 1], [0, 5, 0]],
            "gold",
            "decision",
            [["/items?gold=a&decision=a", "/x", "/y"], ["/z", "/items?gold=b&decision=b", None]],
        )
    )
    cells = _marks(root, "rect", "cell")
    assert [_n(c) for c in cells] == [3, 0, 1, 0, 5, 0]
    assert [t.text for t in _marks(root, "text", "count")] == ["3", "0", "1", "0", "5", "0"]
    assert [a.get("href") for a in root.iter(f"{SVG}a")] == [
        "/items?gold=a&decision=a",
        "/y",
        "/items?gold=b&decision=b",
    ]


def test_a_histogram_has_a_bar_per_bin_and_marks_no_change():
    bins = plots.bins_of([-1.0, -1.0, 2.0], zero=True)
    assert [(b.low, b.n) for b in bins] == [(-1.5, 2), (-0.5, 0), (0.5, 0), (1.5, 1)]
    root = _svg(plots.histogram("Shifts", bins, "new − old", zero=True))
    assert [_n(b) for b in _marks(root, "rect", "bar")] == [2, 0, 0, 1]
    assert len(_marks(root, "line", "zero")) == 1
    real = plots.bins_of([0.1 * i for i in range(100)])
    assert len(real) == 10 and sum(b.n for b in real) == 100


def test_error_bars_draw_a_point_and_whisker_per_measured_estimate():
    root = _svg(
        plots.estimates(
            "Metrics",
            [
                ("exact", [plots.Estimate("judge", 0.25, 0.2, 0.3), plots.Estimate("baseline", 0.5)]),
                ("mae", [plots.Estimate("judge", None)]),
            ],
        )
    )
    assert len(_marks(root, "circle", "estimate")) == 2 and len(_marks(root, "line", "whisker")) == 1
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "0.250 [0.200, 0.300]" in texts and "0.500 [n/a]" in texts and "not measured" in texts


def test_rates_are_drawn_over_the_noise_band():
    root = _svg(
        plots.rates(
            "Flip rates",
            [plots.Estimate("typo_noise", 0.4, 0.2, 0.6, "4/10"), plots.Estimate("swap", None)],
            plots.Estimate("noise", 0.1, 0.05, 0.2),
            "repeat noise",
        )
    )
    band = _marks(root, "rect", "band")
    assert len(band) == 1 and float(band[0].get("width", "0")) > 0
    assert len(_marks(root, "circle", "estimate")) == 1
    assert "repeat noise: 0.100 [0.050, 0.200]" in [t.text for t in root.iter(f"{SVG}text")]


def test_every_text_of_a_plot_is_escaped():
    markup = plots.scatter(SCRIPT, [(1, 2)], SCRIPT, f"x {SCRIPT}")
    root = _svg(markup)
    assert not any(e.tag.endswith("script") for e in root.iter())
    assert next(t.text for t in root.iter(f"{SVG}title")) == SCRIPT and "<script>" not in markup
    heat = _svg(plots.heatmap(SCRIPT, [SCRIPT], [SCRIPT], [[1]], SCRIPT, SCRIPT, [["/i?a=<b>"]]))
    assert not any(e.tag.endswith("script") for e in heat.iter())


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 5), st.sampled_from([1, 1.5, 2.25, 3, 4.6666666667, 5])), min_size=1))
def test_a_scatter_is_the_same_bytes_whatever_the_order_and_counts_every_point(points):
    markup = plots.scatter("s", points, "gold", "decision")
    assert markup == plots.scatter("s", list(reversed(points)), "gold", "decision")
    assert sum(_n(p) for p in _marks(_svg(markup), "circle", "point")) == len(points)


def test_numbers_follow_one_rule():
    assert [readable(x) for x in (4.6666666667, 2.0, 7, 0.000123456, None, True)] == [
        "4.667",
        "2",
        "7",
        "0.0001235",
        "—",
        "true",
    ]
    assert [readable(x, "figure") for x in (0.5, 0.12345, -0.0001)] == ["0.500", "0.123", "0.000"]
    assert [readable(x, "difference") for x in (0.0123, -0.04, -0.0001)] == ["+0.012", "-0.040", "+0.000"]
    assert readable("formal") == "formal" and readable(float("nan")) == "n/a"


# --- the pages ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict[str, Path]:
    return make_run(tmp_path_factory.mktemp("plots"))


@pytest.fixture(scope="module")
def site(run) -> Site:
    paths = ("graph", "items", "trace", "trace2", "eval", "audit")
    return Site(load_sources(tuple(str(run[p]) for p in paths)))


def test_the_eval_page_draws_decision_against_gold_the_confusion_and_each_metrics_interval(site, run):
    page = site.render("eval", {})
    data = json.loads(run["eval"].read_text(encoding="utf-8"))["modes"]["pointwise"]
    (scatter,) = _svgs(page, "scatter")
    shown = sum(_n(p) for p in _marks(scatter, "circle", "point"))
    rows = site.sources.trace("trace.jsonl").table.rows
    assert shown == sum(r.number is not None and r.gold is not None for r in rows)
    assert _marks(scatter, "line", "diagonal")
    (heat,) = _svgs(page, "heatmap")
    assert sum(_n(c) for c in _marks(heat, "rect", "cell")) == sum(r.gold is not None for r in rows)
    metrics, differences = _svgs(page, "estimates")
    assert len(_marks(metrics, "circle", "estimate")) == sum(len(m) for m in data["metrics"].values())
    assert len(_marks(differences, "circle", "estimate")) == sum(len(m) for m in data["differences"].values())


def test_the_compare_page_draws_old_against_new_and_the_shifts_with_the_largest_linked(site):
    page = site.render("compare", {"n": "0"})
    cmp = site.sources.compares[0]
    (scatter,) = _svgs(page, "scatter")
    (hist,) = _svgs(page, "histogram")
    differing = len(cmp.impact.differences)
    assert sum(_n(p) for p in _marks(scatter, "circle", "point")) == differing
    assert sum(_n(b) for b in _marks(hist, "rect", "bar")) == differing
    assert _marks(hist, "line", "zero")
    links = [h for h in Dom(page).hrefs() if h.startswith("/item?")]
    assert sorted(parse_qs(urlsplit(h).query)["id"][0] for h in links) == sorted(
        [d.item for d in cmp.impact.differences] * 2  # the largest shifts, and the transition's items
    )


def test_the_audit_page_draws_each_operators_flip_rate_over_the_repeat_noise(site):
    page = site.render("audit", {"n": "0"})
    (chart,) = _svgs(page, "rates")
    report = site.sources.audits[0].report
    measured = [
        name
        for name, block in report["by_operator"].items()
        if block.get("invariant") and block["invariant"]["judgment_flip_rate"]["value"] is not None
    ]
    assert len(_marks(chart, "circle", "estimate")) == len(measured)
    (band,) = _marks(chart, "rect", "band")
    noise = report["metrics"]["repeat_flip_rate"]
    assert readable(noise["high"], "figure") in band.get("aria-label", "")


def test_every_finding_in_the_review_queue_links_to_its_evidence(site):
    page = Dom(site.render("audit", {"n": "0"}))
    report = site.sources.audits[0].report
    links = [e.attrs["href"] for e in page.with_class("evidence")]
    assert sorted(parse_qs(urlsplit(h).query)["variant"][0] for h in links) == sorted(
        f["variant"] for f in report["flips"] + report["misses"]
    )
    for href in links:
        finding = next(
            f
            for f in report["flips"] + report["misses"]
            if f["variant"] == parse_qs(urlsplit(href).query)["variant"][0]
        )
        evidence = Dom(site.render("evidence", {k: v[0] for k, v in parse_qs(urlsplit(href).query).items()}))
        assert [e.attrs.get("class") for e in evidence.with_class("side-label")] or finding["original"] == finding[
            "perturbed"
        ]
        rows = [e for e in evidence.elements if e.tag == "th"]
        assert rows and "original" in evidence.text and "variant" in evidence.text
        for m in finding["localization"]["moved"]:
            assert m["node"] in evidence.text
        assert not any(e.tag == "script" and "src" not in e.attrs for e in evidence.elements)


def test_an_unknown_variants_evidence_is_not_found(site, run):
    client = TestClient(make_app(site.sources, TOKEN), base_url="http://127.0.0.1:8123")
    assert client.get(f"/evidence?n=0&variant=nope&token={TOKEN}").status_code == 404
    assert client.get(f"/evidence?n=0&variant=q1%2Fprompt_paraphrase&token={TOKEN}").status_code == 200


def test_the_export_holds_every_page_the_review_queue_and_plots_link_to(tmp_path, site):
    export(site.sources, str(tmp_path))
    for name in ("audit", "eval", "compare"):
        params = {"n": "0"} if name != "eval" else {}
        page = tmp_path / export_name(name, params)
        for href in Dom(page.read_text(encoding="utf-8")).hrefs():
            if not href.startswith("#"):
                assert (tmp_path / href.split("?")[0]).is_file(), (name, href)
    audit = Dom((tmp_path / export_name("audit", {"n": "0"})).read_text(encoding="utf-8"))
    evidence = [e.attrs["href"] for e in audit.with_class("evidence")]
    assert evidence and all(
        "perturbed" in (tmp_path / h).read_text(encoding="utf-8") or "original" in (tmp_path / h).read_text("utf-8")
        for h in evidence
    )


def test_pages_are_the_same_bytes_rendered_again(site, run):
    again = Site(load_sources(tuple(str(run[p]) for p in ("graph", "items", "trace", "trace2", "eval", "audit"))))
    for route, params in (("eval", {}), ("compare", {"n": "0"}), ("audit", {"n": "0"})):
        assert site.render(route, params) == again.render(route, params)


# --- numbers and empty texts on the pages ----------------------------------------------


THIRDS = 4.6666666667


@pytest.fixture(scope="module")
def thirds(tmp_path_factory) -> dict:
    """The fixture's items with gold 4.6666666667 and two with an empty and
    an all-blank response, their trace, and (`ids`) the items' ids in order."""
    folder = tmp_path_factory.mktemp("thirds")
    rows = [dict(i, gold=THIRDS) for i in items()[:30]]
    rows[1]["response"] = ""
    rows[2]["response"] = "   "
    paths = {"graph": folder / "judge.rbg", "items": folder / "items.jsonl", "trace": folder / "trace.jsonl"}
    paths["graph"].write_text(GRAPH, encoding="utf-8")
    paths["items"].write_text("".join(json.dumps(i) + "\n" for i in rows), encoding="utf-8")
    _trace(paths["graph"], paths["items"], paths["trace"])
    paths["ids"] = [r["id"] for r in rows]
    return paths


def test_every_number_on_the_pages_and_in_the_export_follows_the_rule(thirds, tmp_path):
    sources = load_sources(tuple(str(thirds[p]) for p in ("graph", "items", "trace")))
    site = Site(sources)
    first = thirds["ids"][3]
    pages = [
        site.render("items", {"src": "trace.jsonl"}),
        site.render("item", {"src": "trace.jsonl", "id": first}),
        site.render("eval", {}),
    ]
    for page in pages:
        dom = Dom(page)
        # What a person reads: the text and every attribute but a link's (whose query names gold exactly).
        read = [dom.text] + [v for e in dom.elements for k, v in e.attrs.items() if k != "href" and v]
        assert "4.667" in dom.text and not any("4.666666" in r for r in read)
    export(sources, str(tmp_path))
    rows = json.loads(next((tmp_path / "data").iterdir()).read_text(encoding="utf-8"))["rows"]
    # `gold` is shown; `gold_label` is the key the gold filter matches exactly.
    assert {r["gold"] for r in rows} == {"4.667"} and {r["gold_label"] for r in rows} == {"4.6666666667"}


def test_an_empty_or_blank_response_is_marked_not_a_blank_box(thirds):
    site = Site(load_sources(tuple(str(thirds[p]) for p in ("graph", "items", "trace"))))
    for item_id, said in ((thirds["ids"][1], "empty"), (thirds["ids"][2], "blank: 3 whitespace characters")):
        page = Dom(site.render("item", {"src": "trace.jsonl", "id": item_id}))
        (marker,) = page.with_class("empty")
        assert marker.attrs["aria-label"] == f"{said} text"


def test_many_one_off_numeric_transitions_are_drawn_not_listed_and_the_rest_still_are():
    import re

    from rubriclang.review.impact import Impact, ItemImpact
    from rubriclang.view.pages import LARGEST_SHIFTS
    from rubriclang.view.sources import CompareSource, Sources

    # 300 one-off transitions of a real-valued readout (shifts of ±0.05, ±0.15, ±0.25), and two to no number.
    differences = [
        ItemImpact(f"i{n:03d}", readable(1 + n / 100), readable(1 + n / 100 + (n % 6 - 2.5) / 10)) for n in range(300)
    ]
    differences += [ItemImpact("e1", "4", "error"), ItemImpact("e2", "4", "error")]
    sources = Sources(compares=[CompareSource("a → b", "a", "b", Impact("t.jsonl", 400, tuple(differences)))])
    page = Site(sources).render("compare", {"n": "0"})
    (hist,) = _svgs(page, "histogram")
    assert sum(_n(b) for b in _marks(hist, "rect", "bar")) == 300
    dom = Dom(page)
    assert "4 -> error" in dom.text and f"{differences[0].old} -> {differences[0].new}" not in dom.text
    shifts = page.split('<table class="shifts">')[1].split("</table>")[0]
    cells = re.findall(r"<td>([^<]*)</td></tr>", shifts)
    assert len(cells) == LARGEST_SHIFTS and {abs(float(c)) for c in cells} == {0.25}  # the largest first


def test_pairwise_margins_are_a_histogram_whose_bars_link_to_their_items():
    import types

    from rubriclang.view.sources import Sources
    from rubriclang.view.table import row_of

    def rec(n: int, margin: float) -> dict:
        readout = {"status": "ok", "decision": "x" if margin > 0 else "y", "raw": None, "margin": margin, "error": None}
        return {
            "item": f"p{n}",
            "mode": "pairwise",
            "candidates": ["x", "y"],
            "criteria": {},
            "gold": "x",
            "readout": readout,
        }

    rows = [row_of(n + 1, rec(n, (n % 9 - 4) / 2)) for n in range(50)]
    # A trace source of these rows alone: all the plots read of a trace.
    trace: Any = types.SimpleNamespace(label="t.jsonl", table=types.SimpleNamespace(rows=rows))
    drawn = Site(Sources())._plots(trace)
    root = _svg(drawn["histogram"])
    bars = _marks(root, "rect", "bar")
    assert sum(_n(b) for b in bars) == 50 and _marks(root, "line", "zero")
    links = [a.get("href") or "" for a in root.iter(f"{SVG}a")]
    assert len(links) == sum(_n(b) > 0 for b in bars) and all("low=" in h and "high=" in h for h in links)


def test_the_review_queue_lists_flagged_items_worst_first_then_the_others(site):
    import re

    from rubriclang.audit.html.review_queue import ranked

    report = site.sources.audits[0].report
    page = site.render("audit", {"n": "0"})
    body = page.split('<table class="notes" id="notes">')[1]
    listed = [Dom(cell).text for cell in re.findall(r"<tr><td>(.*?)</td>", body)]
    flagged = [item for item, _ in ranked(report)]
    assert listed == flagged + sorted(set(report["by_item"]) - set(flagged))
    assert "repeats differ from the baseline" in Dom(page).text  # each finding says how badly it went
