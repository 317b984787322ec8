"""`rbg fit`: a graph's numbers fitted on labelled items (docs/fit.md).

The criterion judgments are recorded once (annotations, recorded values or
traces); fitting then only recomposes them, through the compiled plan, for
each candidate set of numbers. The search is scipy's differential evolution:
the metrics are step functions of the numbers (a cap or a weight moves a
decision only when it crosses a boundary), so a gradient is zero almost
everywhere, and a population search over bounded ranges is what works; it is
deterministic for a seed. The written numbers themselves (rounded as they
will be printed) are what is scored, so the fitted file does what was
measured.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from rubriclang.catalog import load_catalog
from rubriclang.checker.graph import CheckedGraph, Operator
from rubriclang.evaluation.params import Param, concrete, weights_total, with_values
from rubriclang.interp.plan import compile_plan
from rubriclang.interp.readout import Decision, pairwise, pointwise

if TYPE_CHECKING:
    from rubriclang.catalog.rules import Rule
    from rubriclang.catalog.types import JType
    from rubriclang.evaluation.evaluate import Column, Evaluation, Outcome
    from rubriclang.evaluation.metrics import Estimate
    from rubriclang.interp.items import Item


@attrs.frozen
class Case:
    """One item's recorded criterion values (one row per candidate, in the
    order of `graph.criteria`); no gold: labels are kept apart, by split."""

    id: str
    mode: str
    cids: tuple[str, ...]
    rows: dict[str, tuple[Any, ...]]


def split_of(item_id: str, seed: int) -> float:
    """A stable number in [0, 1) for an id: its place in the dev/held-out split."""
    h = hashlib.sha256(f"{seed}\0{item_id}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def dev_ids(ids: Sequence[str], share: float, seed: int) -> set[str]:
    """The ids whose hash (with `seed`) falls below `share`."""
    return {i for i in ids if split_of(i, seed) < share}


def folds(ids: Sequence[str], k: int, seed: int) -> list[list[str]]:
    """`ids` dealt into `k` folds in the order of their hash (sizes differ by at most one)."""
    ranked = sorted(ids, key=lambda i: (split_of(i, seed + 1), i))
    return [ranked[j::k] for j in range(k)]


# The metrics `rbg fit` can optimise, each the `rbg eval` figure of that name.
FIT_METRICS = ("exact", "mae", "spearman", "accuracy", "agreement", "agreement_without_ties")


def metric_problem(graph: CheckedGraph, mode: str, metric: str) -> str | None:
    """Why `metric` cannot score this judge, or None: each metric belongs to
    the judges `rbg eval` reports it for (MAE and Spearman need numbers;
    accuracy is a bool or label judge's; the agreements a pairwise one's)."""
    from rubriclang.evaluation.evaluate import judge_kind
    from rubriclang.evaluation.metrics import METRICS

    kind, judge = judge_kind(graph, mode)
    if metric in METRICS[kind]:
        return None
    judge = "pairwise" if mode == "pairwise" else judge
    fits = [m for m in FIT_METRICS if m in METRICS[kind]]
    return f"--metric {metric} does not score a {judge} judge: use --metric {' or '.join(fits)}"


def default_metric(graph: CheckedGraph, mode: str) -> str:
    """agreement_without_ties for pairwise judges, accuracy for bool and
    label ones; exact for ordinal; spearman for score."""
    if mode == "pairwise":
        return "agreement_without_ties"
    kind = graph.pointwise_readout.output.kind
    return {"ordinal": "exact", "score": "spearman"}.get(kind, "accuracy")


class Recomposer:
    """Decisions of a graph (or a variant with other numbers) over recorded cases."""

    def __init__(self, graph: CheckedGraph):
        names = [c.name for c in graph.criteria] + [o.name for o in graph.operators]
        self.sink = names.index(graph.sink)

    def decisions(self, graph: CheckedGraph, cases: Sequence[Case]) -> list[Decision]:
        plan = compile_plan(graph)
        s = self.sink
        out = []
        for case in cases:
            sinks = {cid: (row + plan(*row))[s] for cid, row in case.rows.items()}
            if case.mode == "pointwise":
                out.append(pointwise(graph.pointwise_readout, graph.scale, sinks[case.cids[0]]))
            else:
                out.append(pairwise(graph.pairwise_readout, graph.scale, case.cids, sinks))
        return out


def loss(metric: str, decisions: Sequence[Decision], gold: Sequence[Any], width: float) -> float:
    """The fit's objective, lower is better: minus the metric (exact,
    accuracy, agreement, agreement_without_ties, Spearman), or the MAE. An
    item the metric would leave out for the judge's decision counts as wrong
    (as the scale's width for MAE), so no fit gains by abstaining or tying;
    agreement_without_ties leaves out gold ties, as its formula does."""
    if metric in ("exact", "accuracy", "agreement", "agreement_without_ties"):
        pairs = [
            (d, g)
            for d, g in zip(decisions, gold, strict=True)
            if not (metric == "agreement_without_ties" and g == "tie")
        ]
        if not pairs:
            return 0.0
        return -sum(1 for d, g in pairs if d.status == "ok" and d.decision == g) / len(pairs)
    if metric == "mae":
        if not gold:
            return 0.0
        return math.fsum(
            abs(d.decision - g) if d.status == "ok" else width for d, g in zip(decisions, gold, strict=True)
        ) / len(gold)
    x = [float(d.decision) for d in decisions if d.status == "ok"]
    y = [float(g) for d, g in zip(decisions, gold, strict=True) if d.status == "ok"]
    if len(x) < 3:
        return 1.0
    from scipy.stats import spearmanr

    r = spearmanr(x, y).statistic
    return 1.0 if not math.isfinite(r) else -float(r)


@attrs.frozen
class Settings:
    """The search: the metric it optimises, its seed and its budget."""

    metric: str
    seed: int = 0
    max_iter: int = 60
    popsize: int = 15


@attrs.frozen
class Fitted:
    """A search's result."""

    values: list[float]  # one number per parameter, as written
    loss: float  # on the cases it was fitted on
    start_loss: float  # of the written numbers, on the same cases
    evaluations: int


def fit(
    graph: CheckedGraph, params: list[Param], cases: Sequence[Case], gold: Sequence[Any], settings: Settings
) -> Fitted:
    """The numbers for `params` that minimise the loss on `cases`. The written
    numbers are one member of the first population, so the result is never
    worse than them on these cases."""
    from scipy.optimize import differential_evolution

    composer = Recomposer(graph)
    totals = weights_total(params)
    width = float(graph.scale.hi - graph.scale.lo) if graph.scale.numeric else 1.0

    valid = _Validity(graph, params)

    def score(values: Sequence[float]) -> float:
        variant = with_values(graph, params, values)
        if not valid(variant):
            return math.inf
        return loss(settings.metric, composer.decisions(variant, cases), gold, width)

    start = [p.value for p in params]
    start_loss = score(start)
    if not params:
        return Fitted(start, start_loss, start_loss, 1)
    objective = lambda x: score(concrete(params, x, totals))  # noqa: E731
    x0 = [min(max(_search_point(p, params), p.lo), p.hi) for p in params]
    result = differential_evolution(
        objective,
        bounds=[(p.lo, p.hi) for p in params],
        integrality=[p.integer for p in params],
        x0=x0,
        seed=settings.seed,
        maxiter=settings.max_iter,
        popsize=settings.popsize,
        polish=False,  # a gradient step: useless on step functions
        init="sobol",
        tol=0.0,  # run every generation: the same work, and the same result, for a seed
        updating="deferred",
    )
    values = concrete(params, result.x, totals)
    best = score(values)
    if best > start_loss:  # x0 is in the population, so only rounding could do this: never write worse
        return Fitted(start, start_loss, start_loss, int(result.nfev))
    return Fitted(values, best, start_loss, int(result.nfev))


def _search_point(p: Param, params: list[Param]) -> float:
    """Where the written number lies in the search space: weights are
    searched in [0, 1], the written ones divided by their largest."""
    if not p.weight:
        return p.value
    top = max(q.value for q in params if q.node == p.node and q.param == p.param)
    return p.value / top if top > 0 else 1.0


class _Validity:
    """Whether a set of numbers keeps the graph as typed: every moved node's
    catalog output rule finds no problem with them (clamp's `lo < hi`, some
    positive weight) and gives an output type (from the inputs as written)
    within its written type, so every type downstream, the sink's included,
    stays as checked."""

    def __init__(self, graph: CheckedGraph, params: list[Param]) -> None:
        cat = load_catalog()
        nodes = graph.nodes
        # Each moved node's catalog rule, its input types, and its written type.
        self.rules: dict[str, tuple[Rule, dict[str, tuple[JType, ...]], JType]] = {}
        for name in dict.fromkeys(p.node for p in params):
            op = nodes[name]
            assert isinstance(op, Operator)  # free parameters are operators' parameters
            ports = {port: tuple(nodes[s].type for s in slots) for port, slots in op.ports.items()}
            self.rules[name] = (cat.operators[op.operator].rule, ports, op.type)

    def __call__(self, graph: CheckedGraph) -> bool:
        # Each moved node's catalog rule says whether its numbers are valid
        # (clamp's `lo < hi`, some positive weight) and what type they give.
        ops = {o.name: o for o in graph.operators}
        from rubriclang.catalog.rules import RuleInput

        for name, (rule, ports, written) in self.rules.items():
            out, problems = rule(RuleInput(ports, ops[name].params))
            if problems or not out.fits(written) or out.kind != written.kind:
                return False
        return True


def case(graph: CheckedGraph, outcome: Outcome) -> Case | None:
    """An item's recorded criterion values (None when a criterion failed:
    a failed criterion fails the item whatever the numbers)."""
    item, mode, comp = outcome
    n = len(graph.criteria)
    if comp.decision.status == "error" and len(comp.names) == n:
        return None
    return Case(item, mode, tuple(comp.rows), {cid: tuple(row[:n]) for cid, row in comp.rows.items()})


def left_out(
    dev: list[str], gold: dict[str, Any], all_cases: dict[str, Case], judged: set[str]
) -> dict[str, list[str]]:
    """The dev items the fit could not use, by reason (as `rbg eval` names them)."""
    from rubriclang.evaluation.evaluate import FAILED, NO_GOLD, NOT_JUDGED

    out: dict[str, list[str]] = {}
    for i in dev:
        reason = NO_GOLD if i not in gold else NOT_JUDGED if i not in judged else FAILED if i not in all_cases else None
        if reason:
            out.setdefault(reason, []).append(i)
    return out


def metric_value(metric: str, loss_value: float) -> float:
    """The metric a loss stands for (the loss is minus the metric, but for MAE)."""
    return loss_value if metric == "mae" else -loss_value


@attrs.frozen
class Fold:
    items: int
    fitted: float  # the metric on the fold, numbers fitted on the other folds
    written: float  # the metric on the fold, numbers as written


def cross_validate(
    graph: CheckedGraph,
    params: list[Param],
    all_cases: dict[str, Case],
    ids: list[str],
    gold: dict[str, Any],
    settings: Settings,
    k: int,
) -> list[Fold]:
    """k-fold cross-validation inside the dev split: each fold scored with
    numbers fitted on the others, beside the written numbers."""
    composer = Recomposer(graph)
    width = float(graph.scale.hi - graph.scale.lo) if graph.scale.numeric else 1.0
    out = []
    for fold in folds(ids, min(k, len(ids)), settings.seed):
        if not fold:
            continue
        inside = set(fold)
        train = [i for i in ids if i not in inside]
        fitted = fit(graph, params, [all_cases[i] for i in train], [gold[i] for i in train], settings)
        test_cases = [all_cases[i] for i in fold]
        test_gold = [gold[i] for i in fold]
        fitted_score, prior_score = (
            metric_value(settings.metric, loss(settings.metric, composer.decisions(g, test_cases), test_gold, width))
            for g in (with_values(graph, params, fitted.values), graph)
        )
        out.append(Fold(len(fold), fitted_score, prior_score))
    return out


def fitted_source(source: str, path: str, params: list[Param], values: Sequence[float]) -> str:
    """The canonical text of the graph with its numbers replaced."""
    from rubriclang.evaluation.params import rewrite
    from rubriclang.fmt import format_source

    result = format_source(rewrite(source, params, values), path)
    assert result.output is not None, "a rewritten number broke the syntax"
    return result.output


def written_name(path: str) -> str:
    """The held-out column of GRAPH as written."""
    return f"as written ({os.path.basename(path)})"


class Judged:
    """What a fit keeps of each outcome as it comes (`add(graph index,
    outcome)`): the first graph's cases (its design matrix, `case`) and the
    ids it judged, and the columns of decisions the held-out report reads
    (the graph as written, its equal-weight baseline, each compared graph).
    Never the compositions, a kilobyte or so an item and graph."""

    def __init__(self, graph: CheckedGraph, graphs: Sequence[CheckedGraph], paths: Sequence[str]) -> None:
        from rubriclang.evaluation.evaluate import Column, baseline_column

        self.graph = graph
        self.base = baseline_column(graph, "equal")
        self.columns = [
            Column(written_name(paths[0]), {}, "graph", graph.name),
            *([self.base] if self.base else []),
            *(Column(os.path.basename(p), {}, "graph", g.name) for g, p in zip(graphs[1:], paths[1:], strict=True)),
        ]
        self.cases: dict[str, Case] = {}
        self.judged: set[str] = set()

    def add(self, i: int, outcome: Outcome) -> None:
        from rubriclang.evaluation.evaluate import outcome_decisions

        item = outcome[0]
        if i:
            self.columns[i + (self.base is not None)].decisions[item] = outcome[2].decision
            return
        self.judged.add(item)
        if (c := case(self.graph, outcome)) is not None:
            self.cases[item] = c
        # The graph's and its baseline's columns; the compared graphs' (after them) get their own outcomes.
        for col, d in zip(self.columns, outcome_decisions(self.graph, self.base, outcome), strict=False):
            col.decisions[item] = d


def held_out_report(
    graph: CheckedGraph,
    fitted: CheckedGraph,
    columns: Sequence[Column],
    all_cases: dict[str, Case],
    held_items: Sequence[Item],
    held_gold: dict[str, Any],
    mode: str | None,
) -> Evaluation:
    """The fitted graph, the graph as written, its equal-weight baseline and
    the compared graphs (`Judged.columns`), on exactly the same held-out items."""
    from rubriclang.evaluation.evaluate import Column, evaluate

    held = {it.id for it in held_items}
    own = [(i, d) for i, d in columns[0].decisions.items() if i in held]
    composer = Recomposer(fitted)
    ok = [all_cases[i] for i, _ in own if i in all_cases]
    decided = dict(zip((c.id for c in ok), composer.decisions(fitted, ok), strict=True))
    fitted_col = Column(
        f"fitted ({os.path.basename(fitted.path)})", {i: decided.get(i, d) for i, d in own}, "graph", fitted.name
    )
    # `evaluate` scores the held-out items only: the other items' decisions are not read.
    return evaluate(graph, held_items, held_gold, [fitted_col, *columns], mode)


@attrs.frozen
class Summary:
    """What was fitted, how, and the cross-validation figures."""

    out: str
    metric: str
    seed: int
    params: list[Param]
    result: Fitted
    cv: list[Fold] | None
    dev: int
    fitted_on: int
    held: int
    left_out: dict[str, list[str]]  # reason -> dev items the fit could not use

    def moves(self) -> list[tuple[str, Any, Any]]:
        return [(p.label, p.value, v) for p, v in zip(self.params, self.result.values, strict=True)]

    def dev_figures(self) -> tuple[float, float]:
        """(fitted, as written) on the dev items fitted on."""
        return metric_value(self.metric, self.result.loss), metric_value(self.metric, self.result.start_loss)

    def cv_figures(self) -> tuple[float | None, float | None]:
        """(fitted, as written), the cross-validation's means over folds."""
        if not self.cv:
            return None, None
        return _mean([f.fitted for f in self.cv]), _mean([f.written for f in self.cv])

    def to_json(self) -> dict[str, Any]:
        from rubriclang.evaluation.metrics import DEFINITIONS

        cv = None
        if self.cv is not None:
            fitted, written = self.cv_figures()
            cv = {
                "folds": [attrs.asdict(f) for f in self.cv],
                "fitted": fitted,
                "written": written,
                "fitted_minus_written": _minus(fitted, written),
            }
        dev_fitted, dev_written = self.dev_figures()
        return {
            "fitted": self.out,
            "metric": self.metric,
            "metric_definition": DEFINITIONS[self.metric].to_json(),
            "seed": self.seed,
            "split": {
                "dev": self.dev,
                "fitted_on": self.fitted_on,
                "held_out": self.held,
                "dev_left_out": self.left_out,
            },
            "params": [{"param": n, "written": a, "fitted": b} for n, a, b in self.moves()],
            "dev": {
                "written": dev_written,
                "fitted": dev_fitted,
                "fitted_minus_written": _minus(dev_fitted, dev_written),
                "evaluations": self.result.evaluations,
            },
            "cross_validation": cv,
        }

    def text(self, wrote: bool = True) -> str:
        done = f"Wrote {self.out}." if wrote else f"{self.out} not written (--refuse-worse)."
        lines = [
            f"Fitted {len(self.params)} numbers on {self.fitted_on} of {self.dev} dev items (metric {self.metric}, "
            f"seed {self.seed}); {self.held} items held out. {done}"
        ]
        for reason, ids in self.left_out.items():
            shown = ", ".join(ids[:10]) + (f", ... {len(ids) - 10} more" if len(ids) > 10 else "")
            lines.append(f"  dev items not fitted on, {reason}: {len(ids)} ({shown})")
        for name, a, b in self.moves():
            lines.append(f"  {name}: {_num(a)} -> {_num(b)}" if float(a) != float(b) else f"  {name}: {_num(a)} (kept)")
        if not self.params:
            lines.append("  (no free numbers: every node is fixed or has none)")
        dev_fitted, dev_written = self.dev_figures()
        lines.append(
            f"Dev {self.metric}: fitted {dev_fitted:.3f}, as written {dev_written:.3f}, fitted - as written "
            f"{dev_fitted - dev_written:+.3f} (on the items fitted on; {self.result.evaluations} evaluations)."
        )
        if self.cv:
            fitted, written = self.cv_figures()
            per = ", ".join(f"{f.fitted:.3f}/{f.written:.3f}" for f in self.cv)
            lines.append(
                f"Cross-validation ({len(self.cv)} folds of the dev split), {self.metric}: "
                f"fitted {_fmt(fitted)}, as written {_fmt(written)}, fitted - as written "
                f"{_fmt(_minus(fitted, written), '+.3f')} (per fold, fitted/as written: {per})."
            )
        return "\n".join(lines)


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a - b, 6)


