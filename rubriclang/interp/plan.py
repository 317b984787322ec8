"""A graph's operators compiled into one Python function, for speed.

The checked graph is turned into straight-line code: one assignment per
operator, in the evaluation order, each from the plan template of the
operator's catalog entry. The generated source never contains text from the
`.rbg` file: variables are `v0, v1, ...`, and every parameter is a constant
bound by name in the function's namespace, so a rubric remains data.
Operators without a template (or whose template declines, say for absent
inputs) call their entry's function, with the ports it expects; tests check
that the compiled plan and the functions agree on random graphs and judgments.
"""

from __future__ import annotations

from typing import Any, Protocol

from rubriclang.catalog import load_catalog
from rubriclang.catalog.entries import PlanSite
from rubriclang.catalog.model import OperatorSpec
from rubriclang.checker.graph import CheckedGraph


def compile_plan(graph: CheckedGraph) -> Plan:
    """A function from the criteria's values (in `graph.criteria` order) to
    the operators' values (in `graph.operators` order), for one candidate."""
    catalog = load_catalog()
    nodes = graph.nodes
    var = {c.name: f"v{i}" for i, c in enumerate(graph.criteria)}
    ns: dict[str, Any] = {}
    body = []
    for j, op in enumerate(graph.operators):
        out = f"v{len(graph.criteria) + j}"
        k = f"k{j}_"
        spec = catalog.operators[op.operator]
        slots = [s for slots in op.ports.values() for s in slots]
        site = PlanSite(tuple(var[s] for s in slots), tuple(nodes[s].type for s in slots), op.params, k)
        emitted = spec.plan(site) if spec.plan else None
        if emitted is not None:
            expr, constants = emitted
            stray = [name for name in constants if not name.startswith(k)]
            if stray:  # a catalog bug: applications would share (and clobber) names
                raise ValueError(f"the plan template of `{op.operator}` binds {stray}, not prefixed with {k!r}")
            ns.update(constants)
        else:
            ports = ", ".join(
                f"{p!r}: [{', '.join(var[s] for s in op.ports[p])}]"
                if _variadic(spec, p)
                else f"{p!r}: {var[op.ports[p][0]]}"
                for p in op.ports
            )
            ns[k + "fn"] = spec.function
            ns[k + "params"] = op.params
            ns[k + "types"] = {p: nodes[s[0]].type for p, s in op.ports.items() if len(s) == 1}
            expr = f"{k}fn({{{ports}}}, {k}params, {k}types)"
        body.append(f"    {out} = {expr}")
        var[op.name] = out
    args = ", ".join(var[c.name] for c in graph.criteria)
    outs = ", ".join(var[o.name] for o in graph.operators)
    source = f"def _plan({args}):\n" + "\n".join(body or ["    pass"]) + f"\n    return ({outs}{',' if outs else ''})\n"
    exec(compile(source, f"<plan of {graph.name}>", "exec"), ns)  # noqa: S102 — catalog templates only
    fn: Plan = ns["_plan"]
    fn.source = source
    return fn


def _variadic(spec: OperatorSpec, port: str) -> bool:
    p = spec.port(port)
    assert p is not None, (spec.name, port)  # the checker accepted only the operator's ports
    return bool(p.variadic)


class Plan(Protocol):
    """The compiled function, with its source (for tests' messages)."""

    source: str

    def __call__(self, *values: Any) -> tuple[Any, ...]: ...
