"""The numeric parameters `rbg fit` may move, and writing moved ones back.

A graph's structure (criteria, operators, routes, readouts, contract) never
changes; only numbers written in operator blocks do, those whose parameter
the operator's catalog entry marks with `fit` (docs/fit.md). The standard ones:

| operator | parameter | range searched |
|---|---|---|
| `reduce.weighted_mean` | each of `weights` | [0, 1], rescaled to the written weights' total |
| `transform.map` | each value of `values` | [min, max] of the written values |
| `transform.threshold` | `at` | the input's interval |
| `transform.clamp` | `lo`, `hi` | the input's interval (`lo < hi`) |
| `gate.cap`, `gate.floor`, `gate.veto` | `max`, `min`, `to` | the input's interval |

A number stays whole where the node's input (for `transform.map`, its
output) is an ordinal, so no inferred type changes kind. A node is *fixed*,
all its numbers kept as written, when a `# rbg: fixed` comment is inside or
after its declaration, or on the line above it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from rubriclang.catalog import load_catalog
from rubriclang.catalog.types import fmt_num, fmt_short
from rubriclang.checker.graph import CheckedGraph, Operator
from rubriclang.syntax import ast

FIXED = re.compile(r"#\s*rbg:\s*fixed\b")


@attrs.frozen
class Param:
    """One number the fit may move: `node`'s `param` (`index`: a list
    position or a map key; None for a scalar), searched in [lo, hi]; `kind`
    is how its catalog entry marks it (`fit`: weights, range or interval)."""

    node: str
    param: str
    index: Any
    value: float
    lo: float
    hi: float
    integer: bool
    number: ast.Number = attrs.field(eq=False, repr=False)
    kind: str

    @property
    def weight(self) -> bool:
        """One of a list of weights, which the fit keeps at their written total."""
        return self.kind == "weights"

    @property
    def label(self) -> str:
        sub = "" if self.index is None else f"[{self.index}]"
        return f"{self.node}.{self.param}{sub}"


def fixed_nodes(module: ast.Module, source: str) -> tuple[set[str], list[str]]:
    """Nodes marked `# rbg: fixed`, and the `path:line` of markers that fix no node."""
    lines = source.split("\n")
    nodes = [d for d in module.decls if isinstance(d, ast.NodeDecl)]
    fixed, stray = set(), []
    for c in module.comments:
        if not FIXED.search(c.text):
            continue
        line = c.span.line
        own_line = not lines[line - 1][: c.span.column - 1].strip()
        hit = [
            d.name.value
            for d in nodes
            if d.span.line <= line <= d.span.end_line or (own_line and d.span.line == line + 1)
        ]
        if hit:
            fixed.update(hit)
        else:
            stray.append(f"{c.span.file}:{line}")
    return fixed, stray


def free_params(graph: CheckedGraph, module: ast.Module, fixed: set[str]) -> list[Param]:
    """Every number of the graph's operators that the fit may move, in file order."""
    decls = {d.name.value: d for d in module.decls if isinstance(d, ast.NodeDecl)}
    nodes = graph.nodes
    out: list[Param] = []
    for op in graph.operators:
        if op.name in fixed:
            continue
        block = {p.name.value: p.value for p in decls[op.name].block.params}
        out.extend(_params_of(op, block, nodes))
    return sorted(out, key=lambda p: (p.number.span.line, p.number.span.column))


def _number(v: ast.Value) -> ast.Number:
    assert isinstance(v, ast.Number)  # the checker accepted only numbers here
    return v


def _params_of(op: Operator, block: dict[str, ast.Value], nodes: Mapping[str, Any]) -> list[Param]:
    """The node's numbers that its operator's catalog entry marks for fitting."""
    out: list[Param] = []
    t = nodes[op.ports["value"][0]].type if "value" in op.ports else None
    for spec in load_catalog().operators[op.operator].params:
        v = block.get(spec.name)
        if spec.fit == "weights" and isinstance(v, ast.ListValue):
            out.extend(
                Param(op.name, spec.name, i, float(n.value), 0.0, 1.0, False, n, "weights")
                for i, n in enumerate(map(_number, v.items))
            )
        elif spec.fit == "range" and isinstance(v, ast.MapValue):
            nums = [float(_number(e.value).value) for e in v.entries]
            if min(nums) == max(nums):
                continue  # one value everywhere: no range to search
            integer = op.type.kind == "ordinal"
            out.extend(
                Param(
                    op.name,
                    spec.name,
                    k,
                    float(_number(e.value).value),
                    min(nums),
                    max(nums),
                    integer,
                    _number(e.value),
                    "range",
                )
                for k, e in zip(op.params[spec.name], v.entries, strict=True)
            )
        elif spec.fit == "interval" and isinstance(v, ast.Number) and t is not None and t.numeric:
            out.append(
                Param(
                    op.name,
                    spec.name,
                    None,
                    float(v.value),
                    float(t.lo),
                    float(t.hi),
                    t.kind == "ordinal",
                    v,
                    "interval",
                )
            )
    return out


def weights_total(params: list[Param]) -> dict[str, float]:
    """node -> the total of its written weights (fitted weights keep it)."""
    out: dict[str, float] = {}
    for p in params:
        if p.weight:
            out[p.node] = out.get(p.node, 0.0) + p.value
    return out


def concrete(params: list[Param], x: Iterable[float], totals: dict[str, float]) -> list[float | int]:
    """The numbers written for search point `x`: whole where they must be,
    four significant digits otherwise, weights rescaled to their total."""
    values = []
    sums: dict[str, float] = {}
    for p, v in zip(params, x, strict=True):
        if p.weight:
            sums[p.node] = sums.get(p.node, 0.0) + float(v)
    for p, v in zip(params, x, strict=True):
        v = float(v)
        if p.weight:
            s = sums[p.node]
            v = v * totals[p.node] / s if s > 0 else 0.0
        values.append(round(v) if p.integer else float(fmt_short(v)))
    return values


def with_values(graph: CheckedGraph, params: list[Param], values: Sequence[float]) -> CheckedGraph:
    """The checked graph with `params` set to `values` (structure unchanged)."""
    by_node: dict[str, dict[str, Any]] = {}
    ops = {o.name: o for o in graph.operators}
    for p, v in zip(params, values, strict=True):
        block = by_node.setdefault(p.node, dict(ops[p.node].params))
        if p.index is None:
            block[p.param] = v
        elif isinstance(block[p.param], Mapping):
            table = dict(block[p.param])
            table[p.index] = v
            block[p.param] = table
        else:
            lst = list(block[p.param])
            lst[p.index] = v
            block[p.param] = lst
    return attrs.evolve(
        graph,
        operators=tuple(attrs.evolve(o, params=by_node[o.name]) if o.name in by_node else o for o in graph.operators),
    )


def number_text(v: float | int, old: ast.Number) -> str:
    """How a fitted number is written; as it was when it did not move."""
    if float(v) == float(old.value):
        return old.text or repr(old.value)
    return fmt_num(v)


def rewrite(source: str, params: list[Param], values: Sequence[float]) -> str:
    """`source` with each parameter's number replaced by its value."""
    lines = source.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    edits = []
    for p, v in zip(params, values, strict=True):
        s = p.number.span
        a = starts[s.line - 1] + s.column - 1
        b = starts[s.end_line - 1] + s.end_column - 1
        edits.append((a, b, number_text(v, p.number)))
    for a, b, text in sorted(edits, reverse=True):
        source = source[:a] + text + source[b:]
    return source
