"""Completion: what may be typed at the cursor, from the catalog and the
names the file declares."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from rubriclang.catalog import Catalog
from rubriclang.items.elements import ELEMENTS
from rubriclang.items.shape import BUILTIN, KINDS, LIST_ELEMENTS
from rubriclang.lsp import context as ctx
from rubriclang.lsp.catalog_info import (
    block_params,
    operator_markdown,
    param_detail,
    param_markdown,
    procedure_markdown,
)
from rubriclang.lsp.words import words

# A field's kind as written in `item { }`: `list` only as `list[text]`.
_KIND_TEXT = {"list": f"list[{LIST_ELEMENTS[0]}]"}


@attrs.frozen
class Item:
    """A completion. `kind` is keyword, operator, procedure, port, node,
    param, value, element or field; `insert` is the text to insert (the label when empty)."""

    label: str
    kind: str
    detail: str = ""
    documentation: str = ""
    insert: str = ""


@attrs.frozen
class Completions:
    """The items, and where the text they replace starts (it ends at the cursor)."""

    start: int
    items: tuple[Item, ...]


def complete(text: str, offset: int, catalog: Catalog, details: Mapping[str, str] = {}) -> Completions:
    """Completions at `offset`. `details` gives a line about a node name
    (e.g. its type), where one is known."""
    c = ctx.completion_context(text, offset)
    return Completions(c.start, tuple(_items(c, text, catalog, details)))


def _items(c: ctx.Context, text: str, catalog: Catalog, details: Mapping[str, str]) -> list[Item]:
    if c.kind in (ctx.KEYWORD, ctx.AFTER_PROCEDURE):
        each = [Item("each", "keyword", "judge per element: each ELEMENT in FIELD", insert="each ")]
        return (each if c.kind == ctx.AFTER_PROCEDURE else []) + [
            Item(k, "keyword", insert=k + " ") for k in words().declarations
        ]
    if c.kind == ctx.ELEMENT:
        return [
            Item(element, "element", f"an element of a `{_KIND_TEXT.get(kind, kind)}` field", insert=element + " ")
            for kind, elements in ELEMENTS.items()
            for element in elements
        ]
    if c.kind == ctx.EACH_IN:
        return [Item("in", "keyword", insert="in ")]
    if c.kind == ctx.ITEM_FIELD:
        return [
            Item(name, "field", _KIND_TEXT.get(kind, kind))
            for name, kind in ctx.declared_fields(text)
            if c.element in ELEMENTS.get(kind, ()) or (c.element not in _ALL_ELEMENTS and kind in ELEMENTS)
        ]
    if c.decl == "item" and c.kind == ctx.PARAM:
        builtin = [(name, kinds) for name, kinds in BUILTIN.items() if name not in c.used]
        return [Item(name, "field", " | ".join(kinds), insert=name + ": ") for name, kinds in builtin]
    if c.decl == "item" and c.kind == ctx.VALUE:
        kinds = BUILTIN.get(c.param or "", KINDS)
        return [Item(_KIND_TEXT.get(k, k), "value", f"{c.param}: a field kind") for k in kinds]
    if c.kind == ctx.OPERATOR:
        return [
            Item(op.name, "operator", f"{op.kind}: {op.summary}", operator_markdown(op))
            for op in catalog.operators.values()
            if _in_namespace(op.name, c.prefix)
        ]
    if c.kind == ctx.PROCEDURE:
        return [
            Item(p.name, "procedure", p.summary, procedure_markdown(p, catalog))
            for p in catalog.procedures.values()
            if _in_namespace(p.name, c.prefix)
        ]
    if c.kind == ctx.PORT:
        op = catalog.operators.get(c.head or "")
        ports = op.ports if op else ()
        return [
            Item(p.name, "port", p.signature(), f"Takes {p.arity_text()}.", p.name + ": ")
            for p in ports
            if p.name not in c.used
        ]
    if c.kind == ctx.NODE:
        return [
            Item(name, "node", details.get(name, keyword))
            for name, keyword in dict(ctx.declared_names(text)).items()
            if name != c.own_name  # a node cannot read itself
        ]
    if c.kind == ctx.PARAM:
        return [
            Item(p.name, "param", param_detail(p), param_markdown(p), p.name + " = ")
            for p in block_params(catalog, c.decl, c.head)
            if p.name not in c.used
        ]
    if c.kind == ctx.VALUE:
        spec = next((p for p in block_params(catalog, c.decl, c.head) if p.name == c.param), None)
        if spec is None:
            return []
        choices = spec.choices or (("true", "false") if spec.type == "boolean" else ())
        return [Item(choice, "value", f"{spec.name}: {spec.type_text()}") for choice in choices]
    return []


_ALL_ELEMENTS = frozenset(e for elements in ELEMENTS.values() for e in elements)


def _in_namespace(name: str, prefix: str) -> bool:
    """Whether `name` is in the namespace being typed: after `transform.`,
    only `transform.*` names."""
    namespace = prefix.rpartition(".")[0]
    return not namespace or name.startswith(namespace + ".")
