"""Rendering a graph diff (and its verdict impact) as text, JSON or Markdown.

- **text**: `--- OLD` / `+++ NEW`, one block per changed subject (`+` added,
  `-` removed, `~` changed; prose with a word diff, `[-old-]{+new+}`), and a
  closing `Plan: ...` line; coloured on request.
- **json**: the schema `rubriclang.diff/1` of docs/review.md; keys sorted,
  2-space indent, byte-stable.
- **markdown**: for a pull-request comment: the text in a `diff` block, and a
  Mermaid picture of NEW with added, changed and (dashed) removed nodes.

No renderer reads the clock or the environment.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import attrs

from rubriclang.catalog.types import fmt_num
from rubriclang.checker.graph import CheckedGraph
from rubriclang.interp.readout import transition_lines
from rubriclang.interp.trace import graph_hash
from rubriclang.review import mermaid
from rubriclang.review.canonical import Name, Path
from rubriclang.review.diff import ADD, CHANGE, MISSING, REMOVE, Change, FieldChange, GraphDiff
from rubriclang.review.impact import Impact, ItemImpact
from rubriclang.review.view import view
from rubriclang.review.words import DELETE, EQUAL
from rubriclang.safetext import one_line, printable
from rubriclang.syntax.strings import quote

# Styles text (`bold`, a diff sign) for a terminal, or leaves it plain.
Paint = Callable[[str, str], str]

SCHEMA = "rubriclang.diff/1"
FORMATS = ("text", "json", "markdown")

_SIGN = {ADD: "+", REMOVE: "-", CHANGE: "~"}
_VERB = {ADD: "added", REMOVE: "removed", CHANGE: "changed"}
_STYLE = {"+": "\x1b[32m", "-": "\x1b[31m", "~": "\x1b[33m", "bold": "\x1b[1m"}
_RESET = "\x1b[0m"


@attrs.frozen
class Report:
    """Everything a rendering shows: the sides' labels and graphs (None for a
    side with no file), their diff, and the verdict impact if asked for."""

    old_label: str
    new_label: str
    old: CheckedGraph | None
    new: CheckedGraph | None
    diff: GraphDiff
    impact: Impact | None = None


def render(fmt: str, report: Report, *, color: bool = False, limit: int = 50) -> str:
    if fmt == "json":
        return render_json(report)
    if fmt == "markdown":
        return render_markdown(report, limit=limit)
    return render_text(report, color=color, limit=limit)


# -- values ---------------------------------------------------------------------


def literal(value: Any) -> str:
    """A value as a .rbg file writes it."""
    if isinstance(value, Name):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return fmt_num(value)
    if isinstance(value, str):
        return printable(quote(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    return "none"


def field_path(p: Path) -> str:
    """`params.anchors[3]`, `ports.inputs[0]`, `ports.when`, `type`."""
    if p[0] in ("params", "ports") and len(p) > 1:
        return f"{p[0]}.{_shown(p)}"
    return _shown(p)


def _shown(p: Path) -> str:
    """A field as text shows it: parameters and ports by their own names,
    `anchors[3]`, `inputs[0]`, `when`."""
    if p[0] in ("params", "ports") and len(p) > 1:
        p = p[1:]
    return str(p[0]) + "".join(f"[{literal(k) if isinstance(k, bool) else k}]" for k in p[1:])


# -- text -------------------------------------------------------------------------


def plan(diff: GraphDiff) -> str:
    """`Plan: 1 node to add, 2 to change, 0 to remove; also: sink moved.`"""
    if not diff.changed:
        return "No semantic changes."
    n = diff.node_counts()
    nodes = "node" if n[ADD] == 1 else "nodes"
    line = f"Plan: {n[ADD]} {nodes} to add, {n[CHANGE]} to change, {n[REMOVE]} to remove"
    also = [
        f"{_subject(c)} {'moved' if c.section == 'sink' and c.action == CHANGE else _VERB[c.action]}"
        for c in diff.changes
        if c.section != "node"
    ]
    return line + ("; also: " + ", ".join(also) if also else "") + "."


def _subject(c: Change) -> str:
    return {"header": "rubric header", "readout": f"{c.name} readout"}.get(c.section, c.section)


def render_text(report: Report, *, color: bool = False, limit: int = 50) -> str:
    paint = _painter(color)
    # Data shown here is made printable where it enters (labels, values,
    # prose, item ids): coloured output is written past the stream guard.
    lines = [paint("bold", f"--- {one_line(report.old_label)}"), paint("bold", f"+++ {one_line(report.new_label)}"), ""]
    lines += body_lines(report.diff, paint)
    if report.diff.changed:
        lines.append("")
    lines.append(paint("bold", plan(report.diff)))
    if report.impact is not None:
        lines += ["", *impact_lines(report.impact, limit)]
    return "\n".join(lines) + "\n"


def _painter(color: bool) -> Paint:
    def paint(style: str, text: str) -> str:
        return f"{_STYLE[style]}{text}{_RESET}" if color and text else text

    return paint


def _plain(style: str, text: str) -> str:
    return text


def body_lines(diff: GraphDiff, paint: Paint = _plain) -> list[str]:
    """One block per changed subject: its headline, then its fields."""
    lines = []
    for c in diff.changes:
        sign = _SIGN[c.action]
        if c.section == "sink":
            lines.append(paint(sign, f"{sign} sink: {_change_text(c.fields[0], paint)}"))
            continue
        lines.append(paint(sign, f"{sign} {printable(_headline(c))}"))
        for f in c.fields:
            if c.action != CHANGE and (f.path in _HEADLINED or f.path[0] == "ports"):
                continue  # already in the headline
            fsign = _SIGN[f.action]
            lines.extend("    " + line for line in _field_lines(f, fsign, paint))
    return lines


_HEADLINED = {("kind",), ("procedure",), ("operator",), ("type",), ("name",)}


def _headline(c: Change) -> str:
    h = {p[0]: v for p, v in c.head.items()}
    if c.section == "header":
        return f"rubric {h['name']}"
    if c.section == "readout":
        return f"readout {c.name}"
    if c.section == "item":
        return f"item {c.name}: {h['type']}"
    if c.section != "node":
        return c.section
    if h.get("kind") == "criterion":
        return f"criterion {c.name}: {h['type']} = {h['procedure']}"
    ports = ""
    if c.action != CHANGE:
        ports = "(" + ", ".join(_ports(c.fields)) + ")"
    return f"node {c.name} = {h.get('operator')}{ports}  # {h.get('type')}"


def _ports(fields: tuple[FieldChange, ...]) -> list[str]:
    """`inputs: [a, b]`, `value: c` from an added or removed operator's fields."""
    out: dict[str, list[str]] = {}
    single = set()
    for f in fields:
        if f.path[0] == "ports":
            out.setdefault(f.path[1], []).append(f.new if f.new is not MISSING else f.old)
            if len(f.path) == 2:
                single.add(f.path[1])
    return [f"{p}: {names[0]}" if p in single else f"{p}: [{', '.join(names)}]" for p, names in out.items()]


