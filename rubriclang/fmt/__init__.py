"""The `.rbg` formatter: one canonical layout, no options (in the manner of black).

It keeps every comment, never changes the AST, and is idempotent. It needs a
file that parses; checker errors (unknown operators and the like) are no
obstacle.
"""

from __future__ import annotations

import attrs

from rubriclang.diagnostics import Diagnostic
from rubriclang.fmt.build import LayoutBuilder
from rubriclang.fmt.comments import attach
from rubriclang.fmt.render import Renderer
from rubriclang.fmt.source import SourceMap
from rubriclang.syntax import ast, parse

__all__ = ["FormatResult", "format_module", "format_source"]


@attrs.frozen
class FormatResult:
    """The canonical text, or None with the syntax diagnostics that prevent it."""

    output: str | None
    diagnostics: tuple[Diagnostic, ...]
    original: str = attrs.field(default="", repr=False, kw_only=True)

    @property
    def changed(self) -> bool:
        """Whether formatting changed the text."""
        return self.output is not None and self.output != self.original


def format_source(text: str, path: str = "<input>") -> FormatResult:
    """Format `.rbg` source; a file with syntax errors is refused, not guessed at."""
    parsed = parse(text, path)
    if parsed.module is None:
        return FormatResult(None, parsed.diagnostics, original=text)
    return FormatResult(format_module(parsed.module, parsed.source), (), original=text)


def format_module(module: ast.Module, source: str) -> str:
    """The canonical text of a parsed module; `source` is the text it was parsed
    from (for its comments and blank lines). A module built in code, without
    spans, has no comments and may pass `""`."""
    src = SourceMap(source, module.comments)
    root = LayoutBuilder(src).module(module)
    attach(root, src.notes)
    return Renderer(src).module(root)
