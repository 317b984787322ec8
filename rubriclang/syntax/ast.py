"""The abstract syntax tree of a `.rbg` file.

Every node is a frozen attrs class with a `span`; spans (and purely
presentational details such as how a number or string was written) are kept
out of equality, so two files that differ only in layout compare equal.
"""

from __future__ import annotations

import attrs

from rubriclang.diagnostics.span import Span
from rubriclang.records import frozen

_span = attrs.field(eq=False, repr=False, kw_only=True, default=None)


@frozen
class Name:
    """An identifier as written, with where it was written."""

    value: str
    span: Span = _span


@frozen
class Dotted:
    """A dotted procedure or operator reference such as `reduce.mean`."""

    parts: tuple[str, ...]
    span: Span = _span

    @property
    def text(self) -> str:
        return ".".join(self.parts)


@frozen
class String:
    value: str
    # Whether it was written triple-quoted: kept for printing, not meaning.
    triple: bool = attrs.field(eq=False, default=False, kw_only=True)
    span: Span = _span


@frozen
class Number:
    value: int | float
    # The digits as written (`0.50`), so the formatter does not rewrite them.
    text: str = attrs.field(eq=False, default="", kw_only=True)
    span: Span = _span


@frozen
class Bool:
    value: bool
    span: Span = _span


@frozen
class Ident:
    """A bare identifier used as a value, e.g. `quantize = nearest`."""

    value: str
    span: Span = _span


@frozen
class ListValue:
    items: tuple[Value, ...]
    span: Span = _span


@frozen
class Entry:
    key: String | Number | Bool | Ident
    value: Value
    span: Span = _span


@frozen
class MapValue:
    entries: tuple[Entry, ...]
    span: Span = _span


@frozen
class Call:
    """A constructor applied to values, e.g. `pattern("\\[\\[(\\d+)\\]\\]")`: data
    for the checker, which knows each constructor by name."""

    name: Name
    args: tuple[Value, ...]
    span: Span = _span


@frozen
class TypeExpr:
    """`bool`, `ordinal[lo, hi]`, `score[lo, hi]` or `label{a, b}`, optionally `?`."""

    kind: str  # "bool" | "ordinal" | "score" | "label"
    lo: Number | None = None
    hi: Number | None = None
    labels: tuple[Name, ...] = ()
    optional: bool = False
    span: Span = _span


Value = String | Number | Bool | Ident | Call | ListValue | MapValue | TypeExpr


@frozen
class Param:
    name: Name
    value: Value
    span: Span = _span


@frozen
class Block:
    """A `{ name = value ... }` parameter block. An omitted block is empty."""

    params: tuple[Param, ...] = ()
    span: Span = _span


@frozen
class RubricDecl:
    name: Name
    block: Block
    span: Span = _span


@frozen
class ContractDecl:
    block: Block
    span: Span = _span


@frozen
class Each:
    """`each ELEMENT in FIELD`: a criterion judged once per element of a list field."""

    element: Name
    field: Name
    span: Span = _span


@frozen
class CriterionDecl:
    name: Name
    type: TypeExpr
    procedure: Dotted
    block: Block
    span: Span = _span
    each: Each | None = attrs.field(default=None, kw_only=True)


@frozen
class PortArg:
    """`port: ref` (a single slot) or `port: [a, b]` (ordered slots)."""

    name: Name
    refs: tuple[Name, ...]
    is_list: bool
    span: Span = _span


@frozen
class NodeDecl:
    name: Name
    operator: Dotted
    ports: tuple[PortArg, ...]
    block: Block
    span: Span = _span


@frozen
class SinkDecl:
    target: Name
    span: Span = _span


@frozen
class ReadoutDecl:
    mode: Name
    block: Block
    span: Span = _span


@frozen
class FieldType:
    """A declared field's type: `text`, `list[text]`, `json(schema = "s.json")`,
    `documents?`. `kind` and `element` are names as written (the checker knows
    them); `params` is the parenthesized block, None when not written."""

    kind: Name
    element: Name | None = None
    params: Block | None = None
    optional: bool = False
    span: Span = _span


@frozen
class FieldDecl:
    """`name: type` inside an `item { ... }` declaration."""

    name: Name
    type: FieldType
    span: Span = _span


@frozen
class ItemDecl:
    """`item { field: type ... }`: the shape of the items the rubric judges."""

    fields: tuple[FieldDecl, ...]
    span: Span = _span


@frozen
class GroupDecl:
    """`group NAME = [a, b, ...]`: LLM criteria one call per candidate answers together."""

    name: Name
    members: tuple[Name, ...]
    span: Span = _span


Decl = RubricDecl | ContractDecl | CriterionDecl | NodeDecl | SinkDecl | ReadoutDecl | ItemDecl | GroupDecl


@frozen
class Comment:
    """A `# ...` comment; `text` includes the leading `#`."""

    text: str
    span: Span = _span


@frozen
class Module:
    """A whole file: its declarations in source order, and its comments."""

    decls: tuple[Decl, ...]
    comments: tuple[Comment, ...] = attrs.field(eq=False, default=())
    path: str = attrs.field(eq=False, default="<input>")
