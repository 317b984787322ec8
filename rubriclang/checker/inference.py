"""The inference pass: each node's output type, in topological order, so each
operator sees its inputs' inferred types. A node whose inputs failed is not
checked (its upstream error was reported), so errors do not cascade."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rubriclang.catalog import JType
from rubriclang.catalog.rules import RuleInput
from rubriclang.catalog.types import fmt_num
from rubriclang.checker.criteria import param_span
from rubriclang.checker.declarations import Decl
from rubriclang.checker.nodes import NodeShape
from rubriclang.diagnostics import Diagnostic
from rubriclang.diagnostics.codes import make
from rubriclang.records import frozen
from rubriclang.syntax import ast


@frozen
class Inferred:
    """The type of every criterion and node that has one; the rest are broken."""

    types: dict[str, JType]
    broken: frozenset[str]


def infer_types(
    order: Sequence[str],
    decls: Mapping[str, Decl],
    shapes: Mapping[str, NodeShape],
    criteria: Mapping[str, JType],
    broken: frozenset[str],
    diags: list[Diagnostic],
) -> Inferred:
    """Infer the nodes' types in `order`, starting from the criteria's; `broken`
    names the criteria and nodes already known to have errors."""
    types = dict(criteria)
    failed = set(broken)
    for name in order:
        d = decls[name]
        if not isinstance(d, ast.NodeDecl) or name in failed:
            continue
        out = _node_type(d, shapes[name], types, failed, diags)
        if out is None:
            failed.add(name)
        else:
            types[name] = out
    return Inferred(types, frozenset(failed))


def _node_type(
    d: ast.NodeDecl,
    shape: NodeShape,
    types: dict[str, JType],
    broken: set[str],
    diags: list[Diagnostic],
) -> JType | None:
    op = shape.op
    assert op is not None  # the shape pass marked a node of an unknown operator broken
    inputs = [ref.value for port in d.ports for ref in port.refs]
    if any(i in broken or i not in types for i in inputs):
        return None  # an upstream error was already reported
    ok = True
    by_port: dict[str, tuple[JType, ...]] = {}
    for port, spec in zip(d.ports, shape.ports, strict=True):
        assert spec is not None  # the shape pass reported an unknown port and marked the node broken
        slot_types = []
        for ref in port.refs:
            t = types[ref.value]
            if t.many and spec.lists and t.element_accepted(spec.accepts):
                # Read element by element; a list may be empty, so it may give no value.
                slot_types.append(t.element.as_optional())
                continue
            if not t.accepts_kind(spec.accepts):
                accepted = " or ".join(spec.accepts)
                notes = [f"`{ref.value}` is `{t}`; port `{spec.name}` accepts {accepted}"]
                notes.extend(_conversion_hint(ref.value, t, spec.accepts))
                diags.append(
                    make(
                        "RB201",
                        ref.span,
                        f"cannot route `{ref.value}: {t}` into port `{spec.name}` of `{op.name}`",
                        notes,
                    )
                )
                ok = False
            elif t.optional and not spec.absent:
                diags.append(
                    make(
                        "RB201",
                        ref.span,
                        f"`{ref.value}: {t}` may be absent, but port `{spec.name}` of `{op.name}` needs a value",
                        (
                            "only value ports and reducer inputs accept optional values",
                            f"make `{ref.value}` always present: drop the `?` (and an `on_error = abstain` upstream), "
                            f"or give it a default with `transform.default(value: {ref.value}) {{ value = ... }}`",
                        ),
                    )
                )
                ok = False
            slot_types.append(t)
        by_port[spec.name] = tuple(slot_types)
    assert shape.block is not None  # a node of an unknown operator is broken
    params = shape.block.values
    failed = set(shape.block.failed)
    for param in op.params:
        if param.length_of and param.name not in failed and params.get(param.name) is not None:
            want = len(by_port.get(param.length_of, ()))
            got = len(params[param.name])
            if got != want:
                diags.append(
                    make(
                        "RB203",
                        param_span(d, param.name),
                        f"`{param.name}` has {got} entries but `{param.length_of}` has {want} nodes",
                        (
                            f"give one `{param.name[:-1] if param.name.endswith('s') else param.name}` per input, in "
                            f"the order of `{param.length_of}`",
                        ),
                    )
                )
                failed.add(param.name)
    if not ok or failed:
        return None
    out, problems = op.rule(RuleInput(by_port, params))
    for code, message, param_name in problems:
        span = param_span(d, param_name) if param_name else d.name.span
        diags.append(make(code, span, message))
    if problems:
        return None
    assert isinstance(out, JType)
    return out


def _list_reducers() -> list[str]:
    from rubriclang.catalog import load_catalog

    ops = load_catalog().operators.values()
    return [f"`{o.name}`" for o in ops if any(p.lists for p in o.ports)]


def _conversion_hint(name: str, t: JType, accepts: tuple[str, ...]) -> tuple[str, ...]:
    """How to turn a value of type `t` into one the port accepts, where there is a usual way."""
    if t.many:
        return (
            f"`{name}` is judged per element: reduce it first with an operator that takes lists "
            f"({', '.join(_list_reducers())}), e.g. `reduce.all(inputs: [{name}])`",
        )
    if "numeric" in accepts and t.kind == "bool":
        return (
            f"a bool is not a number: map it first, e.g. `transform.map(value: {name}) {{ values = {{ true: 5, false: "
            "1 } }`",
        )
    if "numeric" in accepts and t.kind == "label":
        table = ", ".join(f"{label}: {i}" for i, label in enumerate(t.labels, 1))
        return (
            f"a label is not a number: map it first, e.g. `transform.map(value: {name}) {{ values = {{ {table} }} }}`",
        )
    if accepts == ("bool",) and t.numeric:
        middle = (t.lo + t.hi) // 2 if t.kind == "ordinal" else (t.lo + t.hi) / 2
        return (f"turn it into a bool first, e.g. `transform.threshold(value: {name}) {{ at = {fmt_num(middle)} }}`",)
    return ()