def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "n/a" if x is None else format(x, spec)


def worse(
    summary: Summary, report: Evaluation, mode: str, graph_path: str, repeats: Repeats | None = None
) -> list[str]:
    """Why the fitted numbers look worse than GRAPH's as written, one
    sentence per witness: the cross-validation's mean over folds, the
    held-out paired difference (fitted minus as written) of the fit's
    metric, and with `repeats` that difference's mean over the splits.
    Empty when none says so."""
    from rubriclang.evaluation.metrics import DEFINITIONS

    metric = summary.metric
    sign = -1.0 if DEFINITIONS[metric].better == "lower" else 1.0
    out = []
    fitted, written = summary.cv_figures()
    if fitted is not None and written is not None and sign * (fitted - written) < 0:
        out.append(
            f"cross-validation on the dev split says the fitted numbers are worse than as written: {metric} fitted "
            f"{fitted:.3f}, as written {written:.3f} (fitted - as written {fitted - written:+.3f})"
        )
    result = report.modes.get(mode)
    diff = result.differences.get(written_name(graph_path), {}).get(metric) if result else None
    if diff is not None and diff.value is not None and sign * diff.value < 0:
        bound = diff.high if sign > 0 else diff.low
        sure = bound is not None and sign * bound < 0
        interval = f" [{diff.low:+.3f}, {diff.high:+.3f}]" if diff.low is not None and diff.high is not None else ""
        out.append(
            f"the held-out split says the fitted graph is worse than as written: {metric} fitted - as written "
            f"{diff.value:+.3f}{interval} on {diff.n} items" + (", an interval that excludes 0" if sure else "")
        )
    if repeats is not None:
        name = written_name(graph_path)
        across = spread([_held_value(rep, mode, "differences", name, metric) for _, rep in repeats.runs])
        if across is not None and sign * across.mean < 0:
            out.append(
                f"across {across.n} random splits the fitted numbers are worse than as written on the held-out "
                f"items: {metric} fitted - as written {across.text('+.3f')}"
            )
    return out


