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
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs

from rubriclang.errors import LocatedError
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
        raise ItemError(
            where, f"`{field}` must be a string, got {_json_type(value)}", "write it as a JSON string, in quotes"
        )
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
    return out


def item_from_json(obj: Any, where: str, line: int = 0) -> Item:
    """Validate one decoded JSON object as an item."""
    if not isinstance(obj, dict):
        raise ItemError(where, "an item must be a JSON object")
    if "id" not in obj:
        raise ItemError(where, "the item has no `id`", "give every item a unique `id`")
    item_id = obj["id"]
    if not isinstance(item_id, (str, int)) or isinstance(item_id, bool):
        raise ItemError(where, "`id` must be a string or an integer")
    if "responses" in obj:
        responses = _pairs(obj["responses"], where)
        if responses is None or len(responses) != 2:
            n = len(responses) if responses is not None else "not an object"
            raise ItemError(where, f"a pairwise item needs exactly two `responses` keyed by candidate id (got {n})")
        candidates = {k: _text(v, where, f"responses.{k}") for k, v in responses.items()}
    elif "response" in obj:
        candidates = {POINTWISE_CANDIDATE: _text(obj["response"], where, "response")}
    else:
        raise ItemError(where, "the item has neither `response` nor `responses`")
    cids = tuple(candidates)
    return Item(
        id=str(item_id),
        input=_text(obj.get("input"), where, "input"),
        candidates=candidates,
        reference=_optional_text(obj.get("reference"), where, "reference"),
        gold=obj.get("gold"),
        rubric=_optional_text(obj.get("rubric"), where, "rubric"),
        graph=_optional_text(obj.get("graph"), where, "graph"),
        annotations=_per_candidate(obj.get("annotations"), cids, where, "annotations"),
        recorded=_per_candidate(obj.get("recorded"), cids, where, "recorded"),
        line=line,
    )


def read_items(path: str) -> Iterator[Item]:
    """Items from a JSON Lines file, lazily; blank lines are skipped.

    Raises ItemError (naming file and line) on malformed JSON, a missing or
    duplicate id, or a malformed item.
    """
    seen: set[str] = set()
    for where, obj in read_jsonl(path, ItemError):
        item = item_from_json(obj, where, int(where.rsplit(":", 1)[1]))
        if item.id in seen:
            raise ItemError(where, f"duplicate item id `{item.id}`", "item ids must be unique within a file")
        seen.add(item.id)
        yield item
