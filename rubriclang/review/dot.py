"""A graph in Graphviz DOT, and as SVG through Graphviz's `dot` when installed.

Node ids are generated (`n0`, `n1`, ...) in graph order, with the names as
labels, so no name can collide with a DOT keyword (`node`, `edge`, `graph`).
"""

from __future__ import annotations

import shutil
import subprocess

from rubriclang.review.view import View, ViewNode
from rubriclang.safetext import printable

_SHAPES = {
    "criterion": 'shape=box, style="rounded,filled", fillcolor="#e8f1fb"',
    "transform": 'shape=box, style=filled, fillcolor="#f4f4f4"',
    "reduce": 'shape=hexagon, style=filled, fillcolor="#eaf6ea"',
    "gate": 'shape=trapezium, style=filled, fillcolor="#fdf0e2"',
}


class GraphvizMissing(Exception):
    """Graphviz's `dot` is not on PATH."""


def quote(text: str) -> str:
    """A DOT double-quoted string (backslashes first: the escapes use them);
    control characters other than newlines as `\\uXXXX` escapes."""
    text = printable(text, keep="\n")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def render(v: View) -> str:
    ids = {n.name: f"n{i}" for i, n in enumerate(v.nodes)}
    lines = [
        "digraph rubric {",
        f"  graph [rankdir=LR, labelloc=t, label={quote(v.title)}, fontname=Helvetica];",
        "  node [fontname=Helvetica, fontsize=11];",
        "  edge [fontname=Helvetica, fontsize=9];",
    ]
    lines += [f"  {ids[n.name]} [{_attrs(v, n)}];" for n in v.nodes]
    lines += [f"  {ids[e.src]} -> {ids[e.dst]} [label={quote(e.label)}];" for e in v.edges]
    lines.append("}")
    return "\n".join(lines) + "\n"


def _attrs(v: View, n: ViewNode) -> str:
    parts = [f"label={quote(chr(10).join(v.lines(n)))}", _SHAPES.get(n.kind, _SHAPES["transform"])]
    if n.sink:
        parts.append("peripheries=2")
    if n.question:
        parts.append(f"tooltip={quote(n.question)}")
    return ", ".join(parts)


def to_svg(dot_text: str) -> str:
    """SVG from Graphviz. Raises GraphvizMissing when `dot` is not installed,
    and RuntimeError with Graphviz's message when it fails."""
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizMissing("Graphviz's `dot` is not installed (or not on PATH)")
    done = subprocess.run([exe, "-Tsvg"], input=dot_text, capture_output=True, text=True, encoding="utf-8")
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip() or f"`dot` exited with status {done.returncode}")
    return done.stdout
