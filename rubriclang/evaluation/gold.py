"""Gold labels, read against the judge's output type (docs/evaluation.md).

One reader for every consumer of gold (`rbg eval`, the judge audit, `rbg
fit`, `rbg items convert`), so a gold value means the same thing everywhere.

Public API:

- `GoldType`, `gold_type(graph, mode, candidates)`: what a gold value must be
  for one item: the pointwise readout's output (`bool`, `ordinal[lo, hi]`,
  `score[lo, hi]`, `label{...}`), or, pairwise, one of the item's candidate
  ids or `tie`.
- `LabelMap`, `parse_label_map("1=r1,2=r2,0=tie")`: codes a data set writes
  (PandaLM's 1/2/0, say) mapped onto gold values; with a map, every gold
  value must be one of its codes.
- `parse_gold(value, gtype, label_map)`: the canonical gold value, or
  `GoldValueError` saying what was expected.
- `item_gold(item, graph, where, mode, label_map)`: one item's gold (None
  when it has none), or `GoldError` at `where`.
- `read_gold(items, graph, path, mode, label_map)`: item id -> gold for the
  items that have gold; `GoldError` at `path:line` for the first bad one.
  `golds(...)`: the same as (item, gold or None) pairs, as items pass.

Accepted spellings: bool gold is JSON `true`/`false` or the strings "true",
"false", "yes", "no" (any case); numeric gold is a JSON number or a string
holding one, finite, inside the interval (an ordinal's a whole number);
label gold is one of the labels exactly; pairwise gold is a candidate id
exactly (a number is read as its decimal spelling) or "tie". `null` or a
missing `gold` means no gold. Anything else is an error, never a guess.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from typing import Any

import attrs

from rubriclang.catalog.types import JType, fmt_num
from rubriclang.checker.graph import CheckedGraph
from rubriclang.errors import LocatedError
from rubriclang.interp.domain import coerce
from rubriclang.interp.items import Item

TIE = "tie"
_DECIMAL = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", re.ASCII)
_TRUE = ("true", "yes")
_FALSE = ("false", "no")


class GoldError(LocatedError):
    """A gold value (or a label map) that does not fit the judge: at `path:line`."""


class GoldValueError(ValueError):
    """A gold value that does not fit its type (no location yet)."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.message = message
        self.hint = hint


@attrs.frozen
class GoldType:
    """What a gold value must be: `kind` is bool, ordinal, score, label or
    pairwise; `type` the pointwise output type; `candidates` the pairwise
    item's candidate ids."""

    kind: str
    type: JType | None = None
    candidates: tuple[str, ...] = ()

    @property
    def output(self) -> JType:
        """`type`, for the pointwise kinds (all but pairwise), which have one."""
        assert self.type is not None, self.kind
        return self.type

    def expected(self) -> str:
        """What a gold value of this type looks like, for error messages."""
        if self.kind == "pairwise":
            ids = " or ".join(f"`{c}`" for c in self.candidates)
            return f"a candidate id ({ids}) or `{TIE}`"
        if self.kind == "bool":
            return 'a bool: true or false (or "true", "false", "yes", "no")'
        t = self.output
        if self.kind == "label":
            return "one of the labels " + ", ".join(f"`{x}`" for x in t.labels)
        if self.kind == "ordinal":
            return f"a whole number in `{t}`"
        return f"a number in `{t}`"


def gold_type(graph: CheckedGraph, mode: str, candidates: tuple[str, ...] = ()) -> GoldType:
    """The gold type of an item judged in `mode` (its candidates, pairwise)."""
    if mode == "pairwise":
        return GoldType("pairwise", candidates=tuple(candidates))
    out = graph.pointwise_readout.output.as_optional(False)
    return GoldType(out.kind, out)


