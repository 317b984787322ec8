"""A graph as a Mermaid flowchart, optionally marked up as a diff.

Node ids are generated (`n0`, `n1`, ...) in graph order, with the names as
labels: a node named `end` (or `graph`, `class`, ...) would otherwise break
Mermaid's parser. Labels are quoted and their quotes and markup escaped with
Mermaid's entity codes; the title is a JSON (so YAML) string with no raw
`<`, `>` or `&`. Neither holds a control character or a newline, so no label
can end the picture or the Markdown block around it.
"""

from __future__ import annotations

import json

from rubriclang.review.view import View, ViewEdge, ViewNode
from rubriclang.safetext import one_line

# Shape brackets by node kind: criteria are stadiums, transforms boxes,
# reducers hexagons, gates trapezoids.
_SHAPES = {
    "criterion": ('(["', '"])'),
    "transform": ('["', '"]'),
    "reduce": ('{{"', '"}}'),
    "gate": ('[/"', '"\\]'),
}

_KIND_STYLES = {
    "criterion": "fill:#e8f1fb,stroke:#4a78b0",
    "transform": "fill:#f4f4f4,stroke:#6e7781",
    "reduce": "fill:#eaf6ea,stroke:#4c9a4c",
    "gate": "fill:#fdf0e2,stroke:#c77d28",
}

# The diff marks: added, changed, and removed (a dashed ghost of OLD's node).
DIFF_STYLES = {
    "added": "fill:#e6ffec,stroke:#1a7f37,stroke-width:2px",
    "changed": "fill:#fff8c5,stroke:#9a6700,stroke-width:2px",
    "removed": "fill:#ffffff,stroke:#8c959f,stroke-dasharray:5 5,color:#8c959f",
}

_SINK_STYLE = "stroke-width:4px"


def escape(text: str) -> str:
    """Text safe inside a quoted Mermaid label (`#` first: the codes use it;
    a backtick would make it a Markdown string)."""
    text = one_line(text)
    for ch, code in (("#", "#35;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;"), ("`", "#96;")):
        text = text.replace(ch, code)
    return text


def title(text: str) -> str:
    """The front matter's title: a double-quoted string that YAML decodes to
    `text` made one line, with markup characters as `\\u` escapes."""
    quoted = json.dumps(one_line(text))
    for ch in "<>&":
        quoted = quoted.replace(ch, f"\\u{ord(ch):04x}")
    return quoted


def render(v: View, marks: dict[str, str] | None = None, ghost: View | None = None) -> str:
    """The flowchart of `v`. With `marks` (node name -> added/changed), a diff
    picture: `ghost` (OLD's view) adds OLD's removed nodes, dashed, and OLD's
    edges that NEW no longer has, as dashed links."""
    diff = marks is not None
    ghosts = [n for n in ghost.nodes if n.name not in {m.name for m in v.nodes}] if ghost else []
    ids = {n.name: f"n{i}" for i, n in enumerate([*v.nodes, *ghosts])}
    lines = ["---", f"title: {title(v.title)}", "---", "flowchart LR"]
    lines += [f"  {ids[n.name]}{_shape(v, n)}" for n in [*v.nodes, *ghosts]]
    lines += [_edge(ids, e, "-->") for e in v.edges]
    if ghost:
        kept = set(v.edges)
        lines += [_edge(ids, e, "-.->") for e in ghost.edges if e not in kept and e.src in ids and e.dst in ids]
    classes: dict[str, list[str]] = {}
    for n in v.nodes:
        cls = (marks or {}).get(n.name) if diff else n.kind
        if cls:
            classes.setdefault(cls, []).append(ids[n.name])
    if ghosts:
        classes["removed"] = [ids[n.name] for n in ghosts]
    sinks = [ids[n.name] for n in v.nodes if n.sink]
    styles = DIFF_STYLES if diff else _KIND_STYLES
    lines += [f"  classDef {cls} {style}" for cls, style in styles.items() if cls in classes]
    lines.append(f"  classDef sink {_SINK_STYLE}")
    lines += [f"  class {','.join(members)} {cls}" for cls, members in sorted(classes.items())]
    lines.append(f"  class {','.join(sinks)} sink")
    return "\n".join(lines) + "\n"


def _shape(v: View, n: ViewNode) -> str:
    opening, closing = _SHAPES.get(n.kind, _SHAPES["transform"])
    return opening + "<br/>".join(escape(line) for line in v.lines(n)) + closing


def _edge(ids: dict[str, str], e: ViewEdge, arrow: str) -> str:
    return f'  {ids[e.src]} {arrow}|"{escape(e.label)}"| {ids[e.dst]}'
