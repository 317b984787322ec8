"""Evaluation against gold labels: columns of decisions (graphs, baselines)
scored on exactly the same items, with 95% intervals (Wilson for
proportions, else bootstrap) and paired differences against the first
column (docs/evaluation.md).

Public API:

- `Column(name, decisions, kind, graph, weights)`: one column of decisions,
  item id -> `Decision`; an item missing from it was not judged.
- `graph_columns(graph, name, outcomes, baseline)`: a graph's column from
  its compositions (`(item id, mode, Composition)`, from a run or a
  replay), and, unless `baseline` is `none`, its flat baseline's column
  computed from the same criterion judgments; `baseline_column` and
  `outcome_decisions(graph, base, outcome)` are its parts, for a `Table`.
- `Table(graph, column names, mode)`: what scoring keeps of each item,
  compactly, filled as items and outcomes pass; `evaluate_table(table,
  columns)` scores it (`rbg eval` over a million items).
- `replayed(graph, traces_path)`: the outcomes of a trace file recomputed
  under `graph` (replay semantics: refuses redefined criteria and traces of
  another graph with an ItemError at the line).
- `evaluate(graph, items, gold, columns, mode)`: an `Evaluation`: per mode,
  the items scored in every column, every item left out with its reason
  (`REASONS`), each column's metrics, the paired differences, and confusion
  matrices for bool, label and pairwise judges.
- `render_text(evaluation)`, `Evaluation.to_json()`.
- `judge_kind(graph, mode)` and `Codes(graph, kind)`: the metric family of a
  judge and the encoding of its decisions and gold, for computing one
  figure directly (`metrics.figure`), as a fitting loop does.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from rubriclang.checker.graph import CheckedGraph
from rubriclang.evaluation.baseline import baseline_decision, baseline_weights
from rubriclang.evaluation.gold import TIE
from rubriclang.evaluation.metrics import (
    ABSTAIN,
    BOOTSTRAP_SAMPLES,
    DEFINITIONS,
    METRICS,
    SEED,
    Estimate,
    confusion,
    sample,
)
from rubriclang.interp.compose import Composition
from rubriclang.interp.items import Item
from rubriclang.interp.readout import Decision

if TYPE_CHECKING:
    from rubriclang.interp.trace import ItemsNow

# Why an item is left out of every column; checked in this order.
NO_GOLD, NOT_JUDGED, FAILED, ABSTAINED = "no gold", "not judged", "judgment failed", "abstained"
# An item of a folder of compiled graphs whose own graph did not compile
# (and that no fallback graph judged).
UNCOMPILED = "compile failed"
REASONS = (NO_GOLD, NOT_JUDGED, UNCOMPILED, FAILED, ABSTAINED)


@attrs.frozen
class Column:
    """One column of decisions. `kind`: graph, equal or graph-weights (a
    baseline of `graph`); `weights` a baseline's criterion weights."""

    name: str
    decisions: dict[str, Decision]
    kind: str = "graph"
    graph: str = ""
    weights: dict[str, float] | None = None
    uncompiled: frozenset[str] = frozenset()  # items without a compiled graph, none judged them

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "graph": self.graph}
        if self.weights is not None:
            out["weights"] = {k: round(v, 6) for k, v in self.weights.items()}
        return out


Outcome = tuple[str, str, Composition]  # item id, mode, composition


def replayed(graph: CheckedGraph, traces_path: str, items: ItemsNow | None = None) -> Iterable[Outcome]:
    """The outcomes recorded in a trace file, recomputed under `graph`;
    with `items`, an ItemError when a record judged other content than the
    item of its id now has (interp.trace.read_traces)."""
    from rubriclang.interp.replay import replay

    for r in replay(graph, traces_path, items=items):
        assert r.composition is not None  # replayed with its values
        yield r.item, r.mode, r.composition


def no_baseline(graph: CheckedGraph, baseline: str) -> str | None:
    """Why `graph` has no `baseline` (None when it has one, or none was asked)."""
    if baseline == "none":
        return None
    if not (graph.scale.numeric or graph.scale.kind == "bool"):
        return f"no {baseline} baseline: the contract's scale `{graph.scale}` has no mean"
    if not baseline_weights(graph, baseline):
        return f"no {baseline} baseline: no numeric or bool criterion feeds the sink's value"
    return None


