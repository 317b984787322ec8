"""The default rendering of declared fields into prompt text, and the
elements a template section iterates over.

Deterministic and byte-stable: a value renders from its content alone, in
its own order (a JSON object's keys as written), with no locale, clock or
hash involved. `shape.RENDER_VERSION` names these renderings in the hash of
every criterion that shows a declared field. docs/items.md shows each form.
"""

from __future__ import annotations

import json
from typing import Any

from rubriclang.items.shape import ROLES, FieldSpec
from rubriclang.items.values import ListValue


def render(spec: FieldSpec, value: Any) -> str:
    """`value` (valid for `spec`; None when absent) as prompt text."""
    if value is None:
        return ""
    kind = spec.kind
    if kind == "text":
        text: str = value
        return text
    if kind in ("number", "bool", "json"):
        return json_text(value)
    if kind == "list":
        return "\n".join(f"- {v}" for v in value)
    if kind == "documents":
        return "\n\n".join(_document(d) for d in value)
    return "\n\n".join(_message(m) for m in value)


def template_value(spec: FieldSpec, value: Any) -> str:
    """What a template is given for the field: its rendering, and for a
    list kind, each element's values for a `{{#field}}` section."""
    text = render(spec, value)
    if not spec.iterable:
        return text
    if spec.kind == "list":
        elements = tuple({"index": str(i), "value": v} for i, v in enumerate(value or (), 1))
    elif spec.kind == "documents":
        elements = tuple(
            {"index": str(i), "id": str(d["id"]), "title": d.get("title") or "", "text": d["text"]}
            for i, d in enumerate(value or (), 1)
        )
    else:
        elements = tuple(_turn(i, m) for i, m in enumerate(value or (), 1))
    return ListValue(text, elements)


def json_text(value: Any) -> str:
    """A JSON value as text: two-space indents, keys in their own order,
    non-ASCII kept."""
    return json.dumps(value, ensure_ascii=False, indent=2)


def _document(d: dict[str, Any]) -> str:
    title = d.get("title")
    head = f"[document {d['id']}]" + (f" {title}" if title else "")
    return f"{head}\n{d['text']}"


def content_text(message: dict[str, Any]) -> str:
    """A message's content as text: a string as it is, text parts joined by newlines."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, list):
        return "\n".join(part["text"] for part in content)
    text: str = content
    return text


def _call(call: dict[str, Any]) -> str:
    function = call["function"]
    return f"[tool call {call['id']}] {function['name']}({function['arguments']})"


def _message(m: dict[str, Any]) -> str:
    role = m["role"]
    head = f"[{role}]" if role != "tool" else f"[tool result {m['tool_call_id']}]"
    lines = [head]
    text = content_text(m)
    if text:
        lines.append(text)
    lines += [_call(c) for c in m.get("tool_calls") or ()]
    return "\n".join(lines)


def _turn(index: int, m: dict[str, Any]) -> dict[str, Any]:
    calls = m.get("tool_calls") or ()
    listed = tuple(
        {"index": str(j), "id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
        for j, c in enumerate(calls, 1)
    )
    return {
        "index": str(index),
        "role": m["role"],
        "content": content_text(m),
        "name": m.get("name") or "",
        "tool_call_id": m.get("tool_call_id") or "",
        "tool_calls": ListValue("\n".join(_call(c) for c in calls), listed),
        # "true" for the turn's own role, empty (so a section over it is skipped) for the others.
        **{f"is_{r}": "true" if m["role"] == r else "" for r in ROLES},
    }
