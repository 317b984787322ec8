"""Golden files: the comparison every golden test makes, and the golden text of
a list of diagnostics.

`RBG_UPDATE_GOLDENS=1 pytest tests` rewrites every golden from what the code
says now; review the diff like any other change. tests/test_goldens.py checks
that every file of a corpus is read by some test, so no golden goes stale unread.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

UPDATE = os.environ.get("RBG_UPDATE_GOLDENS") == "1"


def assert_golden(golden: Path, actual: str, name: str) -> None:
    """`actual` equals the text of `golden` (rewritten first under RBG_UPDATE_GOLDENS=1)."""
    if UPDATE:
        golden.write_text(actual, "utf-8")
    assert golden.exists(), f"no golden for {name}: run with RBG_UPDATE_GOLDENS=1"
    expected = golden.read_text("utf-8")
    if actual != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True), "golden", "actual"))
        pytest.fail(f"{name} differs from its golden:\n{diff}", pytrace=False)


def render_diagnostics(diagnostics) -> str:
    """The golden text for a list of diagnostics (independent of the CLI's renderers):
    one per line in source order, `LINE:COL-END_LINE:END_COL CODE SEVERITY MESSAGE`,
    then its notes."""
    lines = []
    for d in sorted(diagnostics, key=lambda d: (d.span.line, d.span.column, d.code, d.message)):
        s = d.span
        lines.append(f"{s.line}:{s.column}-{s.end_line}:{s.end_column} {d.code} {d.severity} {d.message}")
        lines.extend(f"  note: {n}" for n in d.notes)
    return "".join(line + "\n" for line in lines)
