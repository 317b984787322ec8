"""AST -> layout tree, with the source positions comments are placed by.

This is where the canonical spelling of every construct lives: `name = value`,
`name: type`, `score[1, 5]`, `label{a, b}`, `{ a = 1 }`, `[a, b]`,
`{ 1: "x" }`.
"""

from __future__ import annotations

from rubriclang.diagnostics.span import Span
from rubriclang.fmt.layout import Group, Item, LongString, Part
from rubriclang.fmt.source import SourceMap
from rubriclang.syntax import ast
from rubriclang.syntax.strings import quote, quote_long


def long_literal(value: str, indent: str) -> str | None:
    """The triple-quoted literal for `value` with its lines at `indent`, or
    None when it cannot be written that way cleanly: it is empty, it would not
    round-trip, or it would leave control characters or trailing whitespace in
    the file."""
    if not value or any(ord(ch) < 32 and ch not in "\n\t" for ch in value):
        return None
    literal = quote_long(value, indent)
    if literal is None or any(line != line.rstrip() for line in literal.split("\n")):
        return None
    return literal


class LayoutBuilder:
    """Builds the layout tree of a module; one instance per module."""

    def __init__(self, src: SourceMap):
        self.src = src

    def module(self, module: ast.Module) -> Group:
        items = tuple(self._decl(d) for d in module.decls)
        return _group("", "", items, (None, None), padded=False, commas=False, keeps_blanks=True)

    # -- declarations ---------------------------------------------------------

    def _decl(self, d: ast.Decl) -> Item:
        parts: list[Part]
        blank_after = False
        if isinstance(d, ast.RubricDecl):
            parts = [f"rubric {d.name.value} ", self._block(d.block)]
            blank_after = True
        elif isinstance(d, ast.ContractDecl):
            parts = ["contract ", self._block(d.block)]
            blank_after = True
        elif isinstance(d, ast.CriterionDecl):
            parts = [f"criterion {d.name.value}: ", *self._type(d.type)]
            parts.append(f" = {d.procedure.text}")
            if d.each is not None:
                parts.append(f" each {d.each.element.value} in {d.each.field.value}")
            parts += self._optional_block(d.block, d.procedure.span)
        elif isinstance(d, ast.NodeDecl):
            parts = [f"node {d.name.value} = {d.operator.text}", self._ports(d)]
            parts += self._optional_block(d.block, d.operator.span)
        elif isinstance(d, ast.SinkDecl):
            parts = [f"sink {d.target.value}"]
        elif isinstance(d, ast.GroupDecl):
            parts = [f"group {d.name.value} = ", self._members(d)]
        elif isinstance(d, ast.ItemDecl):
            open_at, close_at = self._brackets(d.span)
            open_at = self.src.next_code(None if open_at is None else open_at + len("item"))
            fields = tuple(self._item([f"{f.name.value}: ", *self._field_type(f.type)], f.span) for f in d.fields)
            parts = [
                "item ",
                _group("{", "}", fields, (open_at, close_at), padded=True, commas=False, keeps_blanks=True),
            ]
            blank_after = True
        else:
            parts = [f"readout {d.mode.value} ", self._block(d.block)]
        return self._item(parts, d.span, blank_after=blank_after)

    def _item(self, parts: list[Part], span: Span | None, blank_after: bool = False) -> Item:
        merged: list[Part] = []
        for p in parts:
            if isinstance(p, str) and merged and isinstance(merged[-1], str):
                merged[-1] += p
            else:
                merged.append(p)
        return Item(
            tuple(merged),
            self.src.start(span),
            self.src.end(span),
            None if span is None else span.line,
            None if span is None else span.end_line,
            blank_after,
        )

    def _optional_block(self, block: ast.Block, head_span: Span | None) -> list[Part]:
        # An omitted block gets the procedure's span; an empty `{}` is dropped
        # too, unless there is a comment inside it to keep.
        written = block.span is not None and block.span != head_span
        open_at, close_at = self._brackets(block.span)
        if block.params or (written and self.src.has_note_inside(open_at, close_at)):
            return [" ", self._block(block)]
        return []

    def _block(self, block: ast.Block) -> Group:
        open_at, close_at = self._brackets(block.span)
        items = tuple(self._item([f"{p.name.value} = ", *self._value(p.value)], p.span) for p in block.params)
        return _group("{", "}", items, (open_at, close_at), padded=True, commas=False, keeps_blanks=True)

    def _brackets(self, span: Span | None) -> tuple[int | None, int | None]:
        """Offsets of the brackets of a construct whose span starts and ends with them."""
        end = self.src.end(span)
        return self.src.start(span), None if end is None else end - 1

    def _ports(self, d: ast.NodeDecl) -> Group:
        open_at = self.src.next_code(self.src.end(d.operator.span))
        items = tuple(self._port(p) for p in d.ports)
        last = items[-1].end if items else (None if open_at is None else open_at + 1)
        close_at = self.src.next_code(last)
        return _group("(", ")", items, (open_at, close_at))

    def _port(self, p: ast.PortArg) -> Item:
        if not p.is_list:
            return self._item([f"{p.name.value}: {p.refs[0].value}"], p.span)
        colon = self.src.next_code(self.src.end(p.name.span))
        open_at = self.src.next_code(None if colon is None else colon + 1)
        close_at = self._brackets(p.span)[1]
        refs = tuple(self._item([r.value], r.span) for r in p.refs)
        group = _group("[", "]", refs, (open_at, close_at))
        return self._item([f"{p.name.value}: ", group], p.span)

    def _members(self, d: ast.GroupDecl) -> Group:
        equals = self.src.next_code(self.src.end(d.name.span))
        open_at = self.src.next_code(None if equals is None else equals + 1)
        members = tuple(self._item([m.value], m.span) for m in d.members)
        return _group("[", "]", members, (open_at, self._brackets(d.span)[1]))

    # -- types and values -----------------------------------------------------

    def _type(self, t: ast.TypeExpr) -> list[Part]:
        parts: list[Part]
        if t.kind == "label":
            start = self.src.start(t.span)
            open_at = self.src.next_code(None if start is None else start + len("label"))
            labels = tuple(self._item([n.value], n.span) for n in t.labels)
            last = labels[-1].end if labels else (None if open_at is None else open_at + 1)
            close_at = self.src.next_code(last)
            parts = ["label", _group("{", "}", labels, (open_at, close_at))]
        elif t.kind == "bool":
            parts = ["bool"]
        else:
            parts = [f"{t.kind}[{_number(t.lo)}, {_number(t.hi)}]"]
        if t.optional:
            parts.append("?")
        return parts

    def _field_type(self, t: ast.FieldType) -> list[Part]:
        parts: list[Part] = [t.kind.value]
        if t.element is not None:
            parts.append(f"[{t.element.value}]")
        if t.params is not None:
            params = tuple(self._item([f"{p.name.value} = ", *self._value(p.value)], p.span) for p in t.params.params)
            parts.append(_group("(", ")", params, self._brackets(t.params.span)))
        if t.optional:
            parts.append("?")
        return parts

    def _value(self, v: ast.Value) -> list[Part]:
        if isinstance(v, ast.String):
            if v.triple and long_literal(v.value, "  ") is not None:
                return [LongString(v.value)]
            return [quote(v.value)]
        if isinstance(v, ast.Number):
            return [_number(v)]
        if isinstance(v, ast.Bool):
            return ["true" if v.value else "false"]
        if isinstance(v, ast.Ident):
            return [v.value]
        if isinstance(v, ast.TypeExpr):
            return self._type(v)
        if isinstance(v, ast.Call):
            open_at = self.src.next_code(self.src.end(v.name.span))
            args = tuple(self._item(self._value(x), x.span) for x in v.args)
            return [v.name.value, _group("(", ")", args, (open_at, self._brackets(v.span)[1]))]
        if isinstance(v, ast.ListValue):
            items = tuple(self._item(self._value(x), x.span) for x in v.items)
            return [_group("[", "]", items, self._brackets(v.span))]
        entries = tuple(self._item([*self._value(e.key), ": ", *self._value(e.value)], e.span) for e in v.entries)
        return [_group("{", "}", entries, self._brackets(v.span), padded=True)]


def _group(
    open_: str,
    close: str,
    items: tuple[Item, ...],
    brackets: tuple[int | None, int | None],
    *,
    padded: bool = False,
    commas: bool = True,
    keeps_blanks: bool = False,
) -> Group:
    return Group(open_, close, padded, commas, keeps_blanks, items, *brackets)


def _number(n: ast.Number | None) -> str:
    # Numbers keep the digits they were written with; a number built in code
    # (no text) prints as Python would.
    assert n is not None, "ordinal and score types always have bounds"
    return n.text or repr(n.value)
