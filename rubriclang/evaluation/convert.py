"""`rbg items convert`: a public data set's records -> items, gold labels read by
`evaluation.gold` (docs/items.md).

A mapping names, for each item field, where its value is in a record (a
field name, or a dotted path into nested objects), which fields hold gold
labels, how label codes map onto gold values, and how several annotators'
labels combine. Everything a record lacks, every code the label map does not
name, and every tie the policy does not settle is an error at the record's
`path:line`: nothing is guessed or dropped without being counted.
"""

from __future__ import annotations

import collections
import json
import math
import re
from collections.abc import Iterable, Iterator
from typing import Any

import attrs

from rubriclang.catalog.types import fmt_num
from rubriclang.evaluation.gold import GoldValueError, LabelMap
from rubriclang.interp.items import ItemError

# Item fields a mapping may fill, besides `responses.CID`, `annotations.KEY`
# and `recorded.KEY` (pairwise: `annotations.CID.KEY`).
TEXT_FIELDS = ("id", "input", "response", "reference", "rubric")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


@attrs.frozen
class Mapping:
    """How records become items."""

    fields: dict[str, str]  # item field (e.g. `responses.a`) -> source path
    gold: tuple[str, ...] = ()  # source paths of the gold label(s)
    labels: LabelMap | None = None  # data-set code -> gold value; None: values as they are
    combine: str = "majority"
    on_tie: str = "error"

    @property
    def candidates(self) -> tuple[str, ...]:
        return tuple(k.split(".", 1)[1] for k in self.fields if k.startswith("responses."))


@attrs.frozen
class Counts:
    """What a conversion did, for its summary line."""

    items: int = 0
    with_gold: int = 0
    no_gold: int = 0  # every annotator's value was missing or empty
    ties_dropped: int = 0
    ties_kept: int = 0

    def text(self) -> str:
        parts = [f"{self.items} item{'' if self.items == 1 else 's'}", f"{self.with_gold} with gold"]
        if self.no_gold:
            parts.append(f"{self.no_gold} without (no annotator gave a label)")
        if self.ties_dropped:
            parts.append(f"{self.ties_dropped} without (annotators tied; --on-tie drop)")
        if self.ties_kept:
            parts.append(f"{self.ties_kept} annotator ties written as `tie`")
        return ", ".join(parts)


def parse_field(spec: str) -> tuple[str, str]:
    """`TARGET=SOURCE` of `--field`; raises ValueError with the reason."""
    target, sep, source = spec.partition("=")
    target, source = target.strip(), source.strip()
    if not sep or not target or not source:
        raise ValueError(f"`{spec}` is not TARGET=SOURCE (e.g. input=instruction)")
    head = target.split(".", 1)[0]
    if target in TEXT_FIELDS:
        return target, source
    if head == "responses" and target.count(".") == 1 and target.split(".")[1]:
        return target, source
    if head in ("annotations", "recorded") and 1 <= target.count(".") <= 2 and all(target.split(".")[1:]):
        return target, source
    raise ValueError(
        f"`{target}` is not an item field: use one of {', '.join(TEXT_FIELDS)}, "
        "responses.CANDIDATE, annotations.KEY, recorded.KEY (pairwise: annotations.CANDIDATE.KEY)"
    )