def baseline_column(graph: CheckedGraph, baseline: str) -> Column | None:
    """The column of `graph`'s flat baseline, its decisions still to come
    (`decisions`), or None when `baseline` is `none` or the graph has none."""
    if baseline == "none" or no_baseline(graph, baseline) is not None:
        return None
    return Column(f"{baseline} baseline", {}, baseline, graph.name, baseline_weights(graph, baseline))


def outcome_decisions(graph: CheckedGraph, base: Column | None, outcome: Outcome) -> tuple[Decision, ...]:
    """The graph's decision of an outcome and, with `base`, its baseline's
    from the same criterion judgments."""
    _, mode, comp = outcome
    if base is None:
        return (comp.decision,)
    assert base.weights is not None
    return comp.decision, baseline_decision(graph, base.weights, mode, tuple(comp.rows), comp)


def graph_columns(graph: CheckedGraph, name: str, outcomes: Iterable[Outcome], baseline: str = "equal") -> list[Column]:
    """The graph's column and, unless `baseline` is `none` or the graph has
    none (`no_baseline`), its baseline's."""
    base = baseline_column(graph, baseline)
    cols = [Column(name, {}, "graph", graph.name), *([base] if base else [])]
    for outcome in outcomes:
        for c, d in zip(cols, outcome_decisions(graph, base, outcome), strict=True):
            c.decisions[outcome[0]] = d
    return cols


@attrs.frozen
class LeftOut:
    item: str
    reason: str
    column: str | None  # None: left out of every column for a reason of its own (no gold)

    def to_json(self) -> dict[str, Any]:
        return {"item": self.item, "reason": self.reason, "column": self.column}


@attrs.frozen
class ModeResult:
    """One mode's figures: every column on the same `scored` items."""

    mode: str
    judge: str  # the gold type: the output type, or `pairwise`
    kind: str  # numeric, bool, label, pairwise
    items: int
    scored: tuple[str, ...]
    left_out: tuple[LeftOut, ...]
    metrics: dict[str, dict[str, Estimate]]  # column -> metric -> estimate
    differences: dict[str, dict[str, Estimate]]  # column -> metric -> (first column - column)
    confusion: dict[str, dict[str, Any]] | None  # column -> {"gold", "predicted", "counts"}

    @property
    def coverage(self) -> float | None:
        """Scored items / items with gold (None when no item has gold)."""
        with_gold = self.items - sum(1 for x in self.left_out if x.reason == NO_GOLD)
        return len(self.scored) / with_gold if with_gold else None

    def left_out_counts(self) -> dict[str, dict[str, int]]:
        """reason -> column (`all` for no gold) -> items."""
        out: dict[str, dict[str, int]] = {}
        for x in self.left_out:
            cell = out.setdefault(x.reason, {})
            cell[x.column or "all"] = cell.get(x.column or "all", 0) + 1
        return out

    def to_json(self) -> dict[str, Any]:
        ids = sorted({x.item for x in self.left_out})
        return {
            "judge": self.judge,
            "kind": self.kind,
            "items": self.items,
            "scored": len(self.scored),
            "coverage": None if self.coverage is None else round(self.coverage, 6),
            "left_out": {
                "items": len(ids),
                "counts": self.left_out_counts(),
                "by_item": [x.to_json() for x in self.left_out],
            },
            "metrics": {c: {k: e.to_json() for k, e in m.items()} for c, m in self.metrics.items()},
            "differences": {c: {k: e.to_json() for k, e in m.items()} for c, m in self.differences.items()},
            "confusion": self.confusion,
        }


@attrs.frozen
class Evaluation:
    columns: tuple[Column, ...]
    items: int
    items_with_gold: int
    modes: dict[str, ModeResult]
    notes: tuple[str, ...] = ()

    @property
    def coverage(self) -> float | None:
        """Scored items / items with gold, over every mode."""
        scored = sum(len(m.scored) for m in self.modes.values())
        return scored / self.items_with_gold if self.items_with_gold else None

    def to_json(self) -> dict[str, Any]:
        return {
            "columns": [c.to_json() for c in self.columns],
            "differences_of": self.columns[0].name,
            "items": self.items,
            "items_with_gold": self.items_with_gold,
            "coverage": None if self.coverage is None else round(self.coverage, 6),
            "modes": {m: r.to_json() for m, r in self.modes.items()},
            "notes": list(self.notes),
            "bootstrap": {"samples": BOOTSTRAP_SAMPLES, "seed": SEED, "level": 0.95},
            "definitions": {m: DEFINITIONS[m].to_json() for m in self.metric_names()},
        }

    def metric_names(self) -> list[str]:
        """The metrics of every mode, in report order."""
        return list(dict.fromkeys(m for r in self.modes.values() for m in METRICS[r.kind]))