# --- repeated splits ------------------------------------------------------------------


@attrs.frozen
class Spread:
    """One figure across the repeated splits: mean, sample sd, min and max."""

    mean: float
    sd: float | None
    low: float
    high: float
    n: int

    def to_json(self) -> dict[str, Any]:
        from rubriclang.evaluation.metrics import rounded as r

        return {"mean": r(self.mean), "sd": r(self.sd), "min": r(self.low), "max": r(self.high), "splits": self.n}

    def text(self, spec: str = ".3f") -> str:
        sd = "n/a" if self.sd is None else format(self.sd, ".3f")
        return f"{self.mean:{spec}} sd {sd} [{self.low:{spec}}, {self.high:{spec}}]"


def spread(values: Sequence[float | None]) -> Spread | None:
    """The spread of the defined values (None when none is)."""
    xs = [float(x) for x in values if x is not None and math.isfinite(x)]
    if not xs:
        return None
    mean = math.fsum(xs) / len(xs)
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else None
    return Spread(mean, sd, min(xs), max(xs), len(xs))


@attrs.frozen
class Repeats:
    """Each figure of `rbg fit`'s report across repeated random splits, from
    the splits' (Summary, held-out Evaluation) pairs."""

    seeds: tuple[int, ...]
    runs: tuple[tuple[Summary, Evaluation], ...]

    def _held(self) -> dict[str, dict[str, dict[str, dict[str, Spread | None]]]]:
        """mode -> metrics|differences -> column -> metric -> spread."""
        out: dict[str, dict[str, dict[str, dict[str, Spread | None]]]] = {}
        first = self.runs[0][1]
        for mode, r in first.modes.items():
            out[mode] = {}
            for part in ("metrics", "differences"):
                out[mode][part] = {
                    col: {
                        m: spread([_held_value(rep, mode, part, col, m) for _, rep in self.runs])
                        for m in getattr(r, part)[col]
                    }
                    for col in getattr(r, part)
                }
        return out

    def to_json(self) -> dict[str, Any]:
        j = _spread_json
        dev = [s.dev_figures() for s, _ in self.runs]
        cv = [s.cv_figures() for s, _ in self.runs]
        return {
            "seeds": list(self.seeds),
            "dev": {
                "fitted": j(spread([f for f, _ in dev])),
                "written": j(spread([w for _, w in dev])),
                "fitted_minus_written": j(spread([_minus(f, w) for f, w in dev])),
            },
            "cross_validation": {
                "fitted": j(spread([f for f, _ in cv])),
                "written": j(spread([w for _, w in cv])),
                "fitted_minus_written": j(spread([_minus(f, w) for f, w in cv])),
            },
            "held_out": {
                mode: {part: {c: {m: j(x) for m, x in ms.items()} for c, ms in cs.items()} for part, cs in p.items()}
                for mode, p in self._held().items()
            },
        }

    def text(self, metric: str) -> str:
        from rubriclang.evaluation.evaluate import _table

        s = _spread_text
        dev = [s_.dev_figures() for s_, _ in self.runs]
        cv = [s_.cv_figures() for s_, _ in self.runs]
        lines = [
            f"Across {len(self.seeds)} random splits (seeds {self.seeds[0]} to {self.seeds[-1]}; split, folds and "
            "search each seeded), each figure's mean, sd and [min, max]:",
            f"  dev {metric}: fitted {s(spread([f for f, _ in dev]))}, as written {s(spread([w for _, w in dev]))}",
        ]
        if any(f is not None for f, _ in cv):
            across = spread([_minus(f, w) for f, w in cv])
            lines.append(f"  cross-validation {metric}: fitted - as written {s(across, '+.3f')}")
        for mode, p in self._held().items():
            cols = list(p["metrics"])
            metrics = list(p["metrics"][cols[0]]) if cols else []
            lines += ["", f"  held-out {mode}:"]
            lines += _table(["metric", *cols], [[m, *(s(p["metrics"][c][m]) for c in cols)] for m in metrics])
            if p["differences"]:
                lines += ["", f"  held-out {mode}, paired differences, `{cols[0]}` minus each column:"]
                dcols = list(p["differences"])
                rows = [[m, *(s(p["differences"][c][m], "+.3f") for c in dcols)] for m in metrics]
                lines += _table(["metric", *dcols], rows)
        return "\n".join(lines)


def _held_value(report: Evaluation, mode: str, part: str, col: str, metric: str) -> float | None:
    r = report.modes.get(mode)
    e: Estimate | None = getattr(r, part).get(col, {}).get(metric) if r is not None else None
    return None if e is None else e.value


def _spread_json(s: Spread | None) -> dict[str, Any] | None:
    return None if s is None else s.to_json()


def _spread_text(s: Spread | None, spec: str = ".3f") -> str:
    return "n/a" if s is None else s.text(spec)


def _mean(xs: list[float]) -> float | None:
    xs = [x for x in xs if math.isfinite(x)]
    return round(math.fsum(xs) / len(xs), 6) if xs else None


def _num(x: float) -> str:
    from rubriclang.catalog.types import fmt_short

    return fmt_short(x)