def _field_lines(f: FieldChange, sign: str, paint: Paint) -> list[str]:
    name = _shown(f.path)
    if f.words is not None and "\n" in f.old + f.new:
        text = _words_text(f.words, paint)
        return [paint(sign, f"{sign} {name}:"), *("    " + line for line in text.split("\n"))]
    return [paint(sign, f"{sign} {name}: ") + _change_text(f, paint)]


def _change_text(f: FieldChange, paint: Paint) -> str:
    if f.words is not None:
        return _words_text(f.words, paint)
    if f.old is MISSING:
        return literal(f.new)
    if f.new is MISSING:
        return literal(f.old)
    return f"{literal(f.old)} -> {literal(f.new)}"


def _words_text(words: tuple[tuple[str, str], ...], paint: Paint) -> str:
    """git's `--word-diff=plain` markers, `[-deleted-]{+inserted+}`, with the
    spaces around a changed word left outside them, where a reader expects."""
    out = []
    for op, text in words:
        text = printable(text)
        if op == EQUAL:
            out.append(text)
            continue
        core = text.strip() or text
        lead, trail = (text[: text.index(core)], text[text.index(core) + len(core) :]) if core != text else ("", "")
        mark = f"[-{core}-]" if op == DELETE else f"{{+{core}+}}"
        out.append(lead + paint(op, mark) + trail)
    return "".join(out)


def impact_lines(impact: Impact, limit: int = 50) -> list[str]:
    traces = one_line(impact.traces)
    if not impact.available:
        return [f"Verdict impact: not available from {traces}.", *(f"  {one_line(r)}" for r in impact.reasons)]
    n = len(impact.differences)
    items = f"{impact.items} traced item" + ("" if impact.items == 1 else "s")
    if not n:
        return [f"Verdict impact over {items} ({traces}): no decision changes."]
    lines = [f"Verdict impact over {items} ({traces}): {n} decision{'' if n == 1 else 's'} change."]
    return lines + transition_lines(((one_line(d.item), one_line(d.transition)) for d in impact.differences), limit)


# -- json ---------------------------------------------------------------------------


