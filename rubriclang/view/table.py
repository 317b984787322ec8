"""The items of one trace file as a table: one summary row per item, kept in
memory, with the filters, sorting and paging of the items view.

Rows hold only what the table shows and filters on; the full record of one
item is read back from its line's byte offset (`TraceTable.record`), so a
trace of 100,000 items costs a few short strings per item, not its records.
"""

from __future__ import annotations

import array
import json
import math
import re
from collections.abc import Mapping
from sys import intern
from typing import Any

import attrs

from rubriclang.interp.readout import describe
from rubriclang.interp.trace import ItemsNow, decision_of, read_traces
from rubriclang.safetext import printable
from rubriclang.view.numbers import readable

PAGE_SIZE = 50
SHARED_VALUES = 4096  # distinct rows' values a table shares at most (beyond, each row keeps its own)
SORTS = ("file", "item", "decision", "gold", "status", "margin")
STATUSES = ("ok", "abstain", "error")
_SCORED = re.compile(r"\d{1,6}:(pointwise|pairwise)")


@attrs.frozen
class Row:
    """One item as the table shows it."""

    line: int
    item: str
    mode: str
    status: str
    decision: str  # in a few words, as `rbg replay` prints it
    decided: (
        str  # the decision as an evaluation's confusion names it: `decision`; pairwise, `first`/`second` by position
    )
    number: float | None  # the decision (pointwise) or margin (pairwise) as a number, for ranges and sorting
    gold: Any
    gold_label: str | None  # gold as shown and as an evaluation's confusion names it (pairwise: by position)
    disagrees: bool  # has gold, and the decision is another one
    values: dict[str, str]  # criterion -> value(s), shown
    error: str | None
    text: str  # lower-cased, for the text search


@attrs.frozen
class Query:
    """What the items view asks for: filters, then a sort, then one page."""

    status: str = ""  # "", ok, abstain or error
    disagree: bool = False
    low: float | None = None
    high: float | None = None
    text: str = ""
    decision: str = ""  # exactly this decision (`Row.decided`), for the cells of a confusion matrix
    gold: str = ""  # exactly this gold label (`Row.gold_label`)
    scored: str = ""  # `N:mode`: the items the Nth evaluation output scored in that mode, for its metric cells
    sort: str = "file"
    desc: bool = False
    page: int = 1

    @classmethod
    def parse(cls, params: dict[str, str]) -> Query:
        """From query-string parameters; anything unusable is left out (a
        bad number is no bound, an unknown sort is file order)."""
        return cls(
            status=params.get("status", "") if params.get("status", "") in STATUSES else "",
            disagree=params.get("disagree") == "1",
            low=_number(params.get("low")),
            high=_number(params.get("high")),
            text=params.get("q", "")[:200],
            decision=params.get("decision", "")[:200],
            gold=params.get("gold", "")[:200],
            scored=params.get("scored", "") if _SCORED.fullmatch(params.get("scored", "")) else "",
            sort=params["sort"] if params.get("sort") in SORTS else "file",
            desc=params.get("desc") == "1",
            page=max(1, int(params["page"])) if params.get("page", "").isdigit() else 1,
        )

    def params(self, **changes) -> dict[str, str]:
        """This query as query-string parameters (defaults left out), with `changes`."""
        q = attrs.evolve(self, **changes)
        out = {
            "status": q.status,
            "disagree": "1" if q.disagree else "",
            "low": _shown(q.low),
            "high": _shown(q.high),
            "q": q.text,
            "decision": q.decision,
            "gold": q.gold,
            "scored": q.scored,
            "sort": "" if q.sort == "file" else q.sort,
            "desc": "1" if q.desc else "",
            "page": "" if q.page == 1 else str(q.page),
        }
        return {k: v for k, v in out.items() if v}

    @property
    def scored_in(self) -> tuple[int, str] | None:
        """(evaluation output's index, mode) of `scored`, or None."""
        if not self.scored:
            return None
        n, mode = self.scored.split(":")
        return int(n), mode


@attrs.frozen
class Page:
    rows: tuple[Row, ...]
    matched: int
    page: int
    pages: int


def _number(text: str | None) -> float | None:
    try:
        x = float(text) if text else None
    except ValueError:
        return None
    return x if x is not None and math.isfinite(x) else None


def _shown(x: float | None) -> str:
    return "" if x is None else format(x, "g")


def shown(value: Any) -> str:
    """A value as the viewer shows it: `true`, `absent`, numbers by the
    viewer's one rule (`numbers.readable`), a pairwise node's values as
    `a: x / b: y`."""
    if isinstance(value, dict):
        return " / ".join(f"{k}: {shown(v)}" for k, v in value.items())
    if value is None:
        return "absent"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return readable(value)
    return printable(json.dumps(value, ensure_ascii=False) if isinstance(value, list) else str(value))


def _disagrees(decision: Any, gold: Any, status: str) -> bool:
    """Numbers disagree when they round to different points of the scale, so
    a real-valued readout is not counted wrong for 3.98 against gold 4."""
    if gold is None:
        return False
    if status != "ok":
        return True
    if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (decision, gold)):
        return round(decision) != round(gold)
    return decision != gold


