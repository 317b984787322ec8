"""The plots as Chromium draws them, from a static export opened as files:
the stylesheet reshapes no mark (each bar, cell and band is drawn at the
size its attributes give), no title or label runs out of its figure, and
every plot is there with no script run by the page's data."""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_html.test_chromium import CHROMIUM
from conftest import needs

from rubriclang.cli.view import load_sources
from rubriclang.view.export import export
from rubriclang.view.pages import export_name

from .cdp import Browser
from .fixture import make_run

pytestmark = needs(
    CHROMIUM.exists(), "headless Chromium is not installed (/usr/bin/chromium; apt-get install chromium)"
)

# Per plot on the page: its class, how many rects are drawn at another
# height than their attribute says, and how many texts overflow its viewBox.
MEASURE = """Array.from(document.querySelectorAll('svg.plot')).map(svg => {
  const box = svg.getBoundingClientRect();
  const off = Array.from(svg.querySelectorAll('rect')).filter(r =>
    Math.abs(r.getBBox().height - r.height.baseVal.value) > 0.5).length;
  const over = Array.from(svg.querySelectorAll('text')).filter(t => {
    const b = t.getBoundingClientRect();
    return b.width > 0 && (b.left < box.left - 1 || b.right > box.right + 1 || b.top < box.top - 1 || b.bottom > box.bottom + 1);
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