def render_json(report: Report) -> str:
    diff = report.diff
    counts = diff.node_counts()
    doc = {
        "schema": SCHEMA,
        "old": _side(report.old_label, report.old),
        "new": _side(report.new_label, report.new),
        "changed": diff.changed,
        "summary": {"add": counts[ADD], "change": counts[CHANGE], "remove": counts[REMOVE], "plan": plan(diff)},
        "changes": [_change_json(c) for c in diff.changes],
        "impact": _impact_json(report.impact) if report.impact is not None else None,
    }
    return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def _side(label: str, graph: CheckedGraph | None) -> dict[str, Any]:
    return {
        "path": label,
        "rubric": graph.name if graph else None,
        "hash": graph_hash(graph) if graph else None,
    }


def _change_json(c: Change) -> dict[str, Any]:
    return {
        "section": c.section,
        "name": c.name,
        "action": c.action,
        "head": {field_path(p): v for p, v in c.head.items()},
        "fields": [_field_json(f) for f in c.fields],
    }


def _field_json(f: FieldChange) -> dict[str, Any]:
    out: dict[str, Any] = {"field": field_path(f.path), "action": f.action}
    if f.old is not MISSING:
        out["old"] = f.old
    if f.new is not MISSING:
        out["new"] = f.new
    if f.words is not None:
        out["words"] = [list(w) for w in f.words]
    return out


def _impact_json(impact: Impact) -> dict[str, Any]:
    return {
        "traces": impact.traces,
        "available": impact.available,
        "reasons": list(impact.reasons),
        "items": impact.items,
        "changed": len(impact.differences),
        "transitions": dict(impact.transitions()),
        "differences": [_difference_json(d) for d in impact.differences],
    }


def _difference_json(d: ItemImpact) -> dict[str, Any]:
    out: dict[str, Any] = {"item": d.item, "old": d.old, "new": d.new}
    if d.elements:  # only items judged per element: other outputs are as they were
        out["elements"] = d.elements
    return out


# -- markdown -----------------------------------------------------------------------


def render_markdown(report: Report, *, limit: int = 50) -> str:
    diff = report.diff
    parts = [
        f"### Rubric diff: {_code(report.old_label)} → {_code(report.new_label)}",
        f"**{plan(diff)}**",
    ]
    if diff.changed:
        parts.append(_fenced("diff", "\n".join(body_lines(diff))))
    if diff.changed and report.new is not None:
        marks = {
            c.name: ("added" if c.action == ADD else "changed")
            for c in diff.changes
            if c.section == "node" and c.action != REMOVE
        }
        ghost = view(report.old) if report.old is not None else None
        parts.append(_fenced("mermaid", mermaid.render(view(report.new), marks, ghost).rstrip("\n")))
        parts.append("Legend: green added, yellow changed, dashed removed; the sink has a thick border.")
    if report.impact is not None:
        parts.append(_impact_markdown(report.impact, limit))
    return "\n\n".join(parts) + "\n"


def _impact_markdown(impact: Impact, limit: int) -> str:
    head = f"#### Verdict impact ({_code(impact.traces)})"
    if not impact.available:
        return "\n".join([head, "", "Not available:", "", *(f"- {_cell(r)}" for r in impact.reasons)])
    n = len(impact.differences)
    lines = [head, "", f"Over {impact.items} traced items, **{n} decision{'' if n == 1 else 's'} change**."]
    if n:
        lines += ["", "| OLD → NEW | items |", "|---|---:|"]
        lines += [f"| {_cell(t)} | {k} |" for t, k in impact.transitions()]
        lines += ["", f"<details><summary>Changed items ({n})</summary>", "", "| item | OLD | NEW |", "|---|---|---|"]
        lines += [f"| {_cell(d.item)} | {_cell(d.old)} | {_cell(d.new)} |" for d in impact.differences[:limit]]
        if n > limit:
            lines.append(f"| … and {n - limit} more | | |")
        lines += ["", "</details>"]
    return "\n".join(lines)


def _fenced(lang: str, text: str) -> str:
    """A code block whose fence is longer than any backtick run inside it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def _code(text: str) -> str:
    """Inline code that survives backticks in `text`, on one line (a newline
    would end a heading and start whatever the rest holds, raw HTML too)."""
    text = one_line(text)
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _cell(text: str) -> str:
    """Text safe in a Markdown table cell or list item: one line, and `<`
    escaped, which would start an HTML tag (`>` is left alone, so `4 -> 3`
    stays readable in the source)."""
    return re.sub(r"([\\`*_<\[\]|&])", r"\\\1", one_line(text))
