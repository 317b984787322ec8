"""The declarations pass: the header, the contract, the sinks and readouts,
and the names of criteria and nodes (each declared once)."""

from __future__ import annotations

from typing import Any

from rubriclang.catalog import Catalog, JType
from rubriclang.checker.values import CheckedBlock, check_block, suggest
from rubriclang.diagnostics import Diagnostic
from rubriclang.diagnostics.codes import make
from rubriclang.diagnostics.span import Span
from rubriclang.records import frozen
from rubriclang.syntax import ast

Decl = ast.CriterionDecl | ast.NodeDecl


def file_span(path: str) -> Span:
    """Where a diagnostic about the file as a whole points."""
    return Span(path, 1, 1, 1, 1)


@frozen
class Declarations:
    """The module's declarations, sorted by what they are. `decls` holds the
    first criterion or node of each name, in source order."""

    header: ast.RubricDecl | None
    contract: ast.ContractDecl | None
    sinks: tuple[ast.SinkDecl, ...]
    readouts: tuple[ast.ReadoutDecl, ...]
    decls: dict[str, Decl]
    items: tuple[ast.ItemDecl, ...] = ()
    groups: tuple[ast.GroupDecl, ...] = ()

    def name_hint(self, name: str) -> tuple[str, ...]:
        """What to say about a reference to an undeclared `name`."""
        return suggest(name, self.decls) or (f"declare `{name}` with `criterion {name}: ...` or `node {name} = ...`",)


def declarations(module: ast.Module, diags: list[Diagnostic]) -> Declarations:
    """Sort the module's declarations; a second header or contract, a missing
    one and a name declared twice are reported."""
    header: ast.RubricDecl | None = None
    contract: ast.ContractDecl | None = None
    sinks: list[ast.SinkDecl] = []
    readouts: list[ast.ReadoutDecl] = []
    items: list[ast.ItemDecl] = []
    groups: list[ast.GroupDecl] = []
    decls: dict[str, Decl] = {}
    for d in module.decls:
        if isinstance(d, ast.RubricDecl):
            if header is None:
                header = d
            else:
                diags.append(make("RB401", d.span, "a second `rubric` header", (f"the first is at {header.span}",)))
        elif isinstance(d, ast.ContractDecl):
            if contract is None:
                contract = d
            else:
                diags.append(make("RB402", d.span, "a second `contract`", (f"the first is at {contract.span}",)))
        elif isinstance(d, ast.SinkDecl):
            sinks.append(d)
        elif isinstance(d, ast.ReadoutDecl):
            readouts.append(d)
        elif isinstance(d, ast.ItemDecl):
            items.append(d)
        elif isinstance(d, ast.GroupDecl):
            groups.append(d)
        else:
            first = decls.setdefault(d.name.value, d)
            if first is not d:
                diags.append(
                    make(
                        "RB102",
                        d.name.span,
                        f"`{d.name.value}` is already declared",
                        (f"first declared at {first.name.span}",),
                    )
                )
    if header is None:
        diags.append(
            make(
                "RB401",
                file_span(module.path),
                "the file has no `rubric` header",
                ("start the file with `rubric NAME { version = 1 }`",),
            )
        )
    if contract is None:
        diags.append(
            make(
                "RB402",
                file_span(module.path),
                "the file has no `contract`",
                ("add e.g. `contract { scale = score[1, 5] }`",),
            )
        )
    return Declarations(header, contract, tuple(sinks), tuple(readouts), decls, tuple(items), tuple(groups))


def header_values(
    header: ast.RubricDecl | None, catalog: Catalog, diags: list[Diagnostic]
) -> tuple[dict[str, Any], CheckedBlock | None]:
    """The header's parameters that are set, and its checked block."""
    if header is None:
        return {}, None
    checked = check_block(header.block, catalog.blocks["rubric"].params, diags, "the `rubric` header", header.name.span)
    return {k: v for k, v in checked.values.items() if v is not None}, checked


def contract_scale(
    contract: ast.ContractDecl | None, catalog: Catalog, diags: list[Diagnostic]
) -> tuple[JType | None, CheckedBlock | None]:
    """The contract's scale (None when missing or wrong), and its checked block."""
    if contract is None:
        return None, None
    checked = check_block(contract.block, catalog.blocks["contract"].params, diags, "the `contract`", contract.span)
    scale = checked.values.get("scale")
    if scale is not None and scale.optional:
        param = next(p for p in contract.block.params if p.name.value == "scale")
        diags.append(
            make(
                "RB203",
                param.value.span,
                "the contract's `scale` cannot be optional",
                ("an absent sink already reads out as abstain; drop the `?`",),
            )
        )
        return None, checked
    return scale, checked
