"""The requests of a per-element criterion (`each ELEMENT in FIELD`): one
per element of the field in the judged candidate's item, each judging the
item with the field narrowed to that element (`rubriclang.items.elements`)."""

from __future__ import annotations

from typing import Any

import attrs

from rubriclang.checker.graph import Criterion
from rubriclang.interp.backend import JudgmentRequest
from rubriclang.interp.items import Item
from rubriclang.items.elements import elements
from rubriclang.items.render import render


def per_element(criterion: Criterion) -> Criterion:
    """The criterion as each element's judgment is asked of a backend: of the
    element type (`bool` for a `list[bool]`), so an answer is read as one."""
    return attrs.evolve(criterion, type=criterion.type.element)


def element_requests(item: Item, cid: str, criterion: Criterion) -> list[tuple[Any, JudgmentRequest]]:
    """(element key, request) for each element `criterion` (`per_element`'s)
    judges in candidate `cid`."""
    assert criterion.each is not None
    element, field = criterion.each
    spec = next(f for f in criterion.item_fields if f.name == field)  # the checker holds it read
    fields = item.fields
    value = fields.get("response", {}).get(cid) if field == "response" else fields.get(field)
    out = []
    for key, narrowed in elements(element, value):
        if field == "response":
            one = attrs.evolve(
                item,
                fields={**fields, "response": {**fields["response"], cid: narrowed}},
                candidates={**item.candidates, cid: render(spec, narrowed)},
            )
        elif field == "input":
            one = attrs.evolve(item, fields={**fields, "input": narrowed}, input=render(spec, narrowed))
        else:
            one = attrs.evolve(item, fields={**fields, field: narrowed})
        out.append((key, JudgmentRequest(one, cid, criterion)))
    return out
