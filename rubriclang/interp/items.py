"""Items: JSON Lines, read lazily, with errors that name the file and line.

Pointwise: `{"id", "input", "response", "reference"?, "rubric"?, "gold"?}`.
Pairwise:  `{"id", "input", "responses": {"<id1>": "...", "<id2>": "..."}, "rubric"?, "gold"?}`
(or `"responses": [["<id1>", "..."], ["<id2>", "..."]]`, whose order survives
writers that sort object keys: `item_to_json` writes that).
`rubric` is the item's own score rubric, shown by `llm.rate`'s
`template = prometheus` in place of the criterion's question and anchors.
Any item may carry `annotations` (human.annotation) and `recorded`
(recorded.value): `{KEY: value}` for a pointwise item, `{CANDIDATE: {KEY: value}}`
for a pairwise one. The format is documented in docs/traces.md ("Items and
value tables").

Read for a rubric that declares its item's shape (`item { ... }`), every
declared field is validated against its type (`rubriclang.items.validate`)
and kept as it is in `Item.fields`; a structured `input` or response is
also kept as its default rendering (`rubriclang.items.render`) in `input`
and `candidates`, the text that criteria reading text see.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs

from rubriclang.errors import LocatedError
from rubriclang.items.shape import ItemShape
from rubriclang.jsonl import read_jsonl

POINTWISE_CANDIDATE = "response"


class ItemError(LocatedError):
    """Bad input data: items, value tables, traces."""


@attrs.frozen
class Item:
    """One thing to judge: an input and one or two candidate responses."""

    id: str
    input: str
    candidates: dict[str, str]  # candidate id -> response, in order
    reference: str | None = None
    gold: Any = None
    annotations: dict[str, dict[str, Any]] = attrs.field(factory=dict)  # candidate -> key -> value
    recorded: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    rubric: str | None = None  # the item's own score rubric (template = prometheus)
    graph: str | None = None  # the graph of a folder of compiled graphs that judges it (default: its id)
    # The declared fields beyond the built-in ones and a structured input or
    # response, as read: name -> value (`response` -> candidate -> value).
    # Empty without a declared shape.
    fields: dict[str, Any] = attrs.field(factory=dict)
    line: int = attrs.field(default=0, eq=False)

    @property
    def mode(self) -> str:
        return "pairwise" if len(self.candidates) == 2 and POINTWISE_CANDIDATE not in self.candidates else "pointwise"

    @property
    def candidate_ids(self) -> tuple[str, ...]:
        return tuple(self.candidates)


def _text(value: object, where: str, field: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        hint = "write it as a JSON string, in quotes"
        if field == "input" or field.startswith("response"):  # the fields a rubric may declare structured
            hint += "; a conversation or JSON is read for a rubric that declares it (`item { ... }`): judge or read "
            hint += "the items with that rubric"
        raise ItemError(where, f"`{field}` must be a string, got {_json_type(value)}", hint)
    return value


def _as_read(value: Any, where: str, field: str) -> Any:
    return value


def _json_type(value: object) -> str:
    """The JSON name of a decoded value's type."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    kinds: dict[type, str] = {dict: "an object", list: "an array"}
    return kinds.get(type(value), type(value).__name__)


def _optional_text(value: object, where: str, field: str) -> str | None:
    if value is None:
        return None
    return _text(value, where, field)


def _per_candidate(raw: object, cids: tuple[str, ...], where: str, field: str) -> dict[str, dict[str, Any]]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ItemError(where, f"`{field}` must be an object")
    if cids == (POINTWISE_CANDIDATE,):
        return {POINTWISE_CANDIDATE: dict(raw)}
    out = {}
    for cid, values in raw.items():
        if cid not in cids:
            raise ItemError(
                where,
                f"`{field}` names candidate `{cid}`, which the item does not have",
                f"candidates: {', '.join(cids)}",
            )
        if not isinstance(values, dict):
            raise ItemError(where, f"`{field}.{cid}` must be an object of KEY: value")
        out[cid] = dict(values)
    return out


def _pairs(responses: object, where: str) -> dict[str, Any] | None:
    """`responses` as candidate id -> text, in order: an object, or a list of
    `[id, text]` pairs; None when it is neither."""
    if isinstance(responses, dict):
        return {str(k): v for k, v in responses.items()}
    if not isinstance(responses, list):
        return None
    out: dict[str, Any] = {}
    for pair in responses:
        if not (
            isinstance(pair, list)
            and len(pair) == 2
            and isinstance(pair[0], (str, int))
            and not isinstance(pair[0], bool)
        ):
            raise ItemError(
                where,
                "a `responses` list must hold `[id, text]` pairs",
                'write `[["a", "..."], ["b", "..."]]` or an object `{"a": "...", "b": "..."}`',
            )
        if str(pair[0]) in out:
            raise ItemError(
                where, f"`responses` names candidate `{pair[0]}` twice", "give the two candidates distinct ids"
            )
        out[str(pair[0])] = pair[1]
    return out


