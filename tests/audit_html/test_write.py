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
    done = subprocess.run(
        [sys.executable, "-m", "rubriclang.audit.html", str(folder)], capture_output=True, text=True, timeout=60
    )
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


def test_review_notes_in_the_folder_are_rendered_as_text_and_linked_to_the_queue(tmp_path):
    from rubriclang.audit.notes import save_note

    from .fixture import BAD_ITEM, MARK, SCRIPT

    folder = _audit_dir(tmp_path, make_report())
    save_note(str(folder), BAD_ITEM, f"Checked by hand {SCRIPT} {MARK}")
    save_note(str(folder), "not-in-the-queue", "Fine as it is.")
    assert main([str(folder)]) == 0
    page = (folder / "report.html").read_text(encoding="utf-8")
    dom = Dom(page)
    assert f"Checked by hand {SCRIPT} {MARK}" in dom.text and "Fine as it is." in dom.text
    assert not dom.tags() & {"script", "img"}
    assert "#review-notes" in dom.hrefs() and "review-notes" in dom.ids()
    assert {h[1:] for h in dom.hrefs()} <= set(dom.ids())  # the queued item's note links to it
    assert page == render_html(
        make_report(), {BAD_ITEM: f"Checked by hand {SCRIPT} {MARK}", "not-in-the-queue": "Fine as it is."}
    )


def test_without_notes_the_page_has_no_review_notes_section(tmp_path):
    folder = _audit_dir(tmp_path, make_report())
    assert main([str(folder)]) == 0
    assert "review-notes" not in Dom((folder / "report.html").read_text(encoding="utf-8")).ids()


def test_a_notes_file_that_is_not_one_is_an_error_saying_how_to_fix_it(tmp_path, capsys):
    folder = _audit_dir(tmp_path, make_report())
    (folder / "notes.json").write_text('{"schema": "else"}', encoding="utf-8")
    assert main([str(folder)]) == 2
    err = capsys.readouterr().err
    assert "is not a notes file" in err and "move it away" in err and "Traceback" not in err


def test_rbg_audit_rendering_again_keeps_the_review_notes(tmp_path):
    from rubriclang.audit.notes import save_note

    out = tmp_path / "audit"
    first = CliRunner().invoke(cli, ["audit", str(REPO / "examples" / "audit" / "gsm8k.toml"), "--out", str(out)])
    assert first.exit_code in (0, 1), first.output
    save_note(str(out), "gsm8k-0000-full", "A person looked: <b>fine</b>.")
    again = CliRunner().invoke(cli, ["audit", str(REPO / "examples" / "audit" / "gsm8k.toml"), "--out", str(out)])
    assert again.exit_code in (0, 1), again.output
    dom = Dom((out / "report.html").read_text(encoding="utf-8"))
    assert "A person looked: <b>fine</b>." in dom.text and "b" not in dom.tags()
