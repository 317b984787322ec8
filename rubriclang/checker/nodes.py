"""The node-shape pass: each operator node's references, ports, arity and
parameters, before any type is known."""

from __future__ import annotations

from rubriclang.catalog.model import OperatorSpec, PortSpec
from rubriclang.checker.declarations import Declarations
from rubriclang.checker.lookup import Lookup, unknown_spec
from rubriclang.checker.values import CheckedBlock, check_block, suggest
from rubriclang.diagnostics import Diagnostic
from rubriclang.diagnostics.codes import make
from rubriclang.records import frozen
from rubriclang.syntax import ast


@frozen
class NodeShape:
    """What the shape pass found of one node: the declared names it reads (in
    port order, each edge once per reference), its parameter block when its
    operator is known, and whether its shape is sound (else its type is not
    inferred). Also its operator's spec (None when unknown) and the spec of
    each of its ports as written (None for an unknown one), so later passes
    need not look them up again."""

    reads: tuple[str, ...]
    block: CheckedBlock | None
    ok: bool
    op: OperatorSpec | None = None
    ports: tuple[PortSpec | None, ...] = ()


def node_shape(d: ast.NodeDecl, decls: Declarations, lookup: Lookup, diags: list[Diagnostic]) -> NodeShape:
    """Ports, arity, references and parameters of an operator node."""
    reads: list[str] = []
    ok = True
    for port in d.ports:
        for ref in port.refs:
            if ref.value in decls.decls:
                reads.append(ref.value)
            else:
                diags.append(make("RB101", ref.span, f"unknown name `{ref.value}`", decls.name_hint(ref.value)))
                ok = False
    op = lookup.operator(d.operator.text)
    if op is None:
        diags.append(unknown_spec("RB103", d.operator, lookup.catalog.operators, "operator"))
        return NodeShape(tuple(reads), None, False)
    where = f"`{op.name}`"
    seen: dict[str, ast.PortArg] = {}
    unknown: list[ast.PortArg] = []
    specs: list[PortSpec | None] = []
    for port in d.ports:
        pname = port.name.value
        spec = op.port(pname)
        specs.append(spec)
        if spec is None:
            unknown.append(port)
            ok = False
            continue
        if pname in seen:
            diags.append(
                make(
                    "RB107",
                    port.name.span,
                    f"port `{pname}` is connected twice",
                    (f"first connected at {seen[pname].name.span}",),
                )
            )
            ok = False
            continue
        seen[pname] = port
        if not spec.variadic and port.is_list:
            diags.append(
                make(
                    "RB108",
                    port.span,
                    f"port `{pname}` of {where} takes exactly one node, not a list",
                    (f"write `{pname}: {port.refs[0].value if port.refs else 'NAME'}`",),
                )
            )
            ok = False
        elif spec.variadic and not port.is_list:
            diags.append(
                make(
                    "RB108",
                    port.span,
                    f"port `{pname}` of {where} takes a list",
                    (f"write `{pname}: [{port.refs[0].value}]`",),
                )
            )
            ok = False
        elif spec.variadic:
            n = len(port.refs)
            if n < spec.min or (spec.max is not None and n > spec.max):
                diags.append(make("RB108", port.span, f"port `{pname}` of {where} takes {spec.arity_text()}, got {n}"))
                ok = False
    missing = [spec.name for spec in op.ports if spec.name not in seen]
    # Only the messages below need the signature: a sound node skips building it.
    signature = f"its signature: {op.signature()}" if unknown or missing else ""
    if len(unknown) == 1 and len(missing) == 1:
        # One misnamed port: say so once, rather than "unknown" and "missing".
        port = unknown[0]
        diags.append(
            make(
                "RB106",
                port.name.span,
                f"{where} has no port `{port.name.value}`",
                (f"did you mean `{missing[0]}`, which is not connected?", signature),
            )
        )
        missing = []
    else:
        for port in unknown:
            diags.append(
                make(
                    "RB106",
                    port.name.span,
                    f"{where} has no port `{port.name.value}`",
                    (*suggest(port.name.value, missing or [p.name for p in op.ports]), signature),
                )
            )
    for port_name in missing:
        diags.append(make("RB105", d.operator.span, f"{where} needs its port `{port_name}` connected", (signature,)))
        ok = False
    block = check_block(d.block, op.params, diags, where, d.operator.span)
    return NodeShape(tuple(reads), block, ok, op, tuple(specs))
