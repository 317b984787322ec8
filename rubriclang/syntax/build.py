"""Lark parse tree -> AST: one transformer method per grammar rule."""

from __future__ import annotations

from lark import Token, Transformer, v_args

from rubriclang.diagnostics.codes import make
from rubriclang.diagnostics.span import Span
from rubriclang.syntax import ast
from rubriclang.syntax.strings import BadEscape, decode


def _offset_position(text: str, line: int, column: int, offset: int) -> tuple[int, int]:
    before = text[:offset]
    newlines = before.count("\n")
    if newlines:
        return line + newlines, offset - before.rindex("\n")
    return line, column + offset


@v_args(meta=True)
class AstBuilder(Transformer):
    """Builds `ast` nodes; it is the only place that sees Lark trees and tokens."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path
        # Bad escapes do not stop the build: every one is reported.
        self.diagnostics: list = []

    def _span(self, meta) -> Span:
        return Span(self.path, meta.line, meta.column, meta.end_line, meta.end_column)

    def _tok_span(self, tok: Token) -> Span:
        return Span(self.path, tok.line, tok.column, tok.end_line, tok.end_column)

    def _name(self, tok: Token) -> ast.Name:
        return ast.Name(str(tok), span=self._tok_span(tok))

    # -- declarations ---------------------------------------------------------

    def start(self, meta, children):
        return list(children)

    def rubric_decl(self, meta, c):
        return ast.RubricDecl(self._name(c[0]), c[1], span=self._span(meta))

    def contract_decl(self, meta, c):
        return ast.ContractDecl(c[0], span=self._span(meta))

    def criterion_decl(self, meta, c):
        name, type_, proc = c[0], c[1], c[2]
        block = c[3] if len(c) > 3 else ast.Block((), span=proc.span)
        return ast.CriterionDecl(self._name(name), type_, proc, block, span=self._span(meta))

    def node_decl(self, meta, c):
        name, op = c[0], c[1]
        rest = c[2:]
        block = ast.Block((), span=op.span)
        if rest and isinstance(rest[-1], ast.Block):
            block = rest[-1]
            rest = rest[:-1]
        ports = tuple(p for p in rest if p is not None)
        return ast.NodeDecl(self._name(name), op, ports, block, span=self._span(meta))

    def sink_decl(self, meta, c):
        return ast.SinkDecl(self._name(c[0]), span=self._span(meta))

    def readout_decl(self, meta, c):
        return ast.ReadoutDecl(self._name(c[0]), c[1], span=self._span(meta))

    def port(self, meta, c):
        name, target = c
        if isinstance(target, ast.Name):
            return ast.PortArg(self._name(name), (target,), False, span=self._span(meta))
        return ast.PortArg(self._name(name), target, True, span=self._span(meta))

    def ref(self, meta, c):
        return self._name(c[0])

    def ref_list(self, meta, c):
        return tuple(r for r in c if r is not None)

    def dotted(self, meta, c):
        return ast.Dotted(tuple(str(t) for t in c), span=self._span(meta))

    def block(self, meta, c):
        return ast.Block(tuple(c), span=self._span(meta))

    def param(self, meta, c):
        return ast.Param(self._name(c[0]), c[1], span=self._span(meta))

    # -- types ----------------------------------------------------------------

    def type(self, meta, c):
        base = c[0]
        if len(c) > 1:
            base = ast.TypeExpr(
                base.kind, base.lo, base.hi, base.labels, True, span=self._span(meta)
            )
        return base

    def bool_type(self, meta, c):
        return ast.TypeExpr("bool", span=self._span(meta))

    def ordinal_type(self, meta, c):
        return ast.TypeExpr("ordinal", c[1], c[2], span=self._span(meta))

    def score_type(self, meta, c):
        return ast.TypeExpr("score", c[1], c[2], span=self._span(meta))

    def label_type(self, meta, c):
        labels = tuple(self._name(t) for t in c[1:] if t is not None)
        return ast.TypeExpr("label", labels=labels, span=self._span(meta))

    # -- values ---------------------------------------------------------------

    def string(self, meta, c):
        tok = c[0]
        try:
            value, triple = decode(str(tok))
        except BadEscape as exc:
            line, col = _offset_position(str(tok), tok.line, tok.column, exc.offset)
            span = Span(self.path, line, col, line, col + len(exc.sequence))
            if exc.sequence == "\\u":
                message = "`\\u` in a string must be followed by four hex digits, e.g. `\\u00e9`"
            else:
                message = f"unknown escape sequence `{exc.sequence}` in a string"
            self.diagnostics.append(
                make(
                    "RB004",
                    span,
                    message,
                    ('known escapes: \\n \\t \\r \\" \\\\ \\0 \\uXXXX; write `\\\\` for a backslash',),
                )
            )
            value, triple = str(tok), False
        return ast.String(value, triple=triple, span=self._tok_span(tok))

    def number(self, meta, c):
        text = str(c[0])
        is_int = not any(ch in text for ch in ".eE")
        value = int(text) if is_int else float(text)
        return ast.Number(value, text=text, span=self._tok_span(c[0]))

    def true(self, meta, c):
        return ast.Bool(True, span=self._span(meta))

    def false(self, meta, c):
        return ast.Bool(False, span=self._span(meta))

    def ident(self, meta, c):
        return ast.Ident(str(c[0]), span=self._span(meta))

    def list(self, meta, c):
        return ast.ListValue(tuple(v for v in c if v is not None), span=self._span(meta))

    def map(self, meta, c):
        return ast.MapValue(tuple(e for e in c if e is not None), span=self._span(meta))

    def entry(self, meta, c):
        return ast.Entry(c[0], c[1], span=self._span(meta))
