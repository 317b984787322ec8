"""Choosing which warnings to show: `--select`, `--ignore`, and inline
`# rbg: ignore[CODE, ...]` comments. Errors are never suppressed."""

from __future__ import annotations

import re
from collections.abc import Iterable

from rubriclang.diagnostics import Diagnostic
from rubriclang.syntax import ast

_IGNORE = re.compile(r"#\s*rbg:\s*ignore\[([A-Za-z0-9_,\s]+)\]")


def inline_ignores(module: ast.Module, source: str) -> dict[int, set[str]]:
    """Line -> codes ignored there. A comment covers its own line; a comment on a
    line of its own also covers the next line."""
    lines: list[str] | None = None  # split only for a file with such a comment
    out: dict[int, set[str]] = {}
    for c in module.comments:
        m = _IGNORE.search(c.text)
        if not m:
            continue
        if lines is None:
            lines = source.split("\n")
        codes = {x.strip().upper() for x in m.group(1).split(",") if x.strip()}
        out.setdefault(c.span.line, set()).update(codes)
        line_text = lines[c.span.line - 1] if c.span.line - 1 < len(lines) else ""
        if not line_text[: c.span.column - 1].strip():
            out.setdefault(c.span.line + 1, set()).update(codes)
    return out


def _matches(code: str, patterns: Iterable[str]) -> bool:
    return any(code.startswith(p.upper()) for p in patterns)


def filter_warnings(
    diagnostics: Iterable[Diagnostic],
    *,
    select: Iterable[str] = (),
    ignore: Iterable[str] = (),
    ignores_by_line: dict[int, set[str]] | None = None,
) -> list[Diagnostic]:
    """Drop warnings not selected, ignored by code (or code prefix such as
    `RB5`), or ignored inline."""
    out = []
    for d in diagnostics:
        if not d.is_error:
            if select and not _matches(d.code, select):
                continue
            if ignore and _matches(d.code, ignore):
                continue
            if ignores_by_line and d.code in ignores_by_line.get(d.span.line, ()):
                continue
        out.append(d)
    return out
