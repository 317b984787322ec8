"""Flat baselines: the same criterion judgments, composed as a plain
(weighted) mean instead of the graph, so comparing the two isolates what the
composition (gates, transforms, structure) contributes.

Public API: `BASELINES` (the names `--baseline` takes), `baseline_weights
(graph, kind)`, `baseline_sink(graph, weights, values)` and
`baseline_decision(graph, weights, mode, cids, composition)`.

The criteria are those under the graph's value path: reached from the sink
through every port but a gate's `when` (a condition such as a safety check
plays a structural role). Label criteria are left out (they have no mean).

- `equal`: every such criterion weighs 1.
- `graph-weights`: the weights of the graph's top-level reducer, the first
  `reduce.*` node reached from the sink through `value` ports: a
  `weighted_mean` gives its weights (an input's weight shared equally by the
  criteria under it), any other reducer uniform weights.

Each judgment is taken on its own scale; one whose interval differs from the
contract's is rescaled linearly onto it (bool: false at the bottom, true at
the top), as `transform.rescale` does. A judgment already on the contract's
scale is used as it is, with no round trip through [0, 1], and the mean is
computed as `reduce.mean` and `reduce.weighted_mean` compute it, so a
baseline identical to the graph agrees with it exactly. The mean is then
read out like the graph (a bool contract takes the weighted majority).
"""

from __future__ import annotations

import math
from typing import Any

from rubriclang.catalog.types import JType
from rubriclang.checker.graph import CheckedGraph, Criterion, Operator
from rubriclang.interp.compose import Composition
from rubriclang.interp.readout import Decision, pairwise, pointwise

BASELINES = ("equal", "graph-weights")


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
    return sorted({c for c in out if nodes[c].type.kind != "label"}, key=order.__getitem__)


def _graph_weights(graph: CheckedGraph) -> dict[str, float]:
    nodes = graph.nodes
    node = nodes[graph.sink]
    while isinstance(node, Operator) and node.kind != "reduce":
        if "value" not in node.ports:
            break
        node = nodes[node.ports["value"][0]]
    if not isinstance(node, Operator) or node.kind != "reduce":
        return dict.fromkeys(_criteria_under(graph, graph.sink), 1.0)
    inputs = node.ports["inputs"]
    weights = node.params.get("weights") or [1.0] * len(inputs)
    out: dict[str, float] = {}
    for src, w in zip(inputs, weights, strict=True):
        under = _criteria_under(graph, src)
        for c in under:
            out[c] = out.get(c, 0.0) + float(w) / len(under)
    return out


def baseline_weights(graph: CheckedGraph, kind: str = "equal") -> dict[str, float]:
    """Criterion -> weight for the `kind` baseline (see the module doc)."""
    if kind == "equal":
        return dict.fromkeys(_criteria_under(graph, graph.sink), 1.0)
    if kind == "graph-weights":
        return _graph_weights(graph)
    raise ValueError(f"unknown baseline `{kind}` (one of {', '.join(BASELINES)})")


def _on_scale(value: Any, t: JType, scale: JType) -> float | None:
    if value is None:
        return None
    if t.kind == "bool":
        return scale.hi if value else scale.lo
    if not t.numeric:
        return None
    number: float = value
    if (t.lo, t.hi) == (scale.lo, scale.hi):
        return number
    return scale.lo + (number - t.lo) * (scale.hi - scale.lo) / (t.hi - t.lo)


def baseline_sink(graph: CheckedGraph, weights: dict[str, float], values: dict[str, Any]) -> Any:
    """The baseline's value on the contract scale for one candidate, from its
    criterion values; None when no weighted judgment is present or the
    contract's scale is a label."""
    scale = graph.scale
    if scale.kind == "bool":
        # On a bool contract, a weighted majority of the checks that hold.
        target = JType("score", 0, 1)
        xs = [(w, _on_scale(values.get(c), graph.nodes[c].type, target)) for c, w in weights.items() if w > 0]
        held = [(w, x) for w, x in xs if x is not None]
        if not held:
            return None
        return math.fsum(w * x for w, x in held) / math.fsum(w for w, _ in held) >= 0.5
    if not scale.numeric:
        return None
    on_scale = [(w, _on_scale(values.get(c), graph.nodes[c].type, scale)) for c, w in weights.items() if w > 0]
    pairs = [(w, x) for w, x in on_scale if x is not None]
    if not pairs:
        return None
    # As reduce.weighted_mean computes it; with weights of 1, as reduce.mean.
    return math.fsum(w * x for w, x in pairs) / math.fsum(w for w, _ in pairs)


def baseline_decision(
    graph: CheckedGraph, weights: dict[str, float], mode: str, cids: tuple[str, ...], comp: Composition
) -> Decision:
    """The baseline's decision on one item, from the graph's composition of
    it (whose criterion values it reads)."""
    values = comp.values
    sinks = {cid: baseline_sink(graph, weights, {c: values.get(c, {}).get(cid) for c in weights}) for cid in cids}
    if mode == "pointwise":
        return pointwise(graph.pointwise_readout, graph.scale, sinks[cids[0]])
    return pairwise(graph.pairwise_readout, graph.scale, cids, sinks)
