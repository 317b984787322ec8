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

Elements carry the keys the trace gives a per-element judgment (docs/
language.md, "Judging per element"): a document's id, a tool call's id, a
turn's or a text's index from 0, shown as `[i]`; `beside` puts what the
caller has for an element (the viewer: its judgments) in its heading.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import attrs

from rubriclang.audit.html.markup import Markup, el
from rubriclang.items.render import content_text, json_text
from rubriclang.items.shape import FieldSpec
from rubriclang.items.validate import ShapeError, check_value


def empty_text(text: str) -> Markup:
    """An empty or all-whitespace text, marked as such: an element with its
    own style and label (`span.empty`), never a blank box nor a text that
    could be the data's own (a literal "(empty)" could be)."""
    what = "empty" if not text else f"blank: {len(text)} whitespace character{'s' * (len(text) != 1)}"
    return el("span", {"class": "empty", "role": "note", "aria-label": f"{what} text", "title": f"{what} text"}, what)


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


# What a caller shows beside an element: (element kind, key) -> markup or None.
Beside = Callable[[str, Any], Markup | None]


def field(kind: str | None, value: Any, other: Any = None, beside: Beside | None = None) -> Markup:
    """`value` (valid for `kind`; None: absent; `kind` None: read by
    `kind_of`) as HTML. With `other`, the value it is compared with, each
    turn, document or entry of `value` that `other` lacks is marked
    `changed`, and when either side has one the other lacks, the runs of
    elements both have are folded away (a reordering folds nothing).
    `beside(element, key)` is shown in the heading of each element
    (`items.elements.ELEMENTS`' kinds: document, text, turn,
    assistant_turn, tool_call) it gives something for."""
    if value is None:
        return el("p", {"class": "absent"}, "(absent)")
    kind = kind or kind_of(value)
    if kind == "text":
        return el("pre", {"class": "text"}, value) if value.strip() else el("p", None, empty_text(value))
    if kind in ("number", "bool", "json"):
        return el("pre", {"class": "json"}, json_text(value))
    if not value:
        return el(
            "p", {"class": "absent"}, {"list": "(no entries)", "documents": "(no documents)"}.get(kind, "(no turns)")
        )
    show = _Show(other if isinstance(other, list) else None, beside or (lambda element, key: None))
    fold = show.others is not None and (any(map(show.changed, value)) or any(y not in value for y in show.others))
    if kind == "list":
        shown = [(show.changed(v), _entry(i, v, show)) for i, v in enumerate(value)]
        return _listed("entries", shown, fold, "entry", "entries")
    if kind == "documents":
        shown = [(show.changed(d), _document(d, show)) for d in value]
        return _listed("documents", shown, fold, "document", "documents")
    return _listed("conversation", _conversation(value, show), fold, "turn", "turns")


@attrs.frozen
class _Show:
    """How one value is shown: what it is compared with, and what goes beside each element."""

    others: list | None
    beside: Beside

    def changed(self, x: Any) -> bool:
        return self.others is not None and x not in self.others

    def cls(self, x: Any, cls: str) -> str:
        return cls + (" changed" if self.changed(x) else "")

    def at(self, *elements: tuple[str, Any]) -> list[Markup | None]:
        return [self.beside(element, key) for element, key in elements]


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


def _entry(i: int, text: str, show: _Show) -> Markup:
    return el(
        "li",
        {"class": show.cls(text, "entry")},
        el("span", {"class": "turn-no"}, f"[{i}] "),
        text if text.strip() else empty_text(text),
        show.at(("text", i)),
    )


def _document(d: dict, show: _Show) -> Markup:
    title = d.get("title")
    return el(
        "li",
        {"class": show.cls(d, "document")},
        el(
            "div",
            {"class": "head"},
            "document ",
            el("code", None, str(d["id"])),
            [" ", el("strong", None, title)] if title else None,
            show.at(("document", d["id"])),
        ),
        el("pre", {"class": "text"}, d["text"]) if d["text"].strip() else el("p", None, empty_text(d["text"])),
    )


def _conversation(messages: list[dict], show: _Show) -> list[tuple[bool, Markup]]:
    """(changed, turn) in order; a tool message that answers a call is
    shown beside that call, not again on its own (and a turn counts as
    changed when one of its results did)."""
    results: dict[str, list[tuple[int, dict]]] = {}
    for i, m in enumerate(messages):
        if m["role"] == "tool":
            results.setdefault(m["tool_call_id"], []).append((i, m))
    called = {c["id"] for m in messages for c in m.get("tool_calls") or ()}
    turns = []
    for i, m in enumerate(messages):
        if m["role"] == "tool" and m["tool_call_id"] in called:
            continue
        answers = [r for c in m.get("tool_calls") or () for _, r in results.get(c["id"], ())]
        turns.append((show.changed(m) or any(map(show.changed, answers)), _turn(i, m, results, show)))
    return turns


def _turn(i: int, m: dict, results: dict, show: _Show) -> Markup:
    text = content_text(m)
    calls = m.get("tool_calls") or ()
    return el(
        "li",
        {"class": show.cls(m, f"turn role-{m['role']}")},
        _head(i, m, show),
        el("pre", {"class": "text"}, text) if text.strip() else None if calls else el("p", None, empty_text(text)),
        [_call(c, results.get(c["id"], ()), show) for c in calls],
    )


def _head(i: int, m: dict, show: _Show) -> Markup:
    name = m.get("name")
    return el(
        "div",
        {"class": "head"},
        el("span", {"class": "role"}, m["role"]),
        [" ", el("code", None, name)] if name else None,
        el("span", {"class": "turn-no"}, f" [{i}]"),
        show.at(("turn", i), *((("assistant_turn", i),) if m["role"] == "assistant" else ())),
    )


def _call(call: dict, results, show: _Show) -> Markup:
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
                show.at(("tool_call", call["id"])),
            ),
            el("pre", {"class": "json"}, _arguments(function["arguments"])),
        ),
        el(
            "div",
            {"class": "results"},
            [
                el("div", {"class": show.cls(m, "result")}, _head(i, m, show), field("text", content_text(m)))
                for i, m in results
            ]
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