def _as_text(value: Any) -> str:
    """A scalar as text: numbers as the language spells them (`1.0` -> `1`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return fmt_num(value) if isinstance(value, (int, float)) else str(value)


def lookup(record: dict[str, Any], path: str) -> tuple[bool, Any]:
    """(found, value) of `path` in a record: the field of that exact name, else
    a dotted path into nested objects and lists (`scores.overall`, `turns.0`)."""
    if path in record:
        return True, record[path]
    value: Any = record
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return False, None
    return True, value


def _cell(value: Any) -> Any:
    """A label or value as data: a numeric string (as CSV cells are) is a number."""
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        v = float(value)
        return int(v) if re.fullmatch(r"[+-]?\d+", value.strip()) else v
    return value


def _missing(value: Any) -> bool:
    return (
        value is None
        or (isinstance(value, str) and not value.strip())
        or (isinstance(value, float) and math.isnan(value))
    )


def _fields_text(record: dict[str, Any]) -> str:
    names = list(record)
    return ", ".join(f"`{n}`" for n in names[:12]) + (" ..." if len(names) > 12 else "")


def _required(record: dict[str, Any], path: str, target: str, where: str) -> Any:
    found, value = lookup(record, path)
    if not found:
        raise ItemError(where, f"the record has no `{path}` (for `{target}`)", f"its fields: {_fields_text(record)}")
    return value


def _text(value: Any, target: str, where: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, (dict, list)):
        raise ItemError(
            where, f"`{target}` must be text, the source holds {'an object' if isinstance(value, dict) else 'a list'}"
        )
    return value if isinstance(value, str) else _as_text(value)


class Converter:
    """Turns records into item objects under one mapping."""

    def __init__(self, mapping: Mapping, source_fields: Iterable[str] = ()):
        self.mapping = mapping
        fields = dict(mapping.fields)
        # A source field named as an item field maps onto it unless mapped otherwise.
        taken = set(fields.values())
        for name in TEXT_FIELDS:
            if name not in fields and name in source_fields and name not in taken:
                fields[name] = name
        self.fields = fields
        self.cids = mapping.candidates
        self.counts = Counts()
        self._seen: dict[str | None, str] = {}  # item id -> where it was first
        self._row = 0

    def items(self, records: Iterable[tuple[str, dict[str, Any]]]) -> Iterator[dict[str, Any]]:
        for where, record in records:
            self._row += 1
            yield self.item(record, where)

    def item(self, record: dict[str, Any], where: str) -> dict[str, Any]:
        m = self.mapping
        f = self.fields
        if self.cids and "response" in f:
            raise ItemError(
                where,
                "the mapping gives both `response` and `responses.*`",
                "an item is pointwise (response) or pairwise (responses.A, responses.B)",
            )
        if self.cids and len(self.cids) != 2:
            raise ItemError(
                where, f"a pairwise item needs exactly two `responses.*` fields, the mapping gives {len(self.cids)}"
            )
        if not self.cids and "response" not in f:
            raise ItemError(
                where,
                "the mapping gives no response",
                "add --field response=FIELD, or --field responses.a=F1 --field responses.b=F2 for pairs",
            )
        item_id = _text(_required(record, f["id"], "id", where), "id", where) if "id" in f else str(self._row)
        if item_id in self._seen:
            raise ItemError(
                where,
                f"duplicate item id `{item_id}` (first at {self._seen[item_id]})",
                "map `id` to a field that is unique, or leave it out to number the records",
            )
        self._seen[item_id] = where
        out: dict[str, Any] = {"id": item_id}
        out["input"] = _text(_required(record, f["input"], "input", where), "input", where) if "input" in f else ""
        if self.cids:
            out["responses"] = {
                cid: _text(
                    _required(record, f[f"responses.{cid}"], f"responses.{cid}", where), f"responses.{cid}", where
                )
                or ""
                for cid in self.cids
            }
        else:
            out["response"] = _text(_required(record, f["response"], "response", where), "response", where) or ""
        for name in ("reference", "rubric"):
            if name in f:
                value = _text(_required(record, f[name], name, where), name, where)
                if value is not None:
                    out[name] = value
        for table in ("annotations", "recorded"):
            values = self._table(record, table, where)
            if values:
                out[table] = values
        if m.gold:
            gold = self._gold(record, where)
            if gold is not None:
                out["gold"] = gold
        self.counts = attrs.evolve(self.counts, items=self.counts.items + 1)
        return out

    def _table(self, record: dict[str, Any], table: str, where: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for target, path in self.fields.items():
            parts = target.split(".")
            if parts[0] != table:
                continue
            value = _cell(_required(record, path, target, where))
            if self.cids:
                if len(parts) != 3 or parts[1] not in self.cids:
                    raise ItemError(
                        where,
                        f"`{target}`: a pairwise item's {table} are `{table}.CANDIDATE.KEY`, CANDIDATE one of "
                        f"{', '.join(self.cids)}",
                    )
                out.setdefault(parts[1], {})[parts[2]] = value
            else:
                if len(parts) != 2:
                    raise ItemError(where, f"`{target}`: a pointwise item's {table} are `{table}.KEY`")
                out[parts[1]] = value
        return out

    def _gold(self, record: dict[str, Any], where: str) -> Any:
        m = self.mapping
        labels = []
        for path in m.gold:
            raw = _required(record, path, "gold", where)
            if _missing(raw):
                continue
            labels.append(self._label(raw, path, where))
        if not labels:
            self.counts = attrs.evolve(self.counts, no_gold=self.counts.no_gold + 1)
            return None
        value = labels[0] if len(labels) == 1 else self._combine(labels, where)
        if value is None:
            return None
        if self.cids and value not in (*self.cids, "tie"):
            raise ItemError(
                where,
                f"gold `{value}` is neither a candidate ({', '.join(self.cids)}) nor `tie`",
                f"map the data set's codes onto them, e.g. --label 1={self.cids[0]},2={self.cids[1]}",
            )
        self.counts = attrs.evolve(self.counts, with_gold=self.counts.with_gold + 1)
        return value

    def _label(self, raw: Any, path: str, where: str) -> Any:
        labels = self.mapping.labels
        if labels is None:
            if isinstance(raw, (dict, list)):
                raise ItemError(
                    where, f"gold `{path}` holds {'an object' if isinstance(raw, dict) else 'a list'}, not a label"
                )
            return _as_text(raw) if self.cids else _cell(raw)
        try:
            value = labels.lookup(raw)
        except GoldValueError as exc:
            raise ItemError(
                where, f"{exc.message} (in `{path}`)", "add the code to --label, or fix the gold value"
            ) from None
        return value if self.cids else _cell(value)

    def _combine(self, labels: list[Any], where: str) -> Any:
        m = self.mapping
        if m.combine == "mean":
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in labels):
                raise ItemError(
                    where,
                    f"--combine mean needs numeric labels, got {', '.join(map(json.dumps, labels))}",
                    "use --combine majority for labels",
                )
            return math.fsum(labels) / len(labels)
        counts = collections.Counter(json.dumps(v, sort_keys=True) for v in labels)
        ranked = counts.most_common()
        if len(ranked) == 1 or ranked[0][1] > ranked[1][1]:
            return json.loads(ranked[0][0])
        tied = sorted(k for k, n in ranked if n == ranked[0][1])
        if m.on_tie == "drop":
            self.counts = attrs.evolve(self.counts, ties_dropped=self.counts.ties_dropped + 1)
            return None
        if m.on_tie == "tie":
            if not self.cids:
                raise ItemError(
                    where,
                    "--on-tie tie writes the pairwise gold `tie`, and these items are pointwise",
                    "use --on-tie drop, or --combine mean",
                )
            self.counts = attrs.evolve(self.counts, ties_kept=self.counts.ties_kept + 1)
            return "tie"
        raise ItemError(
            where,
            f"the annotators are split with no majority ({', '.join(tied)} each {ranked[0][1]} of {len(labels)})",
            "choose what a split means: --on-tie drop (no gold), --on-tie tie (pairwise), or --combine mean (numbers)",
        )
