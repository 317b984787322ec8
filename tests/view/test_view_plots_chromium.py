"""The plots as Chromium draws them, from a static export opened as files:
the stylesheet reshapes no mark (each bar, cell and band is drawn at the
size its attributes give), no title or label runs out of its figure, and
every plot is there with no script run by the page's data."""

from __future__ import annotations

import functools
import http.server
import json
import threading
from pathlib import Path

import pytest
from audit_html.test_chromium import CHROMIUM
from conftest import needs

from rubriclang.cli.view import load_sources
from rubriclang.view.export import export
from rubriclang.view.pages import export_name

from .cdp import Browser
from .fixture import GRAPH, _trace, items, make_run

pytestmark = needs(
    CHROMIUM.exists(), "headless Chromium is not installed (/usr/bin/chromium; apt-get install chromium)"
)

# Per plot on the page: its class, how many rects are drawn at another
# height than their attribute says, and how many texts lie outside the figure.
MEASURE = """Array.from(document.querySelectorAll('svg.plot')).map(svg => {
  const box = svg.getBoundingClientRect();
  const off = Array.from(svg.querySelectorAll('rect')).filter(r =>
    Math.abs(r.getBBox().height - r.height.baseVal.value) > 0.5).length;
  const over = Array.from(svg.querySelectorAll('text')).filter(t => {
    const b = t.getBoundingClientRect();
    return b.width > 0 && (b.left < box.left - 1 || b.right > box.right + 1 ||
      b.top < box.top - 1 || b.bottom > box.bottom + 1);
  }).length;
  return [svg.getAttribute('class'), off, over, box.width > 0];
})"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    run = make_run(tmp_path_factory.mktemp("run"))
    out = tmp_path_factory.mktemp("export")
    paths = ("graph", "items", "trace", "trace2", "eval", "audit")
    export(load_sources(tuple(str(run[p]) for p in paths)), str(out))
    return out


@pytest.mark.parametrize(
    "page, kinds",
    [
        (("eval", {}), {"plot estimates", "plot scatter", "plot heatmap"}),
        (("compare", {"n": "0"}), {"plot scatter", "plot histogram"}),
        (("audit", {"n": "0"}), {"plot rates"}),
    ],
)
def test_each_plot_is_drawn_as_its_attributes_say_and_nothing_runs_out_of_it(tmp_path, exported, page, kinds):
    with Browser(tmp_path / "profile") as browser:
        browser.load((exported / export_name(*page)).as_uri())
        plots = browser.js(MEASURE)
    assert {cls for cls, *_ in plots} == kinds
    for cls, off, over, shown in plots:
        assert shown and off == 0 and over == 0, (cls, off, over)


def test_the_exports_items_page_filtered_in_the_browser_shows_gold_by_the_number_rule(tmp_path):
    rows = [dict(i, gold=4.6666666667) for i in items()[:20]]
    paths = {"graph": tmp_path / "judge.rbg", "items": tmp_path / "items.jsonl", "trace": tmp_path / "trace.jsonl"}
    paths["graph"].write_text(GRAPH, encoding="utf-8")
    paths["items"].write_text("".join(json.dumps(i) + "\n" for i in rows), encoding="utf-8")
    _trace(paths["graph"], paths["items"], paths["trace"])
    out = tmp_path / "export"
    export(load_sources(tuple(str(p) for p in paths.values())), str(out))

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(out)))
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        page = export_name("items", {"src": "trace.jsonl"})
        with Browser(tmp_path / "profile") as browser:
            # Sorted, so the page's script lists the rows from the rows file, filtered by the exact gold.
            browser.load(
                f"http://127.0.0.1:{server.server_address[1]}/{page}?src=trace.jsonl&gold=4.6666666667&sort=item"
            )
            count = browser.js("document.getElementById('count').textContent")
            golds = browser.js(
                "Array.from(document.querySelectorAll('#items tbody tr')).map(r => r.cells[3].textContent)"
            )
    finally:
        server.shutdown()
        server.server_close()
    assert count.startswith("20 of 20 items") and "gold 4.667;" in count
    assert golds and set(golds) == {"4.667"}
