"""Lark parse tree -> AST: one builder method per grammar rule.

The tree is walked bottom-up with a plain dispatch table rather than Lark's
`Transformer`: the latter wraps every call, which costs a sixth of parse time.
String and number tokens become AST values where the walk meets them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from lark import Token, Tree
from lark.tree import Meta

from rubriclang.diagnostics import Diagnostic
from rubriclang.diagnostics.codes import make
from rubriclang.diagnostics.span import Span
from rubriclang.syntax import ast
from rubriclang.syntax.strings import BadEscape, decode

# How deeply lists and maps may nest. The parser has no limit, but what walks
# a value afterwards (the formatter, the checker, JSON Schema) recurses, and a
# limit checked here, once, keeps every one of them from Python's recursion
# limit. No rubric needs a fraction of it.
MAX_NESTING = 64

# A rule's children, already built (AST nodes, tokens, None for absent optionals).
_Children = list[Any]
_Decls = list[ast.Decl]


def _offset_position(text: str, line: int, column: int, offset: int) -> tuple[int, int]:
    before = text[:offset]
    newlines = before.count("\n")
    if newlines:
        return line + newlines, offset - before.rindex("\n")
    return line, column + offset


class AstBuilder:
    """Builds `ast` nodes; it is the only place that sees Lark trees and tokens."""

    def __init__(self, path: str):
        self.path = path
        # Bad escapes do not stop the build: every one is reported.
        self.diagnostics: list[Diagnostic] = []
        # id(list, map or entry) -> how many lists and maps it nests (its
        # height); values over MAX_NESTING not yet inside a deeper one.
        self._height: dict[int, int] = {}
        self._too_deep: dict[int, ast.Value] = {}

    def _span(self, meta: Meta) -> Span:
        return Span(self.path, meta.line, meta.column, meta.end_line, meta.end_column)

    def _tok_span(self, tok: Token) -> Span:
        # The lexer sets every position (Lark types them optional).
        assert tok.line is not None and tok.column is not None and tok.end_line is not None and tok.end_column is not None
        return Span(self.path, tok.line, tok.column, tok.end_line, tok.end_column)

    def _name(self, tok: Token) -> ast.Name:
        return ast.Name(str(tok), span=self._tok_span(tok))

    # -- declarations ---------------------------------------------------------

    def start(self, meta: Meta, children: _Children) -> _Decls:
        return list(children)

    def rubric_decl(self, meta: Meta, c: _Children) -> ast.RubricDecl:
        return ast.RubricDecl(self._name(c[0]), c[1], span=self._span(meta))

    def contract_decl(self, meta: Meta, c: _Children) -> ast.ContractDecl:
        return ast.ContractDecl(c[0], span=self._span(meta))

    def criterion_decl(self, meta: Meta, c: _Children) -> ast.CriterionDecl:
        name, type_, proc = c[0], c[1], c[2]
        block = c[3] if len(c) > 3 else ast.Block((), span=proc.span)
        return ast.CriterionDecl(self._name(name), type_, proc, block, span=self._span(meta))

    def node_decl(self, meta: Meta, c: _Children) -> ast.NodeDecl:
        name, op = c[0], c[1]
        rest = c[2:]
        block = ast.Block((), span=op.span)
        if rest and isinstance(rest[-1], ast.Block):
            block = rest[-1]
            rest = rest[:-1]
        ports = tuple(p for p in rest if p is not None)
        return ast.NodeDecl(self._name(name), op, ports, block, span=self._span(meta))

    def sink_decl(self, meta: Meta, c: _Children) -> ast.SinkDecl:
        return ast.SinkDecl(self._name(c[0]), span=self._span(meta))

    def readout_decl(self, meta: Meta, c: _Children) -> ast.ReadoutDecl:
        return ast.ReadoutDecl(self._name(c[0]), c[1], span=self._span(meta))

    def port(self, meta: Meta, c: _Children) -> ast.PortArg:
        name, target = c
        if isinstance(target, Token):
            return ast.PortArg(self._name(name), (self._name(target),), False, span=self._span(meta))
        return ast.PortArg(self._name(name), target, True, span=self._span(meta))

    def ref_list(self, meta: Meta, c: _Children) -> tuple[ast.Name, ...]:
        return tuple(self._name(t) for t in c if t is not None)

    def dotted(self, meta: Meta, c: _Children) -> ast.Dotted:
        return ast.Dotted(tuple(str(t) for t in c), span=self._span(meta))

    def block(self, meta: Meta, c: _Children) -> ast.Block:
        return ast.Block(tuple(c), span=self._span(meta))

    def param(self, meta: Meta, c: _Children) -> ast.Param:
        return ast.Param(self._name(c[0]), c[1], span=self._span(meta))

    # -- types ----------------------------------------------------------------

    def type(self, meta: Meta, c: _Children) -> ast.TypeExpr:
        base: ast.TypeExpr = c[0]
        if len(c) > 1:
            base = ast.TypeExpr(
                base.kind, base.lo, base.hi, base.labels, True, span=self._span(meta)
            )
        return base

    def bool_type(self, meta: Meta, c: _Children) -> ast.TypeExpr:
        return ast.TypeExpr("bool", span=self._span(meta))

    def ordinal_type(self, meta: Meta, c: _Children) -> ast.TypeExpr:
        return ast.TypeExpr("ordinal", c[1], c[2], span=self._span(meta))

    def score_type(self, meta: Meta, c: _Children) -> ast.TypeExpr:
        return ast.TypeExpr("score", c[1], c[2], span=self._span(meta))

    def label_type(self, meta: Meta, c: _Children) -> ast.TypeExpr:
        labels = tuple(self._name(t) for t in c[1:] if t is not None)
        return ast.TypeExpr("label", labels=labels, span=self._span(meta))

    # -- values ---------------------------------------------------------------

    # -- the walk -------------------------------------------------------------

    def build(self, tree: Tree[Token]) -> Any:
        """The AST of a parse tree (bottom-up, iterative: no recursion limit)."""
        rules = _RULES
        done: dict[int, object] = {}
        for sub in tree.iter_subtrees():
            children: _Children = []
            for c in sub.children:
                if isinstance(c, Tree):
                    children.append(done.pop(id(c)))
                elif c is not None and c.type in _LITERALS:
                    children.append(self.string(c) if c.type != "NUMBER" else self.number(c))
                else:
                    children.append(c)
            done[id(sub)] = rules[sub.data](self, sub.meta, children)
        for value in self._too_deep.values():
            s = value.span
            self.diagnostics.append(
                make(
                    "RB006",
                    Span(self.path, s.line, s.column, s.line, s.column + 1),
                    f"lists and maps nested {self._height[id(value)]} deep; at most {MAX_NESTING} levels are allowed",
                    ("flatten the value, or move the structure into the data it describes",),
                )
            )
        return done[id(tree)]

    def _nest(self, value: ast.Value, parts: Iterable[ast.Value | ast.Entry]) -> None:
        """Record the height of a list or map built of `parts`."""
        height = 1 + max((self._height.get(id(p), 0) for p in parts), default=0)
        self._height[id(value)] = height
        if height > MAX_NESTING:
            for p in parts:
                self._too_deep.pop(id(p), None)
            self._too_deep[id(value)] = value

    def string(self, tok: Token) -> ast.String:
        try:
            value, triple = decode(str(tok))
        except BadEscape as exc:
            assert tok.line is not None and tok.column is not None  # set by the lexer
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

    def number(self, tok: Token) -> ast.Number:
        text = str(tok)
        is_int = not any(ch in text for ch in ".eE")
        value = int(text) if is_int else float(text)
        return ast.Number(value, text=text, span=self._tok_span(tok))

    def true(self, meta: Meta, c: _Children) -> ast.Bool:
        return ast.Bool(True, span=self._span(meta))

    def false(self, meta: Meta, c: _Children) -> ast.Bool:
        return ast.Bool(False, span=self._span(meta))

    def ident(self, meta: Meta, c: _Children) -> ast.Ident:
        return ast.Ident(str(c[0]), span=self._span(meta))

    def call(self, meta: Meta, c: _Children) -> ast.Call:
        return ast.Call(self._name(c[0]), tuple(v for v in c[1:] if v is not None), span=self._span(meta))

    def list(self, meta: Meta, c: _Children) -> ast.ListValue:
        value = ast.ListValue(tuple(v for v in c if v is not None), span=self._span(meta))
        self._nest(value, value.items)
        return value

    def map(self, meta: Meta, c: _Children) -> ast.MapValue:
        value = ast.MapValue(tuple(e for e in c if e is not None), span=self._span(meta))
        self._nest(value, value.entries)
        return value

    def entry(self, meta: Meta, c: _Children) -> ast.Entry:
        entry = ast.Entry(c[0], c[1], span=self._span(meta))
        height = self._height.get(id(c[1]), 0)
        if height:
            self._height[id(entry)] = height
            if id(c[1]) in self._too_deep:
                self._too_deep[id(entry)] = self._too_deep.pop(id(c[1]))
        return entry


_LITERALS = frozenset({"STRING", "LONG_STRING", "NUMBER"})
_RULES: dict[str, Callable[[AstBuilder, Meta, _Children], Any]] = {
    name: fn
    for name, fn in vars(AstBuilder).items()
    if not name.startswith("_") and name not in ("build", "string", "number") and callable(fn)
}
