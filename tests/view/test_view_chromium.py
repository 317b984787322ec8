"""`rbg view` served for real and loaded in headless Chromium: navigation,
filters, the item graph, the viewer's own script running under its CSP,
payloads staying inert, notes kept across a restart, clicks on evaluation
cells landing on exactly their items, and a static export's filters running
in the browser."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from audit_html.dom import Dom
from audit_html.test_chromium import CHROMIUM, _chromium
from conftest import needs

from .cdp import Browser
from .fixture import BAD_ID, FAILED, LABEL_GRAPH, MARK, TONES, VETOED, make_judged, make_run

pytestmark = needs(
    CHROMIUM.exists(), "headless Chromium is not installed (/usr/bin/chromium; apt-get install chromium)"
)


def chromium(tmp_path: Path, *args: str) -> str:
    done = _chromium(tmp_path, *args)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


class Viewer:
    """`rbg view PATHS` in a child process, and the URL it printed."""

    def __init__(self, *paths: Path):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from rubriclang.cli.main import main; main()", "view", *map(str, paths)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.stdout, self.stderr = self.proc.stdout, self.proc.stderr
        line = self.stdout.readline()
        found = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)", line)
        assert found, line + self.stderr.read()
        self.base, self.token = found.groups()

    def url(self, path: str) -> str:
        return f"{self.base}{path}{'&' if '?' in path else '?'}token={self.token}"

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.stdout.close()
        self.stderr.close()


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict[str, Path]:
    return make_run(tmp_path_factory.mktemp("run"))


@pytest.fixture(scope="module")
def viewer(run):
    v = Viewer(run["graph"], run["items"], run["trace"], run["trace2"], run["eval"], run["audit"])
    yield v
    v.stop()


def _dom(tmp_path: Path, url: str) -> Dom:
    return Dom(chromium(tmp_path, "--dump-dom", url))


def test_the_index_links_every_view(tmp_path, viewer):
    hrefs = _dom(tmp_path, viewer.url("/")).hrefs()
    assert "/items?src=trace.jsonl" in hrefs and "/compare?n=0" in hrefs and "/audit?n=0" in hrefs and "/eval" in hrefs


def test_a_request_without_the_token_is_refused(viewer):
    assert httpx.get(viewer.base + "/").status_code == 403


def test_filters_in_chromium(tmp_path, viewer):
    dom = _dom(tmp_path, viewer.url("/items?src=trace.jsonl&status=error"))
    links = [h for h in dom.hrefs() if h.startswith("/item?")]
    assert links == [f"/item?id={FAILED}&src=trace.jsonl"]
    body = next(e for e in dom.elements if e.tag == "body")
    assert body.attrs.get("data-ready") == "1"  # the viewer's own script ran under the CSP


def test_the_item_graph_in_chromium(tmp_path, viewer):
    dom = _dom(tmp_path, viewer.url(f"/item?src=trace.jsonl&id={VETOED}"))
    nodes = {
        e.attrs["data-node"]: e.attrs["class"].split() for e in dom.elements if e.tag == "g" and "data-node" in e.attrs
    }
    assert set(nodes) == {"correct", "harmful", "rambling", "concise", "safe"}
    assert "on" in nodes["harmful"] and "on" in nodes["safe"] and "on" not in nodes["correct"]


# The items the items view shows, on every page (the test's own script reads the page).
LISTED = "Array.from(document.querySelectorAll('#items tbody tr td:first-child a')).map(a => a.textContent)"


def _all_listed(browser: Browser) -> list[str]:
    shown = browser.js(LISTED)
    while browser.js("!!document.querySelector('a[rel=next]')"):
        browser.click("a[rel=next]")
        shown += browser.js(LISTED)
    return sorted(shown)


def test_clicking_a_confusion_cell_shows_exactly_its_items(tmp_path, viewer, run):
    from rubriclang.view.table import TraceTable, label

    rows = TraceTable(str(run["trace"])).rows
    with Browser(tmp_path / "profile") as browser:
        browser.load(viewer.url("/eval"))
        # The heat map's cells: (decision, gold) from the link, the count drawn in the cell.
        cells = browser.js(
            "Array.from(document.querySelectorAll('svg.heatmap a')).map(a => {"
            "const q = new URL(a.getAttribute('href'), location.href).searchParams; "
            "return [q.get('decision'), q.get('gold'), a.querySelector('text.count').textContent]; })"
        )
        assert len(cells) > 1
        for n, (decision, gold, count) in enumerate(cells[:3]):
            if n:
                browser.load(viewer.url("/eval"))
            browser.click("svg.heatmap a", index=n)
            want = sorted(
                r.item for r in rows if r.decision == decision and r.gold is not None and label(r.gold) == gold
            )
            assert _all_listed(browser) == want and len(want) == int(count)


def test_clicking_a_cell_of_a_label_judges_evaluation_shows_exactly_its_items(tmp_path_factory, tmp_path):
    import json

    run = make_judged(tmp_path_factory.mktemp("label"), LABEL_GRAPH, lambda n: TONES[n % 3])
    gold = {i["id"]: i["gold"] for i in map(json.loads, run["items"].read_text(encoding="utf-8").splitlines())}
    decided = {
        json.loads(line)["item"]: json.loads(line)["readout"]["decision"]
        for line in run["trace"].read_text(encoding="utf-8").splitlines()
    }
    v = Viewer(run["graph"], run["items"], run["trace"], run["eval"])
    try:
        with Browser(tmp_path / "profile") as browser:
            browser.load(v.url("/eval"))
            # (gold: the row's header, decision: the column's, count) of every cell, as the page shows them.
            cells = browser.js(
                "Array.from(document.querySelectorAll('table.eval-confusion td a')).map(a => "
                "[a.closest('tr').firstElementChild.textContent, "
                "a.closest('table').rows[0].cells[a.closest('td').cellIndex].textContent, a.textContent])"
            )
            assert len(cells) == 9
            for n, (g, decision, count) in enumerate(cells[:4]):
                if n:
                    browser.load(v.url("/eval"))
                browser.click("table.eval-confusion td a", index=n)
                want = sorted(i for i, d in decided.items() if d == decision and gold[i] == g)
                assert _all_listed(browser) == want and len(want) == int(count)
    finally:
        v.stop()


def test_clicking_a_metric_shows_the_items_it_rests_on(tmp_path, viewer, run):
    import json

    left_out = {
        x["item"]
        for x in json.loads(run["eval"].read_text(encoding="utf-8"))["modes"]["pointwise"]["left_out"]["by_item"]
    }
    from rubriclang.view.table import TraceTable

    want = sorted(r.item for r in TraceTable(str(run["trace"])).rows if r.item not in left_out)
    with Browser(tmp_path / "profile") as browser:
        browser.load(viewer.url("/eval"))
        browser.click("table.metrics a.cell")
        assert "scored by eval.json (pointwise)" in browser.js("document.getElementById('count').textContent")
        assert _all_listed(browser) == want


def test_script_payloads_in_items_stay_inert(tmp_path, viewer):
    from urllib.parse import quote

    out = chromium(tmp_path, "--dump-dom", viewer.url(f"/item?src=trace.jsonl&id={quote(BAD_ID)}"))
    dom = Dom(out)
    assert [e.attrs.get("src") for e in dom.elements if e.tag == "script"] == ["/static/view.js"]
    assert not dom.tags() & {"img", "iframe", "object", "embed"}
    body = next(e for e in dom.elements if e.tag == "body")
    assert "data-pwned" not in body.attrs
    assert out[out.index("<title>") + 7 : out.index("</title>")] == f"Item {BAD_ID}".replace("<", "&lt;").replace(
        ">", "&gt;"
    )
    assert MARK in dom.text


def test_a_note_survives_a_restart(tmp_path, run):
    first = Viewer(run["audit"])
    try:
        with httpx.Client() as session:  # the audit page gives the session its CSRF token
            page = session.get(first.url("/audit?n=0"), follow_redirects=True).text
            csrf = re.search(r'name="csrf" value="([^"]+)"', page)
            assert csrf is not None
            note = {"token": first.token, "csrf": csrf.group(1), "item": "q1", "text": "Looked at it: <i>fine</i>"}
            saved = session.post(first.url("/notes?n=0"), data=note)
        assert saved.status_code == 303
    finally:
        first.stop()
    second = Viewer(run["audit"])
    try:
        dom = _dom(tmp_path, second.url("/audit?n=0"))
    finally:
        second.stop()
    assert "Looked at it: <i>fine</i>" in dom.text and "i" not in dom.tags()


@pytest.fixture(scope="module")
def exported(tmp_path_factory, run):
    """`rbg view --export DIR`, served over loopback HTTP as a CI artefact would be."""
    import functools
    import http.server
    import threading

    from rubriclang.cli.view import load_sources
    from rubriclang.view.export import export

    folder = tmp_path_factory.mktemp("export")
    sources = load_sources(tuple(str(run[k]) for k in ("graph", "items", "trace", "trace2", "eval", "audit")))
    export(sources, str(folder))

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _export_items_page(folder: Path) -> str:
    from rubriclang.view.pages import export_name

    name = export_name("items", {"src": "trace.jsonl"})
    assert (folder / name).is_file()
    return name


def test_the_exports_filters_run_in_the_browser_from_its_json_rows(tmp_path, exported, run):
    from rubriclang.view.table import TraceTable

    folder, base = exported
    rows = TraceTable(str(run["trace"])).rows
    with Browser(tmp_path / "profile") as browser:
        browser.load(f"{base}/{_export_items_page(folder)}")
        browser.js(
            "document.querySelector('#filters select[name=status]').value = 'error'; "
            "document.querySelector('#filters select[name=status]').dispatchEvent(new Event('change'))"
        )
        browser.navigated()
        assert _all_listed(browser) == [FAILED]
        # A text search (case-blind) and a decision range, typed and submitted.
        browser.load(f"{base}/{_export_items_page(folder)}")
        browser.js(
            "const f = document.getElementById('filters'); f.elements.low.value = '2'; f.elements.high.value = '4'; "
            "f.elements.q.value = 'Q01'"
        )
        browser.click("#filters button[type=submit]")
        want = sorted(r.item for r in rows if r.number is not None and 2 <= r.number <= 4 and "q01" in r.text)
        assert want and _all_listed(browser) == want
        # Paging and sorting: the listing's one file, read with a query.
        browser.load(f"{base}/{_export_items_page(folder)}")
        assert _all_listed(browser) == sorted(r.item for r in rows)
        browser.load(f"{base}/{_export_items_page(folder)}")
        browser.click("#items th a[data-sort=item]")
        browser.click("#items th a[data-sort=item]")  # again: descending
        assert browser.js(LISTED)[:3] == sorted((r.item for r in rows), reverse=True)[:3]
        # Every row links to the exported page of its item.
        href = browser.js("document.querySelector('#items tbody a').getAttribute('href')")
        assert (folder / href).is_file()


def test_payloads_in_the_exports_rows_stay_text(tmp_path, exported):
    folder, base = exported
    with Browser(tmp_path / "profile") as browser:
        browser.load(f"{base}/{_export_items_page(folder)}?src=trace.jsonl&q=q-")
        assert BAD_ID in browser.js("document.getElementById('items').textContent")
        assert browser.js("document.querySelectorAll('#items tbody img, #items tbody script').length") == 0
        assert browser.js("document.body.hasAttribute('data-pwned')") is False


def test_the_export_shows_notes_read_only_and_says_where_they_are_typed(tmp_path, exported):
    folder, _ = exported
    dom = Dom(next(folder.glob("audit*.html")).read_text(encoding="utf-8"))
    assert "textarea" not in dom.tags() and "form" not in dom.tags()
    assert "typed in the live viewer" in dom.text


def test_an_export_opened_as_files_says_its_filters_need_http(tmp_path, exported):
    folder, _ = exported
    with Browser(tmp_path / "profile") as browser:
        browser.load((folder / _export_items_page(folder)).as_uri() + "?src=trace.jsonl&status=error")
        assert browser.js("document.body.getAttribute('data-filters')") == "unavailable"
        assert "serve the export over HTTP" in browser.js("document.getElementById('filters-note').textContent")


def test_structured_fields_read_well_in_chromium_and_their_payloads_stay_inert(tmp_path_factory, tmp_path):
    from rubriclang.cli.view import load_sources
    from rubriclang.view.export import export
    from rubriclang.view.pages import export_name

    from .structure_fixture import make_structured_run

    run = make_structured_run(tmp_path_factory.mktemp("structured"))
    out = tmp_path / "export"
    export(load_sources((str(run["graph"]), str(run["items"]), str(run["trace"]))), str(out))
    page = out / export_name("item", {"id": "full", "src": "trace.jsonl"})
    dom = _dom(tmp_path, page.as_uri())
    body = next(e for e in dom.elements if e.tag == "body")
    assert "data-pwned" not in body.attrs and "img" not in dom.tags()
    roles = [t for t in dom.with_class("role") if t.tag == "span"]
    assert len(roles) == 5 and len(dom.with_class("call")) == 2 and len(dom.with_class("document")) == 2
    shot = tmp_path / "structured.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,1400", page.as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
