"""The page in a real browser: headless Chromium renders it, its queue
links land on elements that exist, and no payload from the data became an
element or ran. CI must install Chromium (Debian: `apt-get install chromium`)."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest
from conftest import needs

from rubriclang.audit.html import render_html
from rubriclang.audit.html.markup import anchor

from .dom import Dom
from .fixture import BAD_ITEM, PAYLOADS, make_report

CHROMIUM = Path("/usr/bin/chromium")

pytestmark = needs(
    CHROMIUM.exists(), "headless Chromium is not installed (/usr/bin/chromium; apt-get install chromium)"
)


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    return subprocess.run([str(CHROMIUM), *flags, *args], capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def page_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("page") / "report.html"
    path.write_text(render_html(make_report()), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def dumped(tmp_path_factory, page_file) -> str:
    """The DOM after Chromium loaded the page."""
    done = _chromium(tmp_path_factory.mktemp("chromium"), "--dump-dom", page_file.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_chromium_renders_the_page_with_its_queue_linked_to_evidence(dumped):
    dom = Dom(dumped)
    assert "Overview" in dom.text and "Review queue" in dom.text
    ids = set(dom.ids())
    queue = [e.attrs["href"][1:] for e in dom.elements if e.tag == "a" and e.attrs.get("href", "").startswith("#v-")]
    expected = {anchor("v", f["variant"]) for f in make_report()["flips"] + make_report()["misses"]}
    assert set(queue) == expected and expected <= ids
    assert anchor("i", BAD_ITEM) in ids


def test_no_payload_became_an_element_or_ran_in_chromium(dumped):
    dom = Dom(dumped)
    assert not dom.tags() & {"script", "img", "iframe", "object", "embed"}
    body = next(e for e in dom.elements if e.tag == "body")
    assert "data-pwned" not in body.attrs
    title = dumped[dumped.index("<title>") + 7 : dumped.index("</title>")]
    assert title == "Audit of helpfulness"
    for payload in PAYLOADS:
        assert payload in dom.text  # shown as text


def test_chromium_takes_a_screenshot_of_the_page(tmp_path, page_file):
    shot = tmp_path / "audit.png"
    done = _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", page_file.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (1280, 2000)