def item_to_json(item: Item) -> dict[str, Any]:
    """`item` in the items-file format, which `item_from_json` reads back as
    the same item; fields with no value are left out. A pairwise item's
    `responses` are `[id, text]` pairs, so that their order (which candidate
    is first) survives canonical JSON's sorted keys."""
    pointwise = tuple(item.candidates) == (POINTWISE_CANDIDATE,)
    out: dict[str, Any] = {"id": item.id, "input": item.input}
    if pointwise:
        out["response"] = item.candidates[POINTWISE_CANDIDATE]
    else:
        out["responses"] = [[cid, text] for cid, text in item.candidates.items()]
    for field in ("reference", "rubric", "gold", "graph"):
        if getattr(item, field) is not None:
            out[field] = getattr(item, field)
    for field in ("annotations", "recorded"):
        values = getattr(item, field)
        if values:
            out[field] = values.get(POINTWISE_CANDIDATE, {}) if pointwise else values
    for name, value in item.fields.items():  # structured fields as they were read
        if name == "response":
            if pointwise:
                out["response"] = value[POINTWISE_CANDIDATE]
            else:
                out["responses"] = [[cid, value[cid]] for cid in item.candidates]
        else:
            out[name] = value
    return out


def item_from_json(obj: Any, where: str, line: int = 0, shape: ItemShape | None = None) -> Item:
    """Validate one decoded JSON object as an item (against `shape`, the
    rubric's declared item shape, when it has one)."""
    if not isinstance(obj, dict):
        raise ItemError(where, "an item must be a JSON object")
    if "id" not in obj:
        raise ItemError(where, "the item has no `id`", "give every item a unique `id`")
    item_id = obj["id"]
    if not isinstance(item_id, (str, int)) or isinstance(item_id, bool):
        raise ItemError(where, "`id` must be a string or an integer")
    # A response of a declared type other than text is read by `read_fields`.
    text = _text if shape is None or not shape.response.structured else _as_read
    if "responses" in obj:
        responses = _pairs(obj["responses"], where)
        if responses is None or len(responses) != 2:
            n = len(responses) if responses is not None else "not an object"
            raise ItemError(where, f"a pairwise item needs exactly two `responses` keyed by candidate id (got {n})")
        candidates = {k: text(v, where, f"responses.{k}") for k, v in responses.items()}
    elif "response" in obj:
        candidates = {POINTWISE_CANDIDATE: text(obj["response"], where, "response")}
    else:
        raise ItemError(where, "the item has neither `response` nor `responses`")
    cids = tuple(candidates)
    fields: dict[str, Any] = {}
    input_text = None
    if shape is not None:
        from rubriclang.items.fields import read_fields  # only for rubrics that declare a shape

        fields, input_text, candidates = read_fields(shape, obj, candidates, where, ItemError)
    return Item(
        id=str(item_id),
        input=_text(obj.get("input"), where, "input") if input_text is None else input_text,
        candidates=candidates,
        reference=_optional_text(obj.get("reference"), where, "reference"),
        gold=obj.get("gold"),
        rubric=_optional_text(obj.get("rubric"), where, "rubric"),
        graph=_optional_text(obj.get("graph"), where, "graph"),
        annotations=_per_candidate(obj.get("annotations"), cids, where, "annotations"),
        recorded=_per_candidate(obj.get("recorded"), cids, where, "recorded"),
        fields=fields,
        line=line,
    )


def read_items(path: str, shape: ItemShape | None = None) -> Iterator[Item]:
    """Items from a JSON Lines file, lazily; blank lines are skipped.

    Raises ItemError (naming file and line) on malformed JSON, a missing or
    duplicate id, or a malformed item, or one that does not fit `shape` (the
    judging rubric's declared item shape; the field's path is named).
    """
    seen: set[str] = set()
    for where, obj in read_jsonl(path, ItemError):
        item = item_from_json(obj, where, int(where.rsplit(":", 1)[1]), shape)
        if item.id in seen:
            raise ItemError(where, f"duplicate item id `{item.id}`", "item ids must be unique within a file")
        seen.add(item.id)
        yield item
