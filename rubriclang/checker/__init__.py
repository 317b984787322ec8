"""The checker: AST -> checked graph + diagnostics."""

from collections.abc import Iterable

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
    "check_source",
]


def check_source(text: str, path: str = "<input>", *, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> CheckResult:
    """Parse and check source text; warnings filtered by `select`/`ignore` and
    inline `# rbg: ignore[...]` comments. Returns a CheckResult."""
    from rubriclang.checker.suppress import filter_warnings, inline_ignores
    from rubriclang.syntax import parse

    parsed = parse(text, path)
    if parsed.module is None:
        return CheckResult(None, parsed.diagnostics)
    result = check(parsed.module)
    kept = filter_warnings(
        result.diagnostics,
        select=select,
        ignore=ignore,
        ignores_by_line=inline_ignores(parsed.module, parsed.source),
    )
    return CheckResult(result.graph, tuple(kept), result.sources)
