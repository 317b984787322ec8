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
  computed from the same criterion judgments.
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

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

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

    def to_json(self) -> dict:
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


def graph_columns(graph: CheckedGraph, name: str, outcomes: Iterable[Outcome], baseline: str = "equal") -> list[Column]:
    """The graph's column and, unless `baseline` is `none` or the graph has
    none (`no_baseline`), its baseline's."""
    outcomes = list(outcomes)
    cols = [Column(name, {item: comp.decision for item, _, comp in outcomes}, "graph", graph.name)]
    if no_baseline(graph, baseline) is None and baseline != "none":
        weights = baseline_weights(graph, baseline)
        decisions = {
            item: baseline_decision(graph, weights, mode, tuple(comp.rows), comp) for item, mode, comp in outcomes
        }
        cols.append(Column(f"{baseline} baseline", decisions, baseline, graph.name, weights))
    return cols


@attrs.frozen
class LeftOut:
    item: str
    reason: str
    column: str | None  # None: left out of every column for a reason of its own (no gold)

    def to_json(self) -> dict:
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
    confusion: dict[str, dict] | None  # column -> {"gold", "predicted", "counts"}

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

    def to_json(self) -> dict:
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

    def to_json(self) -> dict:
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


def _reason(c: Column, item: str, mode: str) -> str | None:
    d = c.decisions.get(item)
    if d is None:
        return NOT_JUDGED
    if item in c.uncompiled and d.status != "ok":
        return UNCOMPILED
    if d.status == "error":
        return FAILED
    if d.status == "abstain" and mode == "pointwise":
        return ABSTAINED
    return None


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


def _score(graph, mode, items: list[Item], gold, columns: Sequence[Column]) -> ModeResult:
    kind, judge = judge_kind(graph, mode)
    left: list[LeftOut] = []
    scored: list[Item] = []
    for it in items:
        if it.id not in gold:
            left.append(LeftOut(it.id, NO_GOLD, None))
            continue
        reasons = [(c.name, r) for c in columns if (r := _reason(c, it.id, mode))]
        left.extend(LeftOut(it.id, r, name) for name, r in reasons)
        if not reasons:
            scored.append(it)
    codes = Codes(graph, kind)
    g = [codes.code(gold[it.id], it.candidate_ids) for it in scored]
    preds = {c.name: [codes.decision(c.decisions[it.id], it.candidate_ids) for it in scored] for c in columns}
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
        items=len(items),
        scored=tuple(it.id for it in scored),
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
    by mode (`mode`, or each item's shape)."""
    if not columns:
        raise ValueError("evaluate needs at least one column")
    if len({c.name for c in columns}) < len(columns):
        raise ValueError("column names must be unique")
    by_mode: dict[str, list[Item]] = {}
    for it in items:
        by_mode.setdefault(mode or it.mode, []).append(it)
    modes = {m: _score(graph, m, its, gold, columns) for m, its in sorted(by_mode.items())}
    return Evaluation(tuple(columns), len(items), sum(1 for it in items if it.id in gold), modes, tuple(notes))


# --- text ---------------------------------------------------------------------------


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def fmt(r: list[str]) -> str:
        return (
            "  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
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
                lines += _table(["", *m["predicted"]], [[g, *map(str, row)] for g, row in zip(m["gold"], m["counts"])])
        lines += _left_out_text(r)
    lines += ["", *INTERVALS_TEXT, "Figures (docs/evaluation.md):"]
    lines += [f"  {m}: {DEFINITIONS[m].formula}" for m in ev.metric_names()]
    return "\n".join(lines)


INTERVALS_TEXT = (
    "Intervals, 95%: a proportion's is its Wilson score interval; any other figure's, and every paired",
    f"difference's, a percentile bootstrap over items ({BOOTSTRAP_SAMPLES} resamples, seed {SEED}). Where no",
    "resample moves a difference, a proportion's is the square-and-add of the two Wilson intervals, any",
    "other figure's [n/a] (no interval, not certainty).",
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
