"""The audit workbench driven in a real headless Chromium: `rbg view` served
in a fresh project, the landing page's "New audit" link, a judge and items
picked, Plan, Save (the suite on disk is `rbg audit init`'s bytes for the
same choices), an operator switched off and saved over it once confirmed,
Estimate, Preview. Each page is saved as a screenshot under
tests/artifacts/screenshots/ (git-ignored; CI keeps it)."""

from __future__ import annotations

import base64
import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from audit_html.test_chromium import CHROMIUM
from conftest import needs

from .cdp import Browser
from .test_workbench import _with_llm_criterion

pytestmark = needs(
    CHROMIUM.exists(), "headless Chromium is not installed (/usr/bin/chromium; apt-get install chromium)"
)

SHOTS = Path(__file__).resolve().parents[1] / "artifacts" / "screenshots"


def _shot(browser: Browser, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    data = browser.call("Page.captureScreenshot", session=True, format="png", captureBeyondViewport=True)["data"]
    (SHOTS / f"workbench-{name}.png").write_bytes(base64.b64decode(data))


def _pick(browser: Browser, select: str, value: str) -> None:
    """Choose `value` in the <select> `select`, as a person picking it would (a change event)."""
    browser.js(
        f"(() => {{ const s = document.querySelector({json.dumps(select)}); s.value = {json.dumps(value)}; "
        "s.dispatchEvent(new Event('change', {bubbles: true})); return s.value; })()"
    )
    assert browser.js(f"document.querySelector({json.dumps(select)}).value") == value


@pytest.fixture()
def served(tmp_path):
    """`rbg view` (no path) in a project made by `rbg init`: (project, base URL, token)."""
    project = tmp_path / "project"
    rbg = [sys.executable, "-c", "from rubriclang.cli.main import main; main()"]
    subprocess.run([*rbg, "init", str(project)], check=True, capture_output=True)
    _with_llm_criterion(project)  # a judge with more than one operator to switch
    proc = subprocess.Popen([*rbg, "view"], cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    try:
        line = proc.stdout.readline()
        url = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)", line)
        assert url, line + proc.stderr.read()
        yield project, *url.groups()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()


@pytest.mark.slow  # a project made, `rbg view` started and a browser driven: about 12 s
def test_configure_plan_and_save_a_suite_in_chromium(tmp_path, served):
    project, base, token = served
    with Browser(tmp_path / "profile") as browser:
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=1280,
            height=900,
            deviceScaleFactor=1,
            mobile=False,
        )
        browser.load(f"{base}/?token={token}")
        _shot(browser, "1-landing")
        browser.click("#new-audit")
        assert browser.js("location.pathname") == "/workbench"
        _shot(browser, "2-configure")
        _pick(browser, "#judge", "rubric.rbg")
        _pick(browser, "#items", "items.jsonl")
        browser.click("#plan")
        statuses = browser.js(
            "Array.from(document.querySelectorAll('#catalog tbody tr')).map("
            "r => [r.dataset.op, r.lastElementChild.firstChild.textContent.trim()])"
        )
        chosen = [op for op, status in statuses if status == "in the suite"]
        assert chosen and all(s in ("in the suite", "left out") for _, s in statuses)
        _shot(browser, "3-plan")
        browser.js("document.querySelector('#suite').value = 'browser.toml'")
        browser.click("#save")
        assert "no error" in browser.js("document.querySelector('#saved').textContent")
        _shot(browser, "4-saved")
        cli = subprocess.run(
            [
                sys.executable,
                "-c",
                "from rubriclang.cli.main import main; main()",
                "audit",
                "init",
                "rubric.rbg",
                "items.jsonl",
                "-o",
                "cli.toml",
            ],
            cwd=project,
            capture_output=True,
            text=True,
        )
        assert cli.returncode == 0, cli.stderr
        assert (project / "browser.toml").read_bytes() == (project / "cli.toml").read_bytes()
        # Switch the first chosen operator off (a click on its box): saving
        # again replaces the file only once the box that says so is ticked.
        browser.click(f"#catalog tr[data-op='{chosen[0]}'] input[name=op]", navigates=False)
        browser.click("#save")
        assert "exists" in browser.js("document.querySelector('#errors').textContent")
        _shot(browser, "5-exists")
        assert (project / "browser.toml").read_bytes() == (project / "cli.toml").read_bytes()
        browser.click("#overwrite", navigates=False)
        browser.click("#save")
        assert "no error" in browser.js("document.querySelector('#saved').textContent")
        browser.click("#estimate-button")
        assert "no model was called" in browser.js("document.querySelector('#estimate').textContent")
        _shot(browser, "6-estimate")
        browser.click("#preview-button")
        assert "variant(s) accepted" in browser.js("document.querySelector('#previewed').textContent")
        _shot(browser, "7-preview")
    text = (project / "browser.toml").read_text()
    assert f"#   {chosen[0]}: switched off" in text and f'"{chosen[0]}",' not in text
    assert all(f'"{op}",' in text for op in chosen[1:])
