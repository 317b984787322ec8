"""Hover: a node name shows its type and kind; an operator or procedure
name, or a parameter name, shows its docs from the catalog."""

from __future__ import annotations

import attrs

from rubriclang.catalog import Catalog, JType
from rubriclang.checker import CheckedGraph, Operator
from rubriclang.checker.values import type_from_ast
from rubriclang.lsp.analysis import Analysis
from rubriclang.lsp.catalog_info import block_params, name_markdown, param_markdown
from rubriclang.lsp.scanner import token_at
from rubriclang.syntax import ast


@attrs.frozen
class Hover:
    """Markdown to show, and the [start, end) text range it is about."""

    markdown: str
    start: int
    end: int


def hover(a: Analysis, offset: int, catalog: Catalog, previous: CheckedGraph | None = None) -> Hover | None:
    """The hover at `offset`. `previous` is the last graph of this document
    that checked without errors: while the file has errors, an operator
    node's type comes from it (marked as such)."""
    tok = token_at(a.tokens, offset)
    if tok is not None and tok.kind == "name":
        docs = name_markdown(catalog, tok.text)
        if docs is not None:
            return Hover(docs, tok.start, tok.end)
    occ = a.occurrence_at(offset)
    if occ is not None:
        start, end = a.range_of(occ.span)
        return Hover(_node_markdown(a, occ.name, catalog, previous), start, end)
    return _param_hover(a, offset, catalog)


def _node_markdown(a: Analysis, name: str, catalog: Catalog, previous: CheckedGraph | None) -> str:
    decl = a.declared(name)
    if decl is None:
        return f"`{name}`: no node of this name is declared."
    t, note = _type_of(a, decl, previous)
    head = f"{'criterion' if isinstance(decl, ast.CriterionDecl) else 'node'} {name}: {t if t is not None else '?'}"
    if isinstance(decl, ast.CriterionDecl):
        line = f"A criterion, judged by `{decl.procedure.text}`."
    else:
        spec = catalog.operators.get(decl.operator.text)
        kind = f"{spec.kind} " if spec else ""
        inputs = ", ".join(f"`{r.value}`" for port in decl.ports for r in port.refs)
        line = f"A {kind}node: `{decl.operator.text}` of {inputs or 'nothing'}."
    if a.graph is not None and a.graph.sink == name:
        line += " The sink."
    return f"```rbg\n{head}\n```\n\n{line}" + (f"\n\n{note}" if note else "")


def _type_of(
    a: Analysis, decl: ast.CriterionDecl | ast.NodeDecl, previous: CheckedGraph | None
) -> tuple[JType | None, str]:
    """The node's type, and a note on where it came from when not from this text."""
    name = decl.name.value
    if a.graph is not None:
        return a.graph.nodes[name].type, ""
    if isinstance(decl, ast.CriterionDecl):
        # A criterion's type is what it declares, whatever else is wrong.
        return type_from_ast(decl.type, []), ""
    old = previous.nodes.get(name) if previous is not None else None
    if isinstance(old, Operator) and old.operator == decl.operator.text:
        return old.type, "_Type as of the last check without errors; the file has errors now._"
    return None, "_Type unknown: the file has errors._"


def _param_hover(a: Analysis, offset: int, catalog: Catalog) -> Hover | None:
    if a.module is None:
        return None
    for d in a.module.decls:
        if isinstance(d, (ast.SinkDecl, ast.ItemDecl, ast.GroupDecl)):  # no parameter block
            continue
        for p in d.block.params:
            start, end = a.range_of(p.name.span)
            if start <= offset <= end:
                spec = next((s for s in block_params(catalog, *_block_owner(d)) if s.name == p.name.value), None)
                return Hover(param_markdown(spec), start, end) if spec else None
    return None


def _block_owner(d: ast.Decl) -> tuple[str, str | None]:
    """A declaration's keyword and head, as `block_params` takes them."""
    if isinstance(d, ast.CriterionDecl):
        return "criterion", d.procedure.text
    if isinstance(d, ast.NodeDecl):
        return "node", d.operator.text
    if isinstance(d, ast.ReadoutDecl):
        return "readout", d.mode.value
    return ("rubric" if isinstance(d, ast.RubricDecl) else "contract"), None
