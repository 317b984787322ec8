"""`rbg view` served for real and loaded in headless Chromium: navigation,
filters, the item graph, the viewer's own script running under its CSP,
payloads staying inert, and notes kept across a restart."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

pytest.importorskip("starlette")

from audit_html.dom import Dom  # noqa: E402
from audit_html.test_chromium import CHROMIUM, _chromium  # noqa: E402

from .fixture import BAD_ID, FAILED, MARK, VETOED, make_run  # noqa: E402

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="headless Chromium is not installed (/usr/bin/chromium; apt-get install chromium)")


def chromium(tmp_path: Path, *args: str) -> str:
    done = _chromium(tmp_path, *args)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


class Viewer:
    """`rbg view PATHS` in a child process, and the URL it printed."""

    def __init__(self, *paths: Path):
        self.proc = subprocess.Popen([sys.executable, "-c", "from rubriclang.cli.main import main; main()", "view", *map(str, paths)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        found = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)", line)
        assert found, line + self.proc.stderr.read()
        self.base, self.token = found.groups()

    def url(self, path: str) -> str:
        return f"{self.base}{path}{'&' if '?' in path else '?'}token={self.token}"

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.proc.stdout.close()
        self.proc.stderr.close()


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict[str, Path]:
    return make_run(tmp_path_factory.mktemp("run"))


@pytest.fixture(scope="module")
def viewer(run):
    v = Viewer(run["graph"], run["items"], run["trace"], run["trace2"], run["audit"])
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
    nodes = {e.attrs["data-node"]: e.attrs["class"].split() for e in dom.elements if e.tag == "g" and "data-node" in e.attrs}
    assert set(nodes) == {"correct", "harmful", "rambling", "concise", "safe"}
    assert "on" in nodes["harmful"] and "on" in nodes["safe"] and "on" not in nodes["correct"]


def test_script_payloads_in_items_stay_inert(tmp_path, viewer):
    from urllib.parse import quote

    out = chromium(tmp_path, "--dump-dom", viewer.url(f"/item?src=trace.jsonl&id={quote(BAD_ID)}"))
    dom = Dom(out)
    assert [e.attrs.get("src") for e in dom.elements if e.tag == "script"] == ["/static/view.js"]
    assert not dom.tags() & {"img", "iframe", "object", "embed"}
    body = next(e for e in dom.elements if e.tag == "body")
    assert "data-pwned" not in body.attrs
    assert out[out.index("<title>") + 7:out.index("</title>")] == f"Item {BAD_ID}".replace("<", "&lt;").replace(">", "&gt;")
    assert MARK in dom.text


def test_a_note_survives_a_restart(tmp_path, run):
    first = Viewer(run["audit"])
    try:
        saved = httpx.post(first.url("/notes?n=0"), data={"token": first.token, "item": "q1", "text": "Looked at it: <i>fine</i>"})
        assert saved.status_code == 303
    finally:
        first.stop()
    second = Viewer(run["audit"])
    try:
        dom = _dom(tmp_path, second.url("/audit?n=0"))
    finally:
        second.stop()
    assert "Looked at it: <i>fine</i>" in dom.text and "i" not in dom.tags()