def judge_kind(graph: CheckedGraph, mode: str) -> tuple[str, str]:
    """(metric family: numeric, bool, label or pairwise; the gold type in words)."""
    if mode == "pairwise":
        return "pairwise", "a candidate or tie"
    out = graph.pointwise_readout.output.as_optional(False)
    return {"bool": "bool", "label": "label"}.get(out.kind, "numeric"), str(out)


class Codes:
    """Decisions and gold as the numbers `METRICS` reads: `code(gold, cids)`,
    `decision(Decision, cids)` (cids: the item's candidate ids)."""

    def __init__(self, graph: CheckedGraph, kind: str):
        self.kind = kind
        if kind == "label":
            self.classes = list(graph.pointwise_readout.output.labels)
        elif kind == "bool":
            self.classes = ["false", "true"]
        elif kind == "pairwise":
            self.classes = ["first", "second", "tie"]
        else:
            self.classes = []

    def code(self, value: Any, cids: tuple[str, ...]) -> float:
        if self.kind == "numeric":
            return float(value)
        if self.kind == "bool":
            return float(bool(value))
        if self.kind == "label":
            return float(self.classes.index(value))
        return 2.0 if value == TIE else float(cids.index(value))

    def decision(self, d: Decision, cids: tuple[str, ...]) -> float:
        if self.kind == "pairwise" and d.status != "ok":
            return float(ABSTAIN)
        return self.code(d.decision, cids)


MODES = ("pointwise", "pairwise")
_STATUS = {"ok": 1, "abstain": 2, "error": 3}  # 0: not judged


class Table:
    """What scoring keeps of each item, and no more: its id, mode and gold
    code, and in each column a status byte and a decision code (`Codes`),
    about 100 bytes an item with two columns, where the items, their
    compositions and decision records took kilobytes. `add` each item (in
    order, gold canonical or None), then `decide` each column's decisions
    in any order; an item not decided in a column was not judged there."""

    def __init__(self, graph: CheckedGraph, columns: Sequence[str], mode: str | None = None):
        self.graph, self.mode = graph, mode
        self.ids: list[str] = []
        self._index: dict[str, int] = {}
        self.modes = bytearray()  # index into MODES
        self.gold = array("d")  # NaN: no gold
        self.candidates: dict[int, tuple[str, ...]] = {}  # a pairwise item's candidate ids
        self.status = {c: bytearray() for c in columns}
        self.codes = {c: array("d") for c in columns}
        self._coders: dict[str, Codes] = {}
        self._shared: dict[tuple[str, ...], tuple[str, ...]] = {}

    def codes_of(self, mode: str) -> Codes:
        if mode not in self._coders:
            self._coders[mode] = Codes(self.graph, judge_kind(self.graph, mode)[0])
        return self._coders[mode]

    def add(self, item: Item, gold: Any) -> None:
        i = len(self.ids)
        self._index[item.id] = i
        self.ids.append(item.id)
        mode = self.mode or item.mode
        self.modes.append(MODES.index(mode))
        cids: tuple[str, ...] = ()
        if mode == "pairwise":
            cids = self.candidates[i] = self._shared.setdefault(item.candidate_ids, item.candidate_ids)
        self.gold.append(math.nan if gold is None else self.codes_of(mode).code(gold, cids))
        for c in self.status:
            self.status[c].append(0)
            self.codes[c].append(math.nan)

    def mode_of(self, item: str) -> str | None:
        """The mode an item is scored in (None: not an item here)."""
        i = self._index.get(item)
        return None if i is None else MODES[self.modes[i]]

    def decide(self, column: str, item: str, d: Decision) -> bool:
        """Record a column's decision on an item; False when the item is not here."""
        i = self._index.get(item)
        if i is None:
            return False
        mode = MODES[self.modes[i]]
        self.status[column][i] = _STATUS[d.status]
        if d.status == "ok" or mode == "pairwise":
            self.codes[column][i] = self.codes_of(mode).decision(d, self.candidates.get(i, ()))
        return True

    def left_out(self, column: Column, idx: np.ndarray, mode: str) -> np.ndarray:
        """Each item's reason (an index into REASONS, 0 for none) to leave it
        out of `column`, for the items `idx`; checked in REASONS' order."""
        status = np.frombuffer(self.status[column.name], dtype=np.uint8)[idx]
        out = np.zeros(len(idx), dtype=np.uint8)
        if mode == "pointwise":
            out[status == _STATUS["abstain"]] = REASONS.index(ABSTAINED)
        out[status == _STATUS["error"]] = REASONS.index(FAILED)
        if column.uncompiled:
            uncompiled = np.isin(idx, [self._index[i] for i in column.uncompiled if i in self._index])
            out[uncompiled & (status != _STATUS["ok"])] = REASONS.index(UNCOMPILED)
        out[status == 0] = REASONS.index(NOT_JUDGED)
        return out


