"""The flat weighted baseline: the same criterion judgments, composed as a
plain weighted mean instead of the graph, so comparing the two isolates what
the composition (gates, transforms, structure) contributes.

Weights come from the graph's top-level reducer — the first `reduce.*` node
reached from the sink through `value` ports: a `weighted_mean` gives its
weights (an operator input's weight is shared equally by the criteria under
it), any other reducer uniform weights. Criteria outside it (gate conditions
such as a safety check) are left out: their role is structural. Each
judgment is mapped to [0, 1] on its own scale (bool: 0 or 1), averaged, and
mapped onto the contract's scale, then read out like the graph.
"""

from __future__ import annotations

from typing import Any

from rubriclang.checker.graph import CheckedGraph, Criterion, Operator


def _criteria_under(graph: CheckedGraph, name: str) -> list[str]:
    nodes = graph.nodes
    out, todo, seen = [], [name], set()
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        node = nodes[n]
        if isinstance(node, Criterion):
            out.append(n)
        else:
            # A gate's `when` is a condition on the value, not part of it.
            todo.extend(s for p, slots in node.ports.items() if p != "when" for s in slots)
    order = {c.name: i for i, c in enumerate(graph.criteria)}
    return sorted(set(out), key=order.get)


def baseline_weights(graph: CheckedGraph) -> dict[str, float]:
    """Criterion -> weight for the flat baseline (see the module doc)."""
    nodes = graph.nodes
    node = nodes[graph.sink]
    while isinstance(node, Operator) and node.kind != "reduce":
        node = nodes[node.ports["value"][0]] if "value" in node.ports else None
        if node is None:
            break
    if node is None or isinstance(node, Criterion):
        return {node.name: 1.0} if node is not None else {c.name: 1.0 for c in graph.criteria}
    inputs = node.ports["inputs"]
    weights = node.params.get("weights") or [1.0] * len(inputs)
    out: dict[str, float] = {}
    for src, w in zip(inputs, weights):
        under = [c for c in _criteria_under(graph, src) if graph.nodes[c].type.kind != "label"]
        for c in under:
            out[c] = out.get(c, 0.0) + float(w) / len(under)
    return out


def _unit(value: Any, t) -> float | None:
    if value is None:
        return None
    if t.kind == "bool":
        return 1.0 if value else 0.0
    if t.numeric:
        return (value - t.lo) / (t.hi - t.lo)
    return None


def baseline_sink(graph: CheckedGraph, weights: dict[str, float], values: dict[str, Any]) -> Any:
    """The baseline's value on the contract scale for one candidate (a bool
    scale takes the weighted majority), or None when no weighted judgment is
    present or the scale is a label."""
    nodes = graph.nodes
    num = den = 0.0
    for name, w in weights.items():
        u = _unit(values.get(name), nodes[name].type)
        if u is None or w <= 0:
            continue
        num += w * u
        den += w
    if den == 0:
        return None
    scale = graph.scale
    if scale.kind == "bool":
        return num / den >= 0.5  # a majority of the weighted checks hold
    if not scale.numeric:
        return None
    return scale.lo + (num / den) * (scale.hi - scale.lo)
