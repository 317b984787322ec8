"""`DIR/report.json` (and `DIR/notes.json`) -> `DIR/report.html`, for the
audit, the viewer and `python -m rubriclang.audit.html DIR`."""

from __future__ import annotations

import json
import os
from importlib import resources

import jsonschema

from rubriclang.audit.html.page import render_html
from rubriclang.audit.notes import NotesError, read_notes
from rubriclang.safeio import open_regular, write_atomic

# Reports of schema /1 (before failures, baselines and directional measures
# were reported) still render: the page shows what they hold.
SCHEMAS = ("rubriclang.audit.report/1", "rubriclang.audit.report/2", "rubriclang.audit.report/3")


class ReportError(Exception):
    """A report that cannot be rendered: missing, not JSON, or not of a
    schema of `SCHEMAS`."""


def _schema() -> dict | None:
    path = resources.files("rubriclang.audit").joinpath("report.schema.json")
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def load_report(path: str) -> dict:
    """The report at `path`, checked against the report schema."""
    try:
        with open_regular(path, "r", encoding="utf-8") as fh:
            report = json.load(fh)
    except FileNotFoundError:
        raise ReportError(f"`{path}` does not exist; run `rbg audit SUITE --out DIR` first") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(f"`{path}` cannot be read as JSON: {exc}") from None
    if not isinstance(report, dict) or report.get("schema") not in SCHEMAS:
        raise ReportError(f"`{path}` is not an audit report (schema `{SCHEMAS[-1]}`)")
    schema = _schema()
    if schema is not None:
        error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(report))
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "the top level"
            raise ReportError(f"`{path}` does not match the report schema at {where}: {error.message}")
    return report


def render_folder(folder: str, report: dict) -> str:
    """The page of the audit in `folder`: `report` with the folder's review
    notes (`notes.json`, typed in `rbg view`), so a re-render keeps them."""
    try:
        notes = read_notes(folder)
    except NotesError as exc:
        raise ReportError(str(exc)) from None
    return render_html(report, notes)


def write_html(folder: str) -> str:
    """Render `folder/report.json` (and `folder/notes.json`, when there is
    one) into `folder/report.html`; the path written."""
    report = load_report(os.path.join(folder, "report.json"))
    out = os.path.join(folder, "report.html")
    page = render_folder(folder, report)
    try:
        write_atomic(out, page)
    except OSError as exc:
        raise ReportError(f"`{out}` cannot be written: {exc.strerror or exc}") from None
    return out
