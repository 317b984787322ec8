"""A graph drawn as inline SVG, with each node's value for one item and the
path that decided its verdict highlighted.

The layout is computed here (columns by depth from the criteria, rows in
graph order), so no drawing library, script or outside tool is needed; every
text in it is escaped. Styling is by class names, in the viewer's CSS file,
so the page's Content-Security-Policy needs no inline style.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup, escape

from rubriclang.review.view import View
from rubriclang.view.table import shown

W, H, GAP_X, GAP_Y, PAD = 190, 58, 60, 16, 12


def _depths(v: View) -> dict[str, int]:
    depth = {n.name: 0 for n in v.nodes if n.kind == "criterion"}
    for n in v.nodes:  # operators come in evaluation order
        if n.kind != "criterion":
            depth[n.name] = 1 + max((depth[e.src] for e in v.edges if e.dst == n.name), default=0)
    return depth


def decided_path(v: View, values: dict[str, Any], sink: str) -> tuple[set[str], set[tuple[str, str]]]:
    """The nodes and edges the sink's value came through: from the sink back
    to the criteria, following for a gate the input that set its value (its
    `when` when that fired, else its `value`), for an operator that
    `selects` one of its inputs (`reduce.min`, `reduce.max`: a trait of its
    catalog entry) the inputs equal to the result, and for other operators
    every input."""
    kinds = {n.name: n for n in v.nodes}
    nodes, edges, todo = set(), set(), [sink]
    while todo:
        name = todo.pop()
        if name in nodes:
            continue
        nodes.add(name)
        ins = [e for e in v.edges if e.dst == name]
        node = kinds[name]
        if node.kind == "gate":
            fired = [e for e in ins if e.label == "when" and _truthy(values.get(e.src))]
            ins = fired or [e for e in ins if e.label != "when"]
        elif "selects" in node.traits:
            ins = [e for e in ins if values.get(e.src) == values.get(name)] or ins
        for e in ins:
            edges.add((e.src, e.dst))
            todo.append(e.src)
    return nodes, edges


def _truthy(value: Any) -> bool:
    # A pairwise item has one value per candidate: the gate fired if it fired for either.
    if isinstance(value, dict):
        return any(v is True for v in value.values())
    return value is True


def _clip(text: str, n: int = 30) -> str:
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def render_svg(v: View, values: dict[str, Any] | None = None, sink: str | None = None) -> Markup:
    """The graph as an `<svg>` element. `values`: node -> its value for the
    item (one value, or candidate -> value); with `sink`, the decided path
    is marked with the class `on`."""
    values = values or {}
    on_nodes, on_edges = decided_path(v, values, sink) if sink and values else (set(), set())
    depth = _depths(v)
    rows: dict[int, int] = {}
    pos = {}
    for n in v.nodes:
        d = depth[n.name]
        r = rows.get(d, 0)
        rows[d] = r + 1
        pos[n.name] = (PAD + d * (W + GAP_X), PAD + r * (H + GAP_Y))
    width = PAD * 2 + (max(depth.values(), default=0) + 1) * (W + GAP_X) - GAP_X
    height = PAD * 2 + max(rows.values(), default=1) * (H + GAP_Y) - GAP_Y
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img">',
        f"<title>{escape(v.title)}</title>",
    ]
    for e in v.edges:
        (sx, sy), (x2, dy) = pos[e.src], pos[e.dst]
        x1, y1, y2 = sx + W, sy + H / 2, dy + H / 2
        mid = (x1 + x2) / 2
        cls = "edge on" if (e.src, e.dst) in on_edges else "edge"
        out.append(
            f'<path class="{cls}" d="M{x1:g},{y1:g} C{mid:g},{y1:g} {mid:g},{y2:g} '
            f'{x2:g},{y2:g}"><title>{escape(e.src)} \u2192 {escape(e.dst)} ({escape(e.label)})</title></path>'
        )
    for n in v.nodes:
        x, y = pos[n.name]
        cls = " ".join(["node", n.kind, *(["on"] if n.name in on_nodes else []), *(["sink"] if n.sink else [])])
        value = shown(values[n.name]) if n.name in values else ""
        tip = (
            f"{n.name}: {n.what} ({n.type})"
            + (f" = {value}" if value else "")
            + (f"\n{n.question}" if n.question else "")
        )
        out.append(
            f'<g class="{cls}" data-node="{escape(n.name)}"><title>{escape(tip)}</title>'
            f'<rect x="{x}" y="{y}" width="{W}" height="{H}" rx="6"></rect>'
            f'<text x="{x + 8}" y="{y + 18}" class="name">{escape(_clip(n.name))}</text>'
            f'<text x="{x + 8}" y="{y + 33}" class="what">{escape(_clip(n.what + " " + n.type))}</text>'
            f'<text x="{x + 8}" y="{y + 49}" class="value">{escape(_clip(value, 32))}</text></g>'
        )
    out.append("</svg>")
    return Markup("".join(out))


def node_values(rec: dict) -> dict[str, Any]:
    """Each node's value in a trace record: criteria and operators, one value
    for a pointwise item, candidate -> value for a pairwise one."""
    cids = rec["candidates"]

    def one(per: dict) -> Any:
        return per.get(cids[0]) if len(cids) == 1 else {c: per.get(c) for c in cids}

    out = {name: one({c: j.get("value") for c, j in per.items()}) for name, per in rec["criteria"].items()}
    out.update({name: one(per) for name, per in rec.get("operators", {}).items()})
    return out