def _code(value: Any) -> str | None:
    """A gold value as a label-map key: strings as written, numbers in the
    language's spelling (1 and 1.0 are both `1`), bools as true/false."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return fmt_num(value) if math.isfinite(value) else None
    if isinstance(value, str):
        return value
    return None


@attrs.frozen
class LabelMap:
    """Data-set codes -> gold values as written (parsed against the judge's
    type when used). Built by `parse_label_map`."""

    codes: dict[str, str]

    def lookup(self, value: Any) -> str:
        code = _code(value)
        if code is None or code not in self.codes:
            have = ", ".join(f"`{c}`" for c in self.codes)
            raise GoldValueError(
                f"gold {_show(value)} is not a code of the label map (it maps {have})",
                "add the code to --label, or fix the gold value",
            )
        return self.codes[code]


def parse_label_map(specs: str | Iterable[str]) -> LabelMap:
    """`CODE=VALUE` pairs, comma-separated, from one or more strings; raises
    GoldValueError on a malformed pair or a code given twice."""
    parts = [specs] if isinstance(specs, str) else list(specs)
    codes: dict[str, str] = {}
    for spec in parts:
        for pair in spec.split(","):
            code, eq, value = pair.partition("=")
            code, value = code.strip(), value.strip()
            if not eq or not code or not value:
                raise GoldValueError(
                    f"label map entry `{pair.strip()}` is not CODE=VALUE", "write it like 1=r1,2=r2,0=tie"
                )
            if code in codes:
                raise GoldValueError(f"label map code `{code}` is given twice")
            codes[code] = value
    if not codes:
        raise GoldValueError("the label map is empty", "write it like 1=r1,2=r2,0=tie")
    return LabelMap(codes)


def _show(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        # JSON's spelling escapes quotes and control characters.
        return json.dumps(value if len(value) <= 40 else value[:37] + "...", ensure_ascii=False)
    if isinstance(value, (list, dict)):
        return "a list" if isinstance(value, list) else "an object"
    return fmt_num(value) if isinstance(value, (int, float)) else repr(value)


def _number(value: Any) -> Any:
    """A JSON number, or a string holding a finite one; None otherwise."""
    if isinstance(value, str):
        text = value.strip()
        if not _DECIMAL.fullmatch(text):
            return None
        x = float(text)
        if not math.isfinite(x):
            return None
        return int(text) if text.lstrip("+-").isdigit() else x
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return value if math.isfinite(value) else None
    except OverflowError:  # an integer too large for a float
        return None


def parse_gold(value: Any, gtype: GoldType, label_map: LabelMap | None = None) -> Any:
    """`value` as the canonical gold of `gtype` (bool, int, float, label or
    candidate id), after `label_map` when one is given; raises GoldValueError."""
    raw = value
    if label_map is not None:
        value = label_map.lookup(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise GoldValueError(
            f"gold {_show(raw)} is not a finite number; expected {gtype.expected()}",
            "a number too large for a float (1e400) reads as Infinity",
        )
    bad = GoldValueError(f"gold {_show(raw)} is not {gtype.expected()}", _hint(gtype, raw, label_map))
    if gtype.kind == "pairwise":
        code = _code(value)
        if code == TIE or code in gtype.candidates:
            return code
        raise bad
    if gtype.kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
            return value.strip().lower() in _TRUE
        raise bad
    if gtype.kind == "label":
        if isinstance(value, str) and value in gtype.output.labels:
            return value
        raise bad
    x = _number(value)
    if x is None:
        raise bad
    x, problem = coerce(x, gtype.output)
    if problem:
        raise GoldValueError(f"gold {problem}; expected {gtype.expected()}", _hint(gtype, raw, label_map))
    return x


def _hint(gtype: GoldType, raw: Any, label_map: LabelMap | None) -> str:
    if label_map is not None:
        return "the label map sends this code to a value the judge cannot output; fix the map"
    if gtype.kind == "pairwise":
        return (
            "map the data set's codes onto candidate ids with --label (e.g. 1="
            + (gtype.candidates[0] if gtype.candidates else "a")
            + ",0=tie)"
        )
    return "fix the gold value, or map the data set's codes with --label CODE=VALUE"


def item_gold(
    item: Item, graph: CheckedGraph, where: str, mode: str | None = None, label_map: LabelMap | None = None
) -> Any:
    """One item's gold in canonical form (None when it has none); raises
    GoldError at `where` when the value does not fit the judge."""
    if item.gold is None:
        return None
    mode = mode or item.mode
    if mode not in graph.readouts:
        raise GoldError(
            where,
            f"item `{item.id}` is {mode}, but the graph `{graph.name}` has no `{mode}` readout to compare its gold "
            "with",
        )
    try:
        return parse_gold(item.gold, gold_type(graph, mode, item.candidate_ids), label_map)
    except GoldValueError as exc:
        raise GoldError(where, f"item `{item.id}`: {exc.message}", exc.hint) from None


def golds(
    items: Iterable[Item], graph: CheckedGraph, path: str, mode: str | None = None, label_map: LabelMap | None = None
) -> Iterator[tuple[Item, Any]]:
    """Each item with its canonical gold (None when it has none), as they
    pass. Raises GoldError at `path:line` for the first value that does not fit."""
    for item in items:
        yield item, item_gold(item, graph, f"{path}:{item.line}" if item.line else path, mode, label_map)


def read_gold(
    items: Iterable[Item], graph: CheckedGraph, path: str, mode: str | None = None, label_map: LabelMap | None = None
) -> dict[str, Any]:
    """Item id -> canonical gold, for the items that have gold. Raises
    GoldError at `path:line` for the first value that does not fit."""
    return {item.id: g for item, g in golds(items, graph, path, mode, label_map) if g is not None}
