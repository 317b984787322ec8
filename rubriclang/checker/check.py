"""The checker: AST -> checked graph, reporting every error it can find.

`check` composes the passes, each a module of its own that takes what it
needs and returns what it found: declarations (header, contract, names),
criteria, node shapes (ports, arity, parameters), order (cycles, then a
topological order), inference (types, in that order, so each operator sees
its inputs' inferred types), readouts (sink, reachability, contract and
readouts) and the lints (`checker.lints`). An error in one node never stops
the others from being checked, and a node whose inputs failed is not checked
again (no cascades).
"""

from __future__ import annotations

import attrs

from rubriclang.catalog import Catalog, JType
from rubriclang.checker.criteria import CriterionCheck, check_criterion
from rubriclang.checker.declarations import contract_scale, declarations, header_values
from rubriclang.checker.graph import CheckedGraph, Criterion, Operator
from rubriclang.checker.inference import infer_types
from rubriclang.checker.lints import LintContext, lint
from rubriclang.checker.lookup import Lookup
from rubriclang.checker.nodes import NodeShape, node_shape
from rubriclang.checker.order import graph_order, report_cycle
from rubriclang.checker.prompts import PromptChecker
from rubriclang.checker.readouts import check_reachability, check_readouts, sink_of
from rubriclang.checker.values import CheckedBlock
from rubriclang.diagnostics import Diagnostic, sorted_diagnostics
from rubriclang.records import frozen
from rubriclang.syntax import ast

__all__ = ["CheckResult", "CriterionCheck", "check"]


@frozen
class CheckResult:
    """The checked graph (None when there are errors) and every diagnostic."""

    graph: CheckedGraph | None
    diagnostics: tuple[Diagnostic, ...]
    # The text of every other file the check read (prompt templates), for excerpts.
    sources: dict[str, str] = attrs.field(factory=dict)

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.is_error)


def check(module: ast.Module, catalog: Catalog | None = None) -> CheckResult:
    """Check a parsed module against the catalog (the standard one, with
    installed plugins when the module names something it lacks)."""
    lookup = Lookup(catalog)
    diags: list[Diagnostic] = []
    blocks: list[CheckedBlock | None] = []
    decls = declarations(module, diags)
    header, header_block = header_values(decls.header, lookup.catalog, diags)
    scale, contract_block = contract_scale(decls.contract, lookup.catalog, diags)
    blocks += (header_block, contract_block)

    prompts = PromptChecker(module.path, diags, {})
    declared = None
    if decls.items:
        from rubriclang.checker.items import item_shape  # only files that declare their item pay for it

        declared, prompts.broken_fields = item_shape(
            decls.items, lambda n: prompts.resolve(n, "schema", "RB601"), diags
        )
        prompts.shape = declared
    criteria: dict[str, Criterion] = {}
    shapes: dict[str, NodeShape] = {}
    broken: set[str] = set()
    for name, d in decls.decls.items():
        if isinstance(d, ast.CriterionDecl):
            checked = check_criterion(d, lookup, prompts, diags)
            blocks.append(checked.block)
            if checked.criterion is None:
                broken.add(name)
            else:
                criteria[name] = checked.criterion
        else:
            shapes[name] = shape = node_shape(d, decls, lookup, diags)
            blocks.append(shape.block)
            if not shape.ok:
                broken.add(name)
    edges = {name: shape.reads for name, shape in shapes.items()}
    if declared is not None:
        from rubriclang.checker.items import check_reads

        criterion_decls = {n: d for n, d in decls.decls.items() if isinstance(d, ast.CriterionDecl)}
        criteria = check_reads(
            declared, prompts.broken_fields, criterion_decls, criteria, prompts.reads, lookup.catalog, diags
        )

    if decls.groups:
        from rubriclang.checker.groups import check_groups  # only files that group criteria pay for it

        criteria = check_groups(decls, criteria, broken, lookup.catalog, diags)

    order = graph_order(list(decls.decls), edges)
    for comp in order.cycles:
        report_cycle(comp, edges, decls.decls, diags)
    catalog = lookup.catalog
    inferred = infer_types(
        order.order,
        decls.decls,
        shapes,
        {n: c.type for n, c in criteria.items()},
        frozenset(broken | order.cyclic),
        diags,
    )

    sink = sink_of(decls, module.path, diags)
    if sink is not None:
        check_reachability(sink, decls, edges, diags)
    readouts = check_readouts(decls, module.path, sink, scale, inferred, criteria, catalog, diags)
    blocks += readouts.blocks
    node_params = {n: s.block.values for n, s in shapes.items() if s.block is not None}
    checked_blocks = tuple(b for b in blocks if b is not None)
    diags += lint(
        LintContext(
            decls.decls,
            criteria,
            inferred.types,
            inferred.broken,
            catalog,
            checked_blocks,
            node_params,
            prompts.references,
        )
    )

    result = tuple(sorted_diagnostics(diags))
    if any(d.is_error for d in result):
        return CheckResult(None, result, prompts.sources)
    # Without errors, the header, the contract and the sink are all there.
    assert decls.header is not None and scale is not None and sink is not None
    operators = tuple(
        _operator(d, shapes[n], inferred.types) for n in order.order if isinstance(d := decls.decls[n], ast.NodeDecl)
    )
    graph = CheckedGraph(
        name=decls.header.name.value,
        header=header,
        scale=scale,
        criteria=tuple(criteria.values()),
        operators=operators,
        sink=sink,
        readouts=readouts.readouts,
        path=module.path,
        item_shape=declared,
    )
    return CheckResult(graph, result, prompts.sources)


def _operator(d: ast.NodeDecl, shape: NodeShape, types: dict[str, JType]) -> Operator:
    op = shape.op
    assert op is not None  # the node checked without errors
    ports = {
        p.name: tuple(r.value for r in port.refs) for p in op.ports for port in d.ports if port.name.value == p.name
    }
    assert shape.block is not None  # the node checked without errors
    return Operator(d.name.value, op.name, op.kind, ports, shape.block.values, types[d.name.value], span=d.span)
