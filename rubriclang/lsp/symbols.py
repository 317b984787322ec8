"""Where each node name occurs: its declaration, the ports that read it,
and the sink."""

from __future__ import annotations

import attrs

from rubriclang.diagnostics.span import Span
from rubriclang.syntax import ast


@attrs.frozen
class Occurrence:
    """One written node name; `declaration` when it is the name being declared."""

    name: str
    span: Span
    declaration: bool


def occurrences(module: ast.Module) -> tuple[Occurrence, ...]:
    """Every node-name occurrence, in source order."""
    out = []
    for d in module.decls:
        if isinstance(d, (ast.CriterionDecl, ast.NodeDecl)):
            out.append(Occurrence(d.name.value, d.name.span, True))
        if isinstance(d, ast.NodeDecl):
            out.extend(Occurrence(r.value, r.span, False) for port in d.ports for r in port.refs)
        elif isinstance(d, ast.SinkDecl):
            out.append(Occurrence(d.target.value, d.target.span, False))
        elif isinstance(d, ast.GroupDecl):
            out.extend(Occurrence(m.value, m.span, False) for m in d.members)
    return tuple(out)
