"""Judging per element (`each ELEMENT in FIELD`): the elements a criterion
may be judged on for each kind of list field, and, for one item's value of
the field, each element with its stable key and the field's value narrowed
to that element alone.

A criterion judged per element sees the item with the field narrowed: its
template's section over the field shows the one element, a rule reading
the field reads it alone. Keys are stable across runs and orders: a
document's id, a tool call's id, a turn's or a text's index in the field.
"""

from __future__ import annotations

from typing import Any

# Field kind -> the elements a criterion may be judged on.
ELEMENTS: dict[str, tuple[str, ...]] = {
    "documents": ("document",),
    "list": ("text",),
    "conversation": ("turn", "assistant_turn", "tool_call"),
}


def elements(element: str, value: Any) -> list[tuple[Any, Any]]:
    """(key, the field's value narrowed to the element) for each element of
    `value` (a validated value of the field; None, when absent, has none)."""
    if value is None:
        return []
    if element == "document":
        return [(d["id"], [d]) for d in value]
    if element in ("text", "turn"):
        return [(i, [v]) for i, v in enumerate(value)]
    if element == "assistant_turn":
        return [(i, [m]) for i, m in enumerate(value) if m.get("role") == "assistant"]
    if element == "tool_call":
        return _tool_calls(value)
    raise ValueError(f"no element `{element}`")  # the checker admits only ELEMENTS'


def _tool_calls(messages: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
    """Each call as its assistant turn holding that call alone, followed by
    its tool result when there is one."""
    results = {m.get("tool_call_id"): m for m in messages if m.get("role") == "tool"}
    out = []
    for m in messages:
        if m.get("role") != "assistant":
            continue
        for call in m.get("tool_calls") or ():
            narrowed: list[dict[str, Any]] = [{**m, "tool_calls": [call]}]
            if call.get("id") in results:
                narrowed.append(results[call["id"]])
            out.append((call.get("id"), narrowed))
    return out
