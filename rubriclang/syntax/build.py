"""The AST, built inside the LALR parse: one method per grammar rule.

`AstBuilder` is the parsers' inline transformer (Lark's `transformer=`, and
`lalr.Parser`'s): a parser calls a rule's method with the rule's children as it
reduces it, so no parse tree is built and walked afterwards. Every token is kept
(`keep_all_tokens`), so each rule's children lie at fixed places, and a
rule's span runs from its first child's start to its last child's end,
keywords and brackets included: what Lark's `propagate_positions` computes
(no rule that builds a node can be empty). String and number tokens become
AST values in the rule that holds them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from rubriclang.diagnostics import Diagnostic
from rubriclang.diagnostics.codes import make
from rubriclang.diagnostics.span import Span
from rubriclang.syntax import ast
from rubriclang.syntax.lalr import Token
from rubriclang.syntax.strings import BadEscape, decode

# How deeply lists and maps may nest. The parser has no limit, but what walks
# a value afterwards (the formatter, the checker, JSON Schema) recurses, and a
# limit checked here, once, keeps every one of them from Python's recursion
# limit. No rubric needs a fraction of it.
MAX_NESTING = 64

# A rule's children: every token, built AST nodes, None for absent `[...]`.
# Tokens are `lalr.Token`s, or Lark's own where Lark's parser parsed the text:
# both are str with the same attributes, and nothing else among the children is a str.
# Tested with `_TOKEN`, untyped, so that mypy leaves a tested child of either kind `Any`.
_TOKEN: Any = str
_Children = list[Any]
_Decls = list[ast.Decl]
_LITERALS = frozenset({"STRING", "LONG_STRING", "NUMBER"})


def _offset_position(text: str, line: int, column: int, offset: int) -> tuple[int, int]:
    before = text[:offset]
    newlines = before.count("\n")
    if newlines:
        return line + newlines, offset - before.rindex("\n")
    return line, column + offset


class Build:
    """The state of one parse: the file's path, and what it reports."""

    def __init__(self, path: str):
        self.path = path
        # Bad escapes do not stop the build: every one is reported.
        self.diagnostics: list[Diagnostic] = []
        # id(list, map or entry) -> how many lists and maps it nests (its
        # height); values over MAX_NESTING not yet inside a deeper one.
        self.height: dict[int, int] = {}
        self.too_deep: dict[int, ast.Value] = {}

    def finish(self) -> list[Diagnostic]:
        """Every diagnostic of the build: bad escapes, then values nested too deep."""
        for value in self.too_deep.values():
            s = value.span
            self.diagnostics.append(
                make(
                    "RB006",
                    Span(self.path, s.line, s.column, s.line, s.column + 1),
                    f"lists and maps nested {self.height[id(value)]} deep; at most {MAX_NESTING} levels are allowed",
                    ("flatten the value, or move the structure into the data it describes",),
                )
            )
        return self.diagnostics


class _Current(threading.local):
    # The parsers (and so this transformer) are shared; a parse's state is its thread's.
    def __init__(self) -> None:
        self.build = Build("<input>")


def _span(path: str, first: Any, last: Any) -> Span:
    """From the start of `first` to the end of `last` (tokens or AST nodes)."""
    if isinstance(first, _TOKEN):
        line, column = first.line, first.column
    else:
        s = first.span
        line, column = s.line, s.column
    if isinstance(last, _TOKEN):
        return Span(path, line, column, last.end_line, last.end_column)
    s = last.span
    return Span(path, line, column, s.end_line, s.end_column)


def _tok_span(path: str, tok: Token) -> Span:
    return Span(path, tok.line, tok.column, tok.end_line, tok.end_column)


