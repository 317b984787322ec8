"""`python -m rubriclang.audit.html DIR`, and the page of a real audit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubriclang.audit.html import render_html, write_html
from rubriclang.audit.html.__main__ import main
from rubriclang.cli.main import cli

from .dom import Dom
from .fixture import make_report

REPO = Path(__file__).resolve().parents[2]


def _audit_dir(tmp_path: Path, report: dict) -> Path:
    (tmp_path / "report.json").write_text(json.dumps(report, sort_keys=True, indent=2), encoding="utf-8")
    return tmp_path


def test_the_module_renders_dir_report_json_into_dir_report_html(tmp_path):
    folder = _audit_dir(tmp_path, make_report())
    done = subprocess.run([sys.executable, "-m", "rubriclang.audit.html", str(folder)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(folder / "report.html")
    assert (folder / "report.html").read_text(encoding="utf-8") == render_html(make_report())


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "does not exist"),
        ("{not json", "cannot be read as JSON"),
        ('{"schema": "something/else"}', "is not an audit report"),
        ('{"schema": "rubriclang.audit.report/1", "suite": {}}', "does not match the report schema"),
    ],
)
def test_a_report_that_cannot_be_rendered_is_an_error_not_a_traceback(tmp_path, capsys, content, message):
    if content is not None:
        (tmp_path / "report.json").write_text(content, encoding="utf-8")
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "report.html").exists()


def test_the_module_without_a_folder_prints_its_usage(capsys):
    assert main([]) == 2
    assert "usage:" in capsys.readouterr().err


def test_the_page_of_a_real_audit_links_every_finding(tmp_path):
    out = tmp_path / "audit"
    result = CliRunner().invoke(cli, ["audit", str(REPO / "examples" / "audit" / "gsm8k.toml"), "--out", str(out)])
    assert result.exit_code in (0, 1), result.output
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    dom = Dom(Path(write_html(str(out))).read_text(encoding="utf-8"))
    articles = [e for e in dom.elements if e.tag == "article"]
    assert len(articles) == len(report["flips"]) + len(report["misses"]) > 0
    assert {h[1:] for h in dom.hrefs()} <= set(dom.ids())
    assert "Review queue" in dom.text and report["judge"]["name"] in dom.text
