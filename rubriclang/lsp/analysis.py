"""One document, analysed: parsed, checked, and indexed by position.

Positions here are indices into the document's text (code points); the
`lines` index converts them to and from the parser's spans and the
protocol's positions.
"""

from __future__ import annotations

import attrs

from rubriclang.checker import CheckedGraph, check_parsed
from rubriclang.diagnostics import Diagnostic
from rubriclang.diagnostics.span import Span
from rubriclang.lsp.positions import UTF16, LineIndex
from rubriclang.lsp.scanner import Token, scan
from rubriclang.lsp.symbols import Occurrence, occurrences
from rubriclang.syntax import ast, parse

Range = tuple[int, int]  # [start, end) indices into the text


@attrs.frozen
class Analysis:
    """A document's text and everything derived from it. `module` is None
    when the text has syntax errors; `graph` is None when it has any error."""

    text: str
    path: str
    lines: LineIndex
    tokens: list[Token]
    module: ast.Module | None
    diagnostics: tuple[Diagnostic, ...]
    graph: CheckedGraph | None
    occurrences: tuple[Occurrence, ...]

    def range_of(self, span: Span) -> Range:
        """A parser span as text indices."""
        return self.lines.offset_of(span.line, span.column), self.lines.offset_of(span.end_line, span.end_column)

    def occurrence_at(self, offset: int) -> Occurrence | None:
        """The node name at `offset` (the cursor just after it counts)."""
        for occ in self.occurrences:
            start, end = self.range_of(occ.span)
            if start <= offset <= end:
                return occ
        return None

    def declaration(self, name: str) -> Occurrence | None:
        return next((o for o in self.occurrences if o.declaration and o.name == name), None)

    def declared(self, name: str) -> ast.CriterionDecl | ast.NodeDecl | None:
        """The first declaration of a node name."""
        if self.module is None:
            return None
        return next(
            (d for d in self.module.decls if isinstance(d, (ast.CriterionDecl, ast.NodeDecl)) and d.name.value == name),
            None,
        )


def analyse(text: str, path: str, encoding: str = UTF16) -> Analysis:
    """Parse, check and index a document. `encoding` is the protocol's
    position encoding, for `lines`."""
    parsed = parse(text, path)  # once: the checker and the index share it
    checked = check_parsed(parsed)
    return Analysis(
        text=text,
        path=path,
        lines=LineIndex(text, encoding),
        tokens=scan(text),
        module=parsed.module,
        diagnostics=checked.diagnostics,
        graph=checked.graph,
        occurrences=occurrences(parsed.module) if parsed.module else (),
    )