def row_of(line: int, rec: dict) -> Row:
    # The few distinct strings that most rows repeat (criterion names, values,
    # decisions, statuses) are interned: one copy each, not one per row.
    d = decision_of(rec)
    cids = rec["candidates"]
    values = {
        intern(name): intern(" / ".join(shown(per[c].get("value")) for c in cids))
        for name, per in rec["criteria"].items()
    }
    number = d.margin if rec["mode"] == "pairwise" else d.decision
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        number = None
    error = d.error or next((e for per in rec.get("criterion_errors", {}).values() for e in per.values()), None)
    shown_decision = intern(describe(d))
    text = " ".join([rec["item"], shown_decision, str(error or "")]).lower()
    gold = rec.get("gold")
    decided, gold_label = shown_decision, None if gold is None else label(gold)
    if rec["mode"] == "pairwise":
        decided = _by_position(d.decision, cids) if d.status == "ok" else d.status
        gold_label = None if gold is None else _by_position(gold, cids)
    return Row(
        line,
        rec["item"],
        intern(rec["mode"]),
        intern(d.status),
        shown_decision,
        intern(decided),
        number,
        gold,
        None if gold_label is None else intern(gold_label),
        _disagrees(d.decision, gold, d.status),
        values,
        error,
        text,
    )


def _by_position(pick: Any, cids: list[str]) -> str:
    """A pairwise decision or gold as `rbg eval`'s confusion names it
    (`evaluation.evaluate.Codes`): the first or second candidate, or tie."""
    if pick in cids[:2]:
        return ("first", "second")[cids.index(pick)]
    return label(pick)


class TraceTable:
    """A trace file's rows, and its records read back on demand. The file is
    only read (it is checked like every trace: `read_traces`; with `items`,
    a record of an item whose content changed since is refused)."""

    def __init__(self, path: str, extra_text: Mapping[str, str] | None = None, items: ItemsNow | None = None):
        self.path = path
        self.rows: list[Row] = []
        self.criteria: list[str] = []
        self.graphs: set[str] = set()  # the names of the graphs that judged its items
        # Rows with equal values share one dict of them (never changed): most
        # rows of a rule's or a scale's criteria repeat a few, 200 bytes each.
        shared: dict[tuple, dict[str, str]] = {}
        for line, rec in read_traces(path, items):
            row = row_of(line, rec)
            key = tuple(row.values.items())
            values = shared.get(key)
            if values is None:
                values = row.values
                if len(shared) < SHARED_VALUES:
                    shared[key] = values
            text = row.text + " " + extra_text[row.item] if extra_text and row.item in extra_text else row.text
            if values is not row.values or text is not row.text:
                row = attrs.evolve(row, values=values, text=text)
            self.rows.append(row)
            self.graphs.add(rec["graph"]["name"])
            for name in rec["criteria"]:
                if name not in self.criteria:
                    self.criteria.append(name)
        self.by_item = {r.item: r for r in self.rows}
        self._offsets = line_offsets(path)
        self._sorted: dict[str, list[Row]] = {"file": self.rows}

    def record(self, item: str) -> dict | None:
        """The full trace record of `item`, or None."""
        row = self.by_item.get(item)
        if row is None:
            return None
        with open(self.path, "rb") as fh:
            fh.seek(self._offsets[row.line - 1])
            return json.loads(fh.readline())

    def _order(self, sort: str) -> list[Row]:
        # Each sort is computed once and kept: paging a sorted 100,000-item
        # table is then a filter pass over a ready list.
        if sort not in self._sorted:
            self._sorted[sort] = sorted(self.rows, key=_KEYS[sort])
        return self._sorted[sort]

    def query(self, q: Query, size: int = PAGE_SIZE, left_out: frozenset[str] = frozenset()) -> Page:
        """One page of the rows `q` keeps; with `q.scored`, `left_out` holds
        the items that evaluation left out of every column."""
        rows = self._order(q.sort)
        if q.desc:
            rows = rows[::-1]
        needle = q.text.lower().strip()
        if (
            q.status
            or q.disagree
            or q.low is not None
            or q.high is not None
            or needle
            or q.decision
            or q.gold
            or q.scored
        ):
            rows = [r for r in rows if _keeps(q, needle, r, left_out)]
        pages = max(1, -(-len(rows) // size))
        page = min(q.page, pages)
        return Page(tuple(rows[(page - 1) * size : page * size]), len(rows), page, pages)


def _keeps(q: Query, needle: str, r: Row, left_out: frozenset[str]) -> bool:
    scored = q.scored_in
    if scored is not None and (r.mode != scored[1] or r.item in left_out):
        return False
    if q.status and r.status != q.status:
        return False
    if q.disagree and not r.disagrees:
        return False
    if q.low is not None and (r.number is None or r.number < q.low):
        return False
    if q.high is not None and (r.number is None or r.number > q.high):
        return False
    if q.decision and r.decided != q.decision:
        return False
    if q.gold and r.gold_label != q.gold:
        return False
    return not needle or needle in r.text


def label(x: Any) -> str:
    """A gold label or decision value as shown, and as matched by `Query.gold`."""
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x)


def _num_key(x: Any) -> tuple:
    # Absent values last; numbers before text, so mixed columns still sort.
    if x is None:
        return (2, 0.0, "")
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return (0, float(x), "")
    return (1, 0.0, str(x))


_KEYS = {
    "item": lambda r: r.item,
    "decision": lambda r: (_num_key(r.number if r.mode == "pointwise" else None), r.decision),
    "margin": lambda r: _num_key(r.number if r.mode == "pairwise" else None),
    "gold": lambda r: _num_key(r.gold),
    "status": lambda r: r.status,
}


def line_offsets(path: str) -> array.array:
    """Byte offset of each line of a file (line n at index n - 1): 8 bytes
    a line, where a dict of line numbers takes about 100."""
    out = array.array("q")
    with open(path, "rb") as fh:
        pos = 0
        for line in fh:
            out.append(pos)
            pos += len(line)
    return out