def _score(table: Table, mode: str, columns: Sequence[Column]) -> ModeResult:
    kind, judge = judge_kind(table.graph, mode)
    idx = np.flatnonzero(np.frombuffer(table.modes, dtype=np.uint8) == MODES.index(mode))
    gold = np.frombuffer(table.gold, dtype=float)[idx]
    no_gold = np.isnan(gold)
    reasons = [table.left_out(c, idx, mode) for c in columns]
    bad = no_gold | np.logical_or.reduce([r > 0 for r in reasons])
    left: list[LeftOut] = []
    for k in np.flatnonzero(bad):  # in item order, each item's columns in order
        item = table.ids[idx[k]]
        if no_gold[k]:
            left.append(LeftOut(item, NO_GOLD, None))
            continue
        left.extend(LeftOut(item, REASONS[r[k]], c.name) for c, r in zip(columns, reasons, strict=True) if r[k])
    scored = idx[~bad]
    codes = table.codes_of(mode)
    g = gold[~bad]
    preds = {c.name: np.frombuffer(table.codes[c.name], dtype=float)[scored] for c in columns}
    samples = {c: {m: sample(stat, p, g) for m, stat in METRICS[kind].items()} for c, p in preds.items()}
    first = columns[0].name
    conf = None
    if kind != "numeric":
        predicted = codes.classes + (["abstain"] if kind == "pairwise" else [])
        conf = {
            c: {
                "gold": codes.classes,
                "predicted": predicted,
                "counts": confusion(p, g, len(predicted), len(codes.classes)),
            }
            for c, p in preds.items()
        }
    return ModeResult(
        mode=mode,
        judge=judge,
        kind=kind,
        items=len(idx),
        scored=tuple(table.ids[i] for i in scored),
        left_out=tuple(left),
        metrics={c: {m: s.estimate() for m, s in ms.items()} for c, ms in samples.items()},
        # First minus each other column: a positive sign favours the first column (a graph, the fitted
        # graph) on every figure where higher is better.
        differences={
            c: {m: samples[first][m].minus(s) for m, s in ms.items()} for c, ms in samples.items() if c != first
        },
        confusion=conf,
    )


def evaluate(
    graph: CheckedGraph,
    items: Sequence[Item],
    gold: dict[str, Any],
    columns: Sequence[Column],
    mode: str | None = None,
    notes: Sequence[str] = (),
) -> Evaluation:
    """Score every column against `gold` (canonical values, `read_gold`) on
    the items that every column decided and that have gold; `graph` gives
    the judge's type (every column judges the same task). Items are grouped
    by mode (`mode`, or each item's shape). Over many items, fill a `Table`
    as they pass and call `evaluate_table` instead: nothing is held per item
    but the table."""
    table = Table(graph, [c.name for c in columns], mode)
    for it in items:
        table.add(it, gold.get(it.id))
    for c in columns:
        for item, d in c.decisions.items():
            table.decide(c.name, item, d)
    return evaluate_table(table, columns, notes)


