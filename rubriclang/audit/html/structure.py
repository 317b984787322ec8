"""An item's field as HTML, by its kind: a conversation as turns with their
roles, each assistant tool call with its name, its arguments as indented
JSON and the tool's result beside it (matched by `tool_call_id`); documents
with their ids and titles; JSON indented; a list of texts as a list.

One renderer for the viewer's item page and the audit report's evidence.
Every text from the data goes through `el`, so it is escaped; an empty or
absent value says so instead of leaving a blank box. The audit report
carries no declared kinds, so `kind_of` reads a value's kind from its form,
with the items validator (`rubriclang.items.validate`) as the judge of
"is this a conversation / documents".
"""

from __future__ import annotations

import json
from typing import Any

from rubriclang.audit.html.markup import Markup, el
from rubriclang.items.render import content_text, json_text
from rubriclang.items.shape import FieldSpec
from rubriclang.items.validate import ShapeError, check_value


def kind_of(value: Any) -> str:
    """The kind (`items.shape.KINDS`) a value of unknown kind is shown as:
    text, a valid conversation or documents, a list of texts, else JSON."""
    if isinstance(value, str):
        return "text"
    if isinstance(value, list) and value:
        for kind in ("conversation", "documents", "list"):
            try:
                check_value(FieldSpec("value", kind), value, "value")
            except ShapeError:
                continue
            return kind
    return "json"


def field(kind: str | None, value: Any, other: Any = None) -> Markup:
    """`value` (valid for `kind`; None: absent; `kind` None: read by
    `kind_of`) as HTML. With `other`, the value it is compared with, each
    turn, document or entry of `value` that `other` lacks is marked
    `changed`, and when either side has one the other lacks, the runs of
    elements both have are folded away (a reordering folds nothing)."""
    if value is None:
        return el("p", {"class": "absent"}, "(absent)")
    kind = kind or kind_of(value)
    if kind == "text":
        return el("pre", {"class": "text"}, value) if value else el("p", {"class": "absent"}, "(empty)")
    if kind in ("number", "bool", "json"):
        return el("pre", {"class": "json"}, json_text(value))
    if not value:
        return el(
            "p", {"class": "absent"}, {"list": "(no entries)", "documents": "(no documents)"}.get(kind, "(no turns)")
        )
    others = other if isinstance(other, list) else None

    def changed(x: Any) -> bool:
        return others is not None and x not in others

    def mark(x: Any, cls: str) -> str:
        return cls + (" changed" if changed(x) else "")

    fold = others is not None and (any(map(changed, value)) or any(y not in value for y in others))
    if kind == "list":
        shown = [(changed(v), el("li", {"class": mark(v, "entry")}, v or "(empty)")) for v in value]
        return _listed("entries", shown, fold, "entry", "entries")
    if kind == "documents":
        shown = [(changed(d), _document(d, mark(d, "document"))) for d in value]
        return _listed("documents", shown, fold, "document", "documents")
    return _listed("conversation", _conversation(value, changed, mark), fold, "turn", "turns")


def _listed(cls: str, shown: list[tuple[bool, Markup]], fold: bool, one: str, many: str) -> Markup:
    """The list of (changed, element) pairs; with `fold`, each run of
    unchanged elements as one item that opens to show them."""
    if not fold:
        return el("ol", {"class": cls}, [li for _, li in shown])
    items: list[Markup] = []
    run: list[Markup] = []

    def close_run() -> None:
        if run:
            summary = f"{len(run)} unchanged {one if len(run) == 1 else many}"
            folded = el("details", None, el("summary", None, summary), el("ol", {"class": cls}, run))
            items.append(el("li", {"class": "same"}, folded))
            run.clear()

    for is_changed, li in shown:
        if is_changed:
            close_run()
            items.append(li)
        else:
            run.append(li)
    close_run()
    return el("ol", {"class": cls}, items)


def _document(d: dict, cls: str) -> Markup:
    title = d.get("title")
    return el(
        "li",
        {"class": cls},
        el(
            "div",
            {"class": "head"},
            "document ",
            el("code", None, str(d["id"])),
            [" ", el("strong", None, title)] if title else None,
        ),
        el("pre", {"class": "text"}, d["text"]) if d["text"] else el("p", {"class": "absent"}, "(empty)"),
    )


def _conversation(messages: list[dict], changed, mark) -> list[tuple[bool, Markup]]:
    """Turns in order, numbered from 1 as the trace's element keys will be;
    a tool message that answers a call is shown beside that call, not again
    on its own (and a turn counts as changed when one of its results did)."""
    results: dict[str, list[tuple[int, dict]]] = {}
    for n, m in enumerate(messages, 1):
        if m["role"] == "tool":
            results.setdefault(m["tool_call_id"], []).append((n, m))
    called = {c["id"] for m in messages for c in m.get("tool_calls") or ()}
    turns = []
    for n, m in enumerate(messages, 1):
        if m["role"] == "tool" and m["tool_call_id"] in called:
            continue
        answers = [r for c in m.get("tool_calls") or () for _, r in results.get(c["id"], ())]
        turns.append((changed(m) or any(map(changed, answers)), _turn(n, m, results, mark)))
    return turns


def _turn(n: int, m: dict, results: dict, mark) -> Markup:
    text = content_text(m)
    calls = m.get("tool_calls") or ()
    return el(
        "li",
        {"class": mark(m, f"turn role-{m['role']}")},
        _head(n, m),
        el("pre", {"class": "text"}, text) if text else None if calls else el("p", {"class": "absent"}, "(empty)"),
        [_call(c, results.get(c["id"], ()), mark) for c in calls],
    )


def _head(n: int, m: dict) -> Markup:
    name = m.get("name")
    return el(
        "div",
        {"class": "head"},
        el("span", {"class": "role"}, m["role"]),
        [" ", el("code", None, name)] if name else None,
        el("span", {"class": "turn-no"}, f" turn {n}"),
    )


def _call(call: dict, results, mark) -> Markup:
    function = call["function"]
    return el(
        "div",
        {"class": "call"},
        el(
            "div",
            {"class": "request"},
            el(
                "div",
                {"class": "head"},
                "tool call ",
                el("code", None, function["name"]),
                " ",
                el("code", {"class": "id"}, call["id"]),
            ),
            el("pre", {"class": "json"}, _arguments(function["arguments"])),
        ),
        el(
            "div",
            {"class": "results"},
            [el("div", {"class": mark(m, "result")}, _head(n, m), field("text", content_text(m))) for n, m in results]
            or el("p", {"class": "absent"}, "(no result)"),
        ),
    )


def _arguments(arguments: str) -> str:
    """The call's arguments (a JSON object written as a string) indented;
    as written when they do not parse."""
    try:
        return json_text(json.loads(arguments))
    except (ValueError, RecursionError):
        return arguments
