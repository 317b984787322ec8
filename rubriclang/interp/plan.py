"""A graph's operators compiled into one Python function, for speed.

The checked graph is turned into straight-line code: one assignment per
operator, in the evaluation order, each from a fixed template of this module.
The generated source never contains text from the `.rbg` file: variables are
`v0, v1, ...`, and every parameter is a constant bound by name in the
function's namespace, so a rubric remains data. Operators without a template
(third-party ones) call their function from `ops`-style registries, the same
way the reference semantics in `ops.py` do; tests check that the compiled plan
and the reference semantics agree on random graphs and judgments.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from rubriclang.catalog import JType, load_catalog
from rubriclang.catalog.model import OperatorSpec
from rubriclang.checker.graph import CheckedGraph, Operator
from rubriclang.interp.ops import OPERATORS, OpFn, _median, _sum

# A template: the expression computing an operator's value from its inputs'
# variables `x`, its constants' prefix `k` and its input types; None when the
# node must call the reference function instead.
_Emit = Callable[[Operator, list[str], str, list[JType]], "str | None"]


def _unary(expr: str) -> _Emit:
    def emit(op: Operator, x: list[str], k: str, types: list[JType]) -> str | None:
        return f"None if {x[0]} is None else {expr.format(x=x[0], k=k)}"

    return emit


def _gate(expr: str) -> _Emit:
    def emit(op: Operator, x: list[str], k: str, types: list[JType]) -> str | None:
        v, w = x
        return f"None if {v} is None else ({expr.format(x=v, k=k)} if {w} else {v})"

    return emit


def _reducer(call: str) -> _Emit:
    def emit(op: Operator, x: list[str], k: str, types: list[JType]) -> str | None:
        if any(t.optional for t in types):
            return None  # absent inputs: the reference function skips them
        return f"{call}(({', '.join(x)},))"

    return emit


def _weighted_mean(op: Operator, x: list[str], k: str, types: list[JType]) -> str | None:
    if any(t.optional for t in types):
        return None
    terms = ", ".join(f"{k}w[{i}] * {v}" for i, v in enumerate(x))
    # Same arithmetic as the reference: fsum of products over fsum of weights.
    return f"(_fsum(({terms},)) / {k}total) if {k}total > 0 else None"


def _mean(op: Operator, x: list[str], k: str, types: list[JType]) -> str | None:
    if any(t.optional for t in types):
        return None
    return f"_fsum(({', '.join(x)},)) / {len(x)}"


TEMPLATES: dict[str, _Emit] = {
    "transform.rescale": _unary("{k}to_lo + ({x} - {k}lo) * {k}to_w / {k}w"),
    "transform.threshold": _unary("{x} {k}cmp {k}at"),
    "transform.map": _unary("{k}table[{x}]"),
    "transform.invert": _unary("{k}sum - {x}"),
    "transform.not": _unary("(not {x})"),
    "transform.clamp": _unary("min(max({x}, {k}clo), {k}chi)"),
    "reduce.mean": _mean,
    "reduce.weighted_mean": _weighted_mean,
    "reduce.min": _reducer("min"),
    "reduce.max": _reducer("max"),
    "reduce.median": _reducer("_median"),
    "reduce.sum": _reducer("_sum"),
    "reduce.all": _reducer("all"),
    "reduce.any": _reducer("any"),
    "gate.cap": _gate("min({x}, {k}max)"),
    "gate.floor": _gate("max({x}, {k}min)"),
    "gate.veto": _gate("{k}to"),
}


def _constants(op: Operator, types: list[JType], k: str) -> dict[str, Any]:
    p = op.params
    name = op.operator
    if name == "transform.rescale":
        t, to = types[0], p["to"]
        return {k + "to_lo": to.lo, k + "lo": t.lo, k + "to_w": to.hi - to.lo, k + "w": t.hi - t.lo}
    if name == "transform.threshold":
        return {k + "at": p["at"]}
    if name == "transform.map":
        return {k + "table": p["values"]}
    if name == "transform.invert":
        return {k + "sum": types[0].lo + types[0].hi}
    if name == "transform.clamp":
        return {k + "clo": p["lo"], k + "chi": p["hi"]}
    if name == "reduce.weighted_mean":
        return {k + "w": tuple(p["weights"]), k + "total": math.fsum(p["weights"])}
    if name in ("gate.cap", "gate.floor", "gate.veto"):
        key = {"gate.cap": "max", "gate.floor": "min", "gate.veto": "to"}[name]
        return {k + key: p[key]}
    return {}


def compile_plan(graph: CheckedGraph, operators: Mapping[str, OpFn] = OPERATORS) -> Plan:
    """A function from the criteria's values (in `graph.criteria` order) to
    the operators' values (in `graph.operators` order), for one candidate."""
    catalog = load_catalog()
    nodes = graph.nodes
    var = {c.name: f"v{i}" for i, c in enumerate(graph.criteria)}
    ns: dict[str, Any] = {"_fsum": math.fsum, "_median": _median, "_sum": _sum}
    body = []
    for j, op in enumerate(graph.operators):
        out = f"v{len(graph.criteria) + j}"
        k = f"k{j}_"
        slots = [s for slots in op.ports.values() for s in slots]
        x = [var[s] for s in slots]
        types = [nodes[s].type for s in slots]
        template = TEMPLATES.get(op.operator)
        expr = template(op, x, k, types) if template else None
        if op.operator == "transform.threshold" and expr is not None:
            expr = expr.replace(f"{k}cmp", ">=" if op.params["inclusive"] else ">")
        if op.operator == "gate.mask":
            expr = f"None if {x[1]} else {x[0]}"
        if expr is None:
            # The reference semantics, called with the ports it expects.
            spec = catalog.operators[op.operator]
            ports = ", ".join(
                f"{p!r}: [{', '.join(var[s] for s in op.ports[p])}]"
                if _variadic(spec, p)
                else f"{p!r}: {var[op.ports[p][0]]}"
                for p in op.ports
            )
            ns[k + "fn"] = operators[op.operator]
            ns[k + "params"] = op.params
            ns[k + "types"] = {p: nodes[s[0]].type for p, s in op.ports.items() if len(s) == 1}
            expr = f"{k}fn({{{ports}}}, {k}params, {k}types)"
        else:
            ns.update(_constants(op, types, k))
        body.append(f"    {out} = {expr}")
        var[op.name] = out
    args = ", ".join(var[c.name] for c in graph.criteria)
    outs = ", ".join(var[o.name] for o in graph.operators)
    source = f"def _plan({args}):\n" + "\n".join(body or ["    pass"]) + f"\n    return ({outs}{',' if outs else ''})\n"
    exec(compile(source, f"<plan of {graph.name}>", "exec"), ns)  # noqa: S102 — our own templates only
    fn: Plan = ns["_plan"]
    fn.source = source
    return fn


def _variadic(spec: OperatorSpec, port: str) -> bool:
    p = spec.port(port)
    assert p is not None, (spec.name, port)  # the checker accepted only the operator's ports
    return p.variadic


class Plan(Protocol):
    """The compiled function, with its source (for tests' messages)."""

    source: str

    def __call__(self, *values: Any) -> tuple[Any, ...]: ...
