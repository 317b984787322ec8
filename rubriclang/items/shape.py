"""The shape of the items a rubric judges, as its `item { ... }` declares it.

Plain data, free of syntax types: the checker builds an `ItemShape` from the
declaration and hands it on in the checked graph; the item reader validates
each item against it, and prompts render its fields. Importing this module
costs nothing on the check path (no JSON Schema library).
"""

from __future__ import annotations

from typing import Any

import attrs

from rubriclang.diagnostics.span import Span
from rubriclang.records import frozen

# Every field kind, and what may stand inside `[...]` (only `list[text]`).
KINDS = ("text", "number", "bool", "json", "list", "documents", "conversation")
LIST_ELEMENTS = ("text",)
# The item fields the reader has always known, with the kinds each may be
# declared as; `input` and `response` are part of every shape (as `text`
# unless declared otherwise: `ItemShape.get`), `reference` and `rubric` only
# when declared.
BUILTIN = {
    "input": ("text", "conversation"),
    "response": ("text", "json", "conversation"),
    "reference": ("text",),
    "rubric": ("text",),
}
# Item fields that hold no judged content and cannot be declared.
RESERVED = ("id", "responses", "gold", "annotations", "recorded", "graph")
# A conversation's roles; inside a section over one, `{{#is_user}}` ... is
# shown for that role's turns alone, so a template can label turns in its
# own words (MT-Bench's `### User:` and `### Assistant A:`).
ROLES = ("system", "user", "assistant", "tool")
# The fields a template sees inside a `{{#field}} ... {{/field}}` section
# over each kind of list: one element's values.
ELEMENT_NAMES: dict[str, tuple[str, ...]] = {
    "list": ("index", "value"),
    "documents": ("index", "id", "title", "text"),
    "conversation": ("index", "role", "content", "name", "tool_call_id", "tool_calls", *(f"is_{r}" for r in ROLES)),
}
TOOL_CALL_NAMES = ("index", "id", "name", "arguments")
# The version of the default renderings (`render`): part of the hash of every
# criterion that shows a declared field, so a change invalidates replay and
# cache as a template edit does. Bump it with any change to what they make.
RENDER_VERSION = 1


@frozen
class FieldSpec:
    """One declared field: its kind (`KINDS`), list element kind, whether it
    may be absent, and for `json` the JSON Schema its value must satisfy
    (decoded; `schema_path` is where it was read from, as written)."""

    name: str
    kind: str
    element: str | None = None
    optional: bool = False
    schema: Any = None
    schema_path: str | None = None
    span: Span = attrs.field(eq=False, repr=False, kw_only=True, default=None)

    @property
    def type_text(self) -> str:
        """The type as a rubric writes it, e.g. `list[text]?`."""
        text = self.kind + (f"[{self.element}]" if self.element else "")
        return text + ("?" if self.optional else "")

    @property
    def iterable(self) -> bool:
        """Whether a template section over the field shows each element."""
        return self.kind in ELEMENT_NAMES

    @property
    def structured(self) -> bool:
        """Whether the field's value is anything but plain text."""
        return self.kind != "text"

    def to_json(self) -> dict[str, Any]:
        """The spec's meaning as plain data (for hashes)."""
        out: dict[str, Any] = {"name": self.name, "type": self.type_text}
        if self.schema is not None:
            out["schema"] = self.schema
        return out


_TEXT_RESPONSE = FieldSpec("response", "text")
_TEXT_INPUT = FieldSpec("input", "text", optional=True)


@frozen
class ItemShape:
    """The declared fields, in declaration order."""

    fields: tuple[FieldSpec, ...]
    span: Span = attrs.field(eq=False, repr=False, kw_only=True, default=None)

    def get(self, name: str) -> FieldSpec | None:
        """The field called `name`: declared, or `input`/`response` as text."""
        for f in self.fields:
            if f.name == name:
                return f
        return {"input": _TEXT_INPUT, "response": _TEXT_RESPONSE}.get(name)

    @property
    def response(self) -> FieldSpec:
        spec = self.get("response")
        assert spec is not None  # always part of a shape
        return spec

    @property
    def extra(self) -> tuple[FieldSpec, ...]:
        """The declared fields that are not the reader's built-in ones."""
        return tuple(f for f in self.fields if f.name not in BUILTIN)

    def to_json(self) -> list[dict[str, Any]]:
        """The shape's meaning as plain data: part of the graph's hash."""
        return [f.to_json() for f in self.fields]


def shape_of(judge: object) -> ItemShape | None:
    """The declared item shape of a judge: a checked graph's; None for a
    folder of graphs compiled per item (`GraphSet`), whose items are read
    as docs/items.md says, and for a graph that declares none."""
    return getattr(judge, "item_shape", None)
