"""What a picture of a graph shows, independent of the drawing language:
nodes (kind, procedure or operator, inferred type, the sink marked) and
edges labelled with the port slot they feed (`inputs[0]`, `when`)."""

from __future__ import annotations

import attrs

from rubriclang.catalog import Catalog, load_catalog
from rubriclang.checker.graph import CheckedGraph
from rubriclang.review.canonical import slot_label, slots


@attrs.frozen
class ViewNode:
    name: str
    kind: str  # criterion, transform, reduce or gate
    what: str  # the procedure or operator
    type: str
    sink: bool = False
    question: str | None = None  # a criterion's question, for tooltips
    traits: frozenset[str] = frozenset()  # an operator's, from its catalog entry


@attrs.frozen
class ViewEdge:
    src: str
    dst: str
    label: str


@attrs.frozen
class View:
    """Nodes in graph order (criteria, then operators in evaluation order);
    edges by destination, then port and slot."""

    title: str
    nodes: tuple[ViewNode, ...]
    edges: tuple[ViewEdge, ...]

    def lines(self, node: ViewNode) -> tuple[str, ...]:
        """A node's label, one entry per line."""
        # `reduce.mean` already names its kind; a criterion's procedure does not.
        what = node.what if node.what.startswith(f"{node.kind}.") else f"{node.kind}: {node.what}"
        return (node.name, what, node.type, *(("sink",) if node.sink else ()))


def view(graph: CheckedGraph, catalog: Catalog | None = None) -> View:
    cat = catalog or load_catalog()
    description = graph.header.get("description")
    title = f"{graph.name}: {description}" if description else graph.name
    nodes = [
        ViewNode(c.name, "criterion", c.procedure, str(c.type), c.name == graph.sink, c.params.get("question"))
        for c in graph.criteria
    ]
    nodes += [
        ViewNode(o.name, o.kind, o.operator, str(o.type), o.name == graph.sink, traits=cat.operators[o.operator].traits)
        for o in graph.operators
    ]
    edges = [ViewEdge(src, o.name, slot_label(port, i)) for o in graph.operators for port, i, src in slots(o, cat)]
    return View(title, tuple(nodes), tuple(edges))