def evaluate_table(table: Table, columns: Sequence[Column], notes: Sequence[str] = ()) -> Evaluation:
    """`evaluate` of the decisions a `Table` holds (a column's own
    `decisions` are not read here)."""
    if not columns:
        raise ValueError("evaluate needs at least one column")
    if len({c.name for c in columns}) < len(columns):
        raise ValueError("column names must be unique")
    present = sorted(MODES[m] for m in set(table.modes))
    modes = {m: _score(table, m, columns) for m in present}
    with_gold = int(np.count_nonzero(~np.isnan(np.frombuffer(table.gold, dtype=float))))
    return Evaluation(tuple(columns), len(table.ids), with_gold, modes, tuple(notes))


# --- text ---------------------------------------------------------------------------


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def fmt(r: list[str]) -> str:
        return (
            "  "
            + "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
            ).rstrip()
        )

    return [fmt(header), *map(fmt, rows)]


def _signed(e: Estimate) -> str:
    if e.value is None:
        return "n/a"
    if e.low is None:
        return f"{e.value:+.3f} [n/a]"  # no interval, not certainty
    return f"{e.value:+.3f} [{e.low:+.3f}, {e.high:+.3f}]"


_SHOWN_IDS = 10


def render_text(ev: Evaluation) -> str:
    """The report as text: per mode, the metrics of every column side by side,
    the paired differences (the first column minus each other), the
    confusion matrices and the items left out; then what each interval is
    and each figure's formula (`DEFINITIONS`)."""
    first = ev.columns[0].name
    lines = [f"Evaluation on {ev.items} items, {ev.items_with_gold} with gold labels"]
    for c in ev.columns:
        if c.weights is not None:
            w = ", ".join(f"{k} {v:.4g}" for k, v in c.weights.items()) or "no criteria"
            lines.append(f"  {c.name} of `{c.graph}`: weights {w}")
    lines += [f"  note: {n}" for n in ev.notes]
    for mode, r in ev.modes.items():
        lines += ["", f"{mode} ({r.judge}): {len(r.scored)} of {r.items} items scored in every column"]
        if not r.scored:
            lines += _left_out_text(r)
            continue
        names = list(r.metrics)
        rows = [[m] + [r.metrics[c][m].text() for c in names] for m in METRICS[r.kind]]
        lines += _table(["metric", *names], rows)
        if r.differences:
            lines += ["", f"  paired differences, `{first}` minus each column:"]
            rows = [[m] + [_signed(r.differences[c][m]) for c in r.differences] for m in METRICS[r.kind]]
            lines += _table(["metric", *r.differences], rows)
        if r.confusion:
            for col, m in r.confusion.items():
                lines += ["", f"  confusion of `{col}` (rows: gold, columns: decision):"]
                lines += _table(
                    ["", *m["predicted"]], [[g, *map(str, row)] for g, row in zip(m["gold"], m["counts"], strict=True)]
                )
        lines += _left_out_text(r)
    lines += ["", *INTERVALS_TEXT, "Figures (docs/evaluation.md):"]
    lines += [f"  {m}: {DEFINITIONS[m].formula}" for m in ev.metric_names()]
    return "\n".join(lines)


INTERVALS_TEXT = (
    "Intervals, 95%: a proportion's is its Wilson score interval; any other figure's, and every paired",
    f"difference's, a percentile bootstrap over items ({BOOTSTRAP_SAMPLES} resamples, seed {SEED}). Where no",
    "resample moves a difference, a proportion's bounds the items counted by one column alone with Wilson",
    "intervals, any other figure's is [n/a] (no interval, not certainty).",
)


def _left_out_text(r: ModeResult) -> list[str]:
    if not r.left_out:
        return []
    n = len({x.item for x in r.left_out})
    out = ["", f"  left out of every column: {n} items"]
    groups: dict[tuple[str, str | None], list[str]] = {}
    for x in r.left_out:
        groups.setdefault((x.reason, x.column), []).append(x.item)
    for (reason, column), ids in sorted(groups.items(), key=lambda kv: (REASONS.index(kv[0][0]), kv[0][1] or "")):
        where = f" in `{column}`" if column else ""
        shown = ", ".join(ids[:_SHOWN_IDS]) + (
            f", ... {len(ids) - _SHOWN_IDS} more (--format json lists all)" if len(ids) > _SHOWN_IDS else ""
        )
        out.append(f"    {reason}{where}: {len(ids)} ({shown})")
    return out
