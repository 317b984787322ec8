"""Reading an item's declared fields: the one place the item reader
(`interp.items`) applies a rubric's declared shape."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rubriclang.items.render import render
from rubriclang.items.shape import BUILTIN, ItemShape
from rubriclang.items.validate import ShapeError, check_value

POINTWISE_CANDIDATE = "response"  # as `interp.items` names a pointwise item's candidate


def read_fields(
    shape: ItemShape, obj: dict[str, Any], candidates: dict[str, Any], where: str, error: Callable[..., Exception]
) -> tuple[dict[str, Any], str | None, dict[str, Any]]:
    """(fields, input text, candidates) of the decoded item `obj`, whose
    candidates as read are `candidates`: every declared field validated
    (`error(where, message, hint)` raised at the first that does not fit,
    naming its path), the fields beyond the built-in ones and a structured
    input or response kept as read, and such an input's and the responses'
    default renderings (None: the input is text)."""
    fields: dict[str, Any] = {}
    input_text = None
    try:
        for spec in shape.fields:
            if spec.name == "response":
                continue
            value = obj.get(spec.name)
            check_value(spec, value, spec.name)
            if spec.name == "input" and spec.structured:
                fields["input"] = value
                input_text = render(spec, value)
            elif spec.name not in BUILTIN and value is not None:
                fields[spec.name] = value
        response = shape.response
        pointwise = tuple(candidates) == (POINTWISE_CANDIDATE,)
        for cid, value in candidates.items():
            check_value(response, value, "response" if pointwise else f"responses.{cid}")
    except ShapeError as exc:
        raise error(where, str(exc), exc.hint) from None
    if response.structured:
        fields["response"] = dict(candidates)
        candidates = {cid: render(response, value) for cid, value in candidates.items()}
    return fields, input_text, candidates
