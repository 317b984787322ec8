"""The checker: AST -> checked graph + diagnostics."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rubriclang.checker.check import CheckResult, check
from rubriclang.checker.graph import (
    CheckedGraph,
    Criterion,
    Operator,
    PairwiseReadout,
    PointwiseReadout,
)

__all__ = [
    "CheckResult",
    "CheckedGraph",
    "Criterion",
    "Operator",
    "PairwiseReadout",
    "PointwiseReadout",
    "check",
    "check_parsed",
    "check_source",
]

if TYPE_CHECKING:
    from rubriclang.syntax.parser import ParseResult


def check_source(
    text: str, path: str = "<input>", *, select: Iterable[str] = (), ignore: Iterable[str] = ()
) -> CheckResult:
    """Parse and check source text; warnings filtered by `select`/`ignore` and
    inline `# rbg: ignore[...]` comments. Returns a CheckResult."""
    from rubriclang.syntax import parse

    return check_parsed(parse(text, path), select=select, ignore=ignore)


def check_parsed(parsed: ParseResult, *, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> CheckResult:
    """Check an already parsed text (a `syntax.ParseResult`), for callers that
    also need the parse itself (the language server); as `check_source`."""
    from rubriclang.checker.suppress import filter_warnings, inline_ignores

    if parsed.module is None:
        return CheckResult(None, parsed.diagnostics)
    result = check(parsed.module)
    if all(d.is_error for d in result.diagnostics):
        return result  # no warning to filter (errors are never suppressed): the comments need no scan
    kept = filter_warnings(
        result.diagnostics,
        select=select,
        ignore=ignore,
        ignores_by_line=inline_ignores(parsed.module, parsed.source),
    )
    return CheckResult(result.graph, tuple(kept), result.sources)