class AstBuilder:
    """Builds `ast` nodes; with the parsers, the only place that sees tokens."""

    def __init__(self) -> None:
        self._current = _Current()

    def begin(self, path: str) -> Build:
        """A fresh state for the next parse on this thread."""
        build = self._current.build = Build(path)
        return build

    def _name(self, path: str, tok: Token) -> ast.Name:
        return ast.Name(str(tok), span=_tok_span(path, tok))

    def _value(self, b: Build, v: Any) -> Any:
        """A value child: string and number tokens become AST values."""
        if isinstance(v, _TOKEN) and v.type in _LITERALS:
            return self._string(b, v) if v.type != "NUMBER" else self._number(b.path, v)
        return v

    # -- declarations ---------------------------------------------------------

    def start(self, c: _Children) -> _Decls:
        return c

    def rubric_decl(self, c: _Children) -> ast.RubricDecl:
        path = self._current.build.path
        return ast.RubricDecl(self._name(path, c[1]), c[2], span=_span(path, c[0], c[2]))

    def contract_decl(self, c: _Children) -> ast.ContractDecl:
        return ast.ContractDecl(c[1], span=_span(self._current.build.path, c[0], c[1]))

    def criterion_decl(self, c: _Children) -> ast.CriterionDecl:
        path = self._current.build.path
        proc = c[5]
        each = c[6] if len(c) > 6 and c[6].__class__ is ast.Each else None
        last = c[-1]
        block = last if last.__class__ is ast.Block else ast.Block((), span=proc.span)
        return ast.CriterionDecl(self._name(path, c[1]), c[3], proc, block, span=_span(path, c[0], last), each=each)

    def each(self, c: _Children) -> ast.Each:
        path = self._current.build.path
        return ast.Each(self._name(path, c[1]), self._name(path, c[3]), span=_span(path, c[0], c[3]))

    def node_decl(self, c: _Children) -> ast.NodeDecl:
        path = self._current.build.path
        op = c[3]
        last = c[-1]
        block = last if last.__class__ is ast.Block else ast.Block((), span=op.span)
        ports = tuple(p for p in c[5:] if p.__class__ is ast.PortArg)
        return ast.NodeDecl(self._name(path, c[1]), op, ports, block, span=_span(path, c[0], last))

    def sink_decl(self, c: _Children) -> ast.SinkDecl:
        path = self._current.build.path
        return ast.SinkDecl(self._name(path, c[1]), span=_span(path, c[0], c[1]))

    def readout_decl(self, c: _Children) -> ast.ReadoutDecl:
        path = self._current.build.path
        return ast.ReadoutDecl(self._name(path, c[1]), c[2], span=_span(path, c[0], c[2]))

    def group_decl(self, c: _Children) -> ast.GroupDecl:
        path = self._current.build.path
        members = tuple(self._name(path, t) for t in c[3][1:-1:2] if t is not None)
        return ast.GroupDecl(self._name(path, c[1]), members, span=_span(path, c[0], c[3][-1]))

    def item_decl(self, c: _Children) -> ast.ItemDecl:
        path = self._current.build.path
        fields = tuple(f for f in c[2:-1] if f.__class__ is ast.FieldDecl)
        return ast.ItemDecl(fields, span=_span(path, c[0], c[-1]))

    def field(self, c: _Children) -> ast.FieldDecl:
        path = self._current.build.path
        return ast.FieldDecl(self._name(path, c[0]), c[2], span=_span(path, c[0], c[2]))

    def field_type(self, c: _Children) -> ast.FieldType:
        # [kind, `[` element `]` or None, params or None, `?`]
        path = self._current.build.path
        last = next(x for x in reversed(c) if x is not None)
        element = None if c[1] is None else self._name(path, c[1][1])
        end = last[-1] if last is c[1] else last
        return ast.FieldType(self._name(path, c[0]), element, c[2], len(c) > 3, span=_span(path, c[0], end))

    def field_element(self, c: _Children) -> _Children:
        # Left to `field_type`, which needs its closing bracket for its span.
        return c

    def field_params(self, c: _Children) -> ast.Block:
        params = tuple(p for p in c[1:-1] if p.__class__ is ast.Param)
        return ast.Block(params, span=_span(self._current.build.path, c[0], c[-1]))

    def port(self, c: _Children) -> ast.PortArg:
        path = self._current.build.path
        name, target = c[0], c[2]
        if isinstance(target, _TOKEN):
            return ast.PortArg(
                self._name(path, name), (self._name(path, target),), False, span=_span(path, name, target)
            )
        refs = tuple(self._name(path, t) for t in target[1:-1:2] if t is not None)
        return ast.PortArg(self._name(path, name), refs, True, span=_span(path, name, target[-1]))

    def ref_list(self, c: _Children) -> _Children:
        # Left to `port`, which needs its closing bracket for its span.
        return c

    def dotted(self, c: _Children) -> ast.Dotted:
        return ast.Dotted(tuple(str(t) for t in c[::2]), span=_span(self._current.build.path, c[0], c[-1]))

    def block(self, c: _Children) -> ast.Block:
        params = tuple(p for p in c[1:-1] if p.__class__ is ast.Param)
        return ast.Block(params, span=_span(self._current.build.path, c[0], c[-1]))

    def param(self, c: _Children) -> ast.Param:
        b = self._current.build
        return ast.Param(self._name(b.path, c[0]), self._value(b, c[2]), span=_span(b.path, c[0], c[2]))

    # -- types ----------------------------------------------------------------

    def type(self, c: _Children) -> ast.TypeExpr:
        base: ast.TypeExpr = c[0]
        if len(c) > 1:
            base = ast.TypeExpr(
                base.kind, base.lo, base.hi, base.labels, True, span=_span(self._current.build.path, base, c[1])
            )
        return base

    def bool_type(self, c: _Children) -> ast.TypeExpr:
        return ast.TypeExpr("bool", span=_tok_span(self._current.build.path, c[0]))

    def ordinal_type(self, c: _Children) -> ast.TypeExpr:
        path = self._current.build.path
        return ast.TypeExpr(
            "ordinal", self._number(path, c[2]), self._number(path, c[4]), span=_span(path, c[0], c[-1])
        )

    def score_type(self, c: _Children) -> ast.TypeExpr:
        path = self._current.build.path
        return ast.TypeExpr("score", self._number(path, c[2]), self._number(path, c[4]), span=_span(path, c[0], c[-1]))

    def label_type(self, c: _Children) -> ast.TypeExpr:
        path = self._current.build.path
        labels = tuple(self._name(path, t) for t in c[2:-1:2] if t is not None)
        return ast.TypeExpr("label", labels=labels, span=_span(path, c[0], c[-1]))

    # -- values ---------------------------------------------------------------

    def _nest(self, b: Build, value: ast.Value, parts: Iterable[ast.Value | ast.Entry]) -> None:
        """Record the height of a list or map built of `parts`."""
        height = 1 + max((b.height.get(id(p), 0) for p in parts), default=0)
        b.height[id(value)] = height
        if height > MAX_NESTING:
            for p in parts:
                b.too_deep.pop(id(p), None)
            b.too_deep[id(value)] = value

    def _string(self, b: Build, tok: Token) -> ast.String:
        try:
            value, triple = decode(str(tok))
        except BadEscape as exc:
            line, col = _offset_position(str(tok), tok.line, tok.column, exc.offset)
            span = Span(b.path, line, col, line, col + len(exc.sequence))
            if exc.sequence == "\\u":
                message = "`\\u` in a string must be followed by four hex digits, e.g. `\\u00e9`"
            else:
                message = f"unknown escape sequence `{exc.sequence}` in a string"
            b.diagnostics.append(
                make(
                    "RB004",
                    span,
                    message,
                    ('known escapes: \\n \\t \\r \\" \\\\ \\0 \\uXXXX; write `\\\\` for a backslash',),
                )
            )
            value, triple = str(tok), False
        return ast.String(value, triple=triple, span=_tok_span(b.path, tok))

    def _number(self, path: str, tok: Token) -> ast.Number:
        text = str(tok)
        is_int = "." not in text and "e" not in text and "E" not in text
        try:
            value = int(text) if is_int else float(text)
        except ValueError:  # over Python's 4300 digits for an int: infinite as a float, which the checker refuses
            value = float(text)
        return ast.Number(value, text=text, span=_tok_span(path, tok))

    def true(self, c: _Children) -> ast.Bool:
        return ast.Bool(True, span=_tok_span(self._current.build.path, c[0]))

    def false(self, c: _Children) -> ast.Bool:
        return ast.Bool(False, span=_tok_span(self._current.build.path, c[0]))

    def ident(self, c: _Children) -> ast.Ident:
        return ast.Ident(str(c[0]), span=_tok_span(self._current.build.path, c[0]))

    def call(self, c: _Children) -> ast.Call:
        b = self._current.build
        args = tuple(self._value(b, v) for v in c[2:-1:2] if v is not None)
        return ast.Call(self._name(b.path, c[0]), args, span=_span(b.path, c[0], c[-1]))

    def list(self, c: _Children) -> ast.ListValue:
        b = self._current.build
        value = ast.ListValue(
            tuple(self._value(b, v) for v in c[1:-1:2] if v is not None), span=_span(b.path, c[0], c[-1])
        )
        self._nest(b, value, value.items)
        return value

    def map(self, c: _Children) -> ast.MapValue:
        b = self._current.build
        value = ast.MapValue(tuple(e for e in c[1:-1:2] if e is not None), span=_span(b.path, c[0], c[-1]))
        self._nest(b, value, value.entries)
        return value

    def entry(self, c: _Children) -> ast.Entry:
        b = self._current.build
        value = self._value(b, c[2])
        entry = ast.Entry(self._value(b, c[0]), value, span=_span(b.path, c[0], c[2]))
        height = b.height.get(id(value), 0)
        if height:
            b.height[id(entry)] = height
            if id(value) in b.too_deep:
                b.too_deep[id(entry)] = b.too_deep.pop(id(value))
        return entry
