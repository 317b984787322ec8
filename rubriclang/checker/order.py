"""The order pass: cycles (Tarjan's strongly connected components) and a
topological order of the rest (Kahn's algorithm), both fixed by source order."""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

from rubriclang.checker.declarations import Decl
from rubriclang.diagnostics import Diagnostic
from rubriclang.diagnostics.codes import make
from rubriclang.records import frozen

Edges = Mapping[str, Sequence[str]]  # node -> the nodes it reads


@frozen
class Order:
    """Every node outside a cycle, each after what it reads (source order among
    independent ones), and each cycle's nodes in source order."""

    order: tuple[str, ...]
    cycles: tuple[tuple[str, ...], ...]

    @property
    def cyclic(self) -> frozenset[str]:
        return frozenset(n for c in self.cycles for n in c)


def cycles(names: Sequence[str], edges: Edges) -> tuple[tuple[str, ...], ...]:
    """The strongly connected components that are cycles (two or more nodes,
    or one that reads itself), in the order Tarjan's algorithm closes them."""
    index = {n: i for i, n in enumerate(names)}
    counter = 0
    low: dict[str, int] = {}
    num: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[tuple[str, ...]] = []
    for root in names:
        if root in num:
            continue
        work = [(root, 0)]  # iterative, so deep graphs do not hit the recursion limit
        while work:
            node, i = work[-1]
            if i == 0:
                num[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            succ = edges.get(node, ())
            if i < len(succ):
                work[-1] = (node, i + 1)
                nxt = succ[i]
                if nxt not in num:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], num[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == num[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1 or node in edges.get(node, ()):
                    found.append(tuple(sorted(comp, key=index.__getitem__)))
    return tuple(found)


def topological(names: Sequence[str], edges: Edges, leave_out: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """Kahn's algorithm over the nodes not left out, smallest source index
    first, so the order is fixed."""
    index = {n: i for i, n in enumerate(names)}
    indeg = {n: 0 for n in names if n not in leave_out}
    readers: dict[str, list[str]] = {n: [] for n in indeg}
    for n in indeg:
        for src in set(edges.get(n, ())):
            if src in indeg:
                indeg[n] += 1
                readers[src].append(n)
    heap = [index[n] for n, k in indeg.items() if k == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        n = names[heapq.heappop(heap)]
        order.append(n)
        for r in readers[n]:
            indeg[r] -= 1
            if indeg[r] == 0:
                heapq.heappush(heap, index[r])
    return tuple(order)


def graph_order(names: Sequence[str], edges: Edges) -> Order:
    """The cycles, and a topological order of every node outside them."""
    # Most graphs have no cycle, and then Kahn's algorithm orders every node:
    # Tarjan's, which costs more, runs only when some node was left over.
    order = topological(names, edges)
    if len(order) == len(names):
        return Order(order, ())
    found = cycles(names, edges)
    return Order(topological(names, edges, frozenset(n for c in found for n in c)), found)


def report_cycle(comp: Sequence[str], edges: Edges, decls: Mapping[str, Decl], diags: list[Diagnostic]) -> None:
    """RB301 at the cycle's first node in source order, its path as the data flows."""
    # Walk the cycle from its first node, so the message reads as a path.
    members = set(comp)
    path = [comp[0]]
    while True:
        nxt = next((s for s in edges.get(path[-1], ()) if s in members), None)
        if nxt is None or nxt == path[0] or nxt in path:
            break
        path.append(nxt)
    # Edges point from a node to what it reads; show the data flow instead.
    flow = list(reversed(path))
    text = " -> ".join([*flow, flow[0]])
    diags.append(make("RB301", decls[comp[0]].name.span, f"cycle: {text}", ("a node cannot depend on its own value",)))
