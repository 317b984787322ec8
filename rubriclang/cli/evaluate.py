"""`rbg eval GRAPH... ITEMS`: agreement with gold labels, beside a baseline
and other graphs, on exactly the same items (docs/evaluation.md)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os

import attrs
import click

from rubriclang.cli.backends import interpreter, llm_session, local_backend, open_llm
from rubriclang.cli.errors import DataError, data_error
from rubriclang.cli.estimate import echo_estimate, no_calls, prices_for, usage_json, usage_text
from rubriclang.cli.gates import (
    EVAL_GATE_OPTIONS,
    GateOptions,
    at_option,
    check_eval,
    eval_gates,
    report_failures,
)
from rubriclang.cli.gates import render_text as render_gates
from rubriclang.cli.llmoptions import LLMOptions, llm_options
from rubriclang.cli.loading import ValidatedItems, load_graph, load_graph_set
from rubriclang.cli.options import JudgingOptions, collect, judging_options
from rubriclang.cli.params import FiniteFloat, fallback_option
from rubriclang.cli.project import concurrency as project_concurrency
from rubriclang.cli.project import project_config, with_cache


@attrs.frozen
class EvalOptions:
    """What `rbg eval` compares against, and with: recorded judgments to
    replay, the baseline, the gold's codes, the coverage it requires."""

    traces: tuple[str, ...]
    baseline: str
    labels: tuple[str, ...]
    min_coverage: float | None


_EVAL_OPTIONS = [
    click.option(
        "--traces",
        multiple=True,
        type=click.Path(exists=True, dir_okay=False),
        help=(
            "Replay these recorded judgments instead of judging: one file for every graph, or one per graph in order."
        ),
    ),
    click.option(
        "--baseline",
        type=click.Choice(["equal", "graph-weights", "none"]),
        default="equal",
        show_default=True,
        help=(
            "The flat baseline of the first graph: its criteria's equal-weight mean, the weights of its top reducer, "
            "or none."
        ),
    ),
    click.option(
        "--label",
        "labels",
        multiple=True,
        metavar="CODE=VALUE,...",
        help=(
            "Map the gold codes of a data set onto gold values, e.g. 1=a,2=b,0=tie; every gold value must then be a "
            "code."
        ),
    ),
    click.option(
        "--min-coverage",
        type=FiniteFloat(0, 1),
        default=None,
        help="Exit 1 when the share of items with gold scored in every column is below this.",
    ),
]


@click.command(name="eval")
@click.argument("paths", nargs=-1, required=True, metavar="GRAPH... ITEMS", type=click.Path(exists=True))
@collect(EvalOptions, _EVAL_OPTIONS, "opts")
@judging_options
@fallback_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@llm_options
@collect(GateOptions, EVAL_GATE_OPTIONS, "gates")
def evaluate(
    paths, opts: EvalOptions, judging: JudgingOptions, fallback, fmt, llm: LLMOptions, gates: GateOptions
) -> None:
    """Compare the decisions of each GRAPH on ITEMS with their `gold` labels.

    Pointwise numeric judges: exact, within-1, MAE, Pearson, Spearman,
    Kendall; bool and label judges: accuracy, macro-F1, Cohen's kappa and the
    confusion matrix; pairwise judges: three-way agreement (ties included),
    agreement without ties, coverage, tie and abstain rates (formulas:
    docs/evaluation.md). Each with a 95% interval (Wilson for proportions,
    else bootstrap); every column after the first with the paired difference
    first column minus it. With --traces the recorded judgments are replayed
    under each graph, never trusted. LLM calls go through the call cache, so evaluating again
    makes no calls. Exit status: 0, 1 below --min-coverage, 2 bad input,
    4 a gate (--fail-under, --fail-if) failed.

    A GRAPH may be a folder of graphs compiled per instance (`rbg compile
    --out-dir`): each item is judged by its own graph, and the items whose
    graph did not compile are counted apart (or judged by --fallback);
    give a direct judge after it (`rbg eval GRAPHS/ direct.rbg ITEMS`) to
    compare on the same items.
    """
    if len(paths) < 2:
        raise click.UsageError("give at least one GRAPH and the ITEMS file")
    if os.path.isdir(paths[-1]):
        raise click.UsageError(f"the last argument is the ITEMS file; `{paths[-1]}` is a folder")
    if fallback is not None and not any(os.path.isdir(p) for p in paths[:-1]):
        raise click.UsageError("--fallback is for a folder of compiled graphs: no GRAPH is a folder")
    if opts.traces and len(opts.traces) not in (1, len(paths) - 1):
        raise click.UsageError(
            f"give one --traces file for every graph, or one per graph ({len(paths) - 1}); got {len(opts.traces)}"
        )
    if llm.estimate and (gates.all() or opts.min_coverage is not None):
        raise click.UsageError(
            "--estimate evaluates nothing, so there is nothing for --fail-under, --fail-if or --min-coverage to gate: "
            "give one of them"
        )
    # In a project (docs/project.md), --concurrency and the call cache default to its settings, as for rbg run.
    config = project_config(paths[0])
    judging = attrs.evolve(judging, concurrency=project_concurrency(judging.concurrency, config))
    llm = with_cache(llm, config)
    with contextlib.ExitStack() as stack:
        if llm.estimate:
            return _estimate(stack, paths[:-1], paths[-1], opts, judging, fallback, fmt, llm)
        _evaluate(stack, paths[:-1], paths[-1], opts, judging, fallback, fmt, llm, gates)


def _names(graphs, paths) -> list[str]:
    """Column names: each rubric's name, or its path where names repeat."""
    names = [g.name for g in graphs]
    out = [n if names.count(n) == 1 and not n.endswith(" baseline") else p for n, p in zip(names, paths, strict=True)]
    # The same file given twice: numbered, so no column hides another.
    return [n if out.count(n) == 1 else f"{n} #{out[:i].count(n) + 1}" for i, n in enumerate(out)]


def _same_task(graphs, paths) -> None:
    """Every graph must answer in the first one's terms: one gold fits all."""
    want = graphs[0].readouts.get("pointwise")
    for g, p in zip(graphs[1:], paths[1:], strict=True):
        have = g.readouts.get("pointwise")
        if want and have and have.output != want.output:
            raise DataError(
                f"`{p}` reads out `{have.output}`, `{paths[0]}` reads out `{want.output}`: "
                "graphs compared on the same gold must give the same output type"
            )


class _ItemsFile:
    """The items of `path`, read anew on each pass, since scoring keeps
    none of them; a pipe (or any file that is not regular), which can be
    read once, is held."""

    def __init__(self, path: str, shape=None):
        from rubriclang.interp.items import read_items

        self._read = lambda: read_items(path, shape)
        self._held = None if os.path.isfile(path) else list(self._read())

    def __iter__(self):
        return iter(self._held) if self._held is not None else self._read()


def _gold_table(source, graph, columns, items, mode, label_map):
    """The table of every item's id, mode and gold, its columns still
    empty; DataError when no item has gold."""
    from rubriclang.evaluation.evaluate import Table
    from rubriclang.evaluation.gold import golds

    table = Table(graph, [c.name for c in columns], mode)
    with_gold = 0
    for it, g in golds(source, graph, items, mode, label_map):
        table.add(it, g)
        with_gold += g is not None
    if not with_gold:
        raise DataError(f"`{items}` has no `gold` labels to evaluate against")
    return table


class _Collect:
    """Outcomes into the table as they come: judge `i`'s decisions in its
    column (and the first graph's baseline's), a traced item's mode checked
    against the items' (or --mode), and records for items not here counted."""

    def __init__(self, table, graphs, columns, base, traces):
        self.table, self.graphs, self.columns, self.base, self.traces = table, graphs, columns, base, traces
        self.extra = [0] * len(graphs)

    def __call__(self, i, outcome) -> None:
        from rubriclang.evaluation.evaluate import outcome_decisions

        item, m, _ = outcome
        want = self.table.mode_of(item)
        if want is None:
            if not self.traces:  # judged from the items file, read again: it changed under us
                raise DataError(f"item `{item}` appeared in the items file while it was being evaluated; run again")
            self.extra[i] += 1
            return
        if want != m:
            raise DataError(
                f"`{self.traces[i]}` judged item `{item}` {m}, but it is {want} here; evaluate it in the mode it was "
                f"judged in (--mode {m})"
            )
        base = self.base if i == 0 else None
        for c, d in zip(
            (self.columns[i], base), outcome_decisions(self.graphs[i], base, outcome), strict=False
        ):  # no baseline: one decision
            self.table.decide(c.name, item, d)


def _evaluate(
    stack,
    graph_paths,
    items,
    opts: EvalOptions,
    judging: JudgingOptions,
    fallback,
    fmt,
    llm: LLMOptions,
    gates: GateOptions,
) -> None:
    from rubriclang.errors import LocatedError
    from rubriclang.evaluation.evaluate import Column, baseline_column, evaluate_table, no_baseline
    from rubriclang.evaluation.gold import GoldValueError, parse_label_map
    from rubriclang.interp.graphset import GraphSet

    judges, graphs = _judges(graph_paths, fallback)
    traces, baseline, labels, mode = opts.traces, opts.baseline, opts.labels, judging.mode
    if isinstance(judges[0], GraphSet) and baseline != "none":
        baseline = "none"  # each item has its own graph: no one flat baseline
    names = [
        p if isinstance(j, GraphSet) else n
        for j, p, n in zip(judges, graph_paths, _names(graphs, graph_paths), strict=True)
    ]
    try:
        label_map = parse_label_map(labels) if labels else None
    except GoldValueError as exc:
        raise click.BadParameter(exc.message + (f" ({exc.hint})" if exc.hint else ""), param_hint="--label") from None
    llm_backend = None
    notes: list[str] = []
    # The columns first, empty: decisions go straight into the table, which is all that is kept per item.
    columns = [Column(n, {}, "graph", g.name) for g, n in zip(graphs, names, strict=True)]
    base = baseline_column(graphs[0], baseline)
    families = _gate_families(graphs[0])
    gated = [c.name for c in columns] + ([base.name] if base else [])
    at_option("--fail-under", eval_gates, gates.fail_under, families, gated, True)
    at_option("--fail-if", eval_gates, gates.fail_if, families, gated)
    try:
        source = _ItemsFile(items, _one_shape(judges, graph_paths))
        for i, j in enumerate(judges):
            if isinstance(j, GraphSet):
                columns[i], note = _set_column(columns[i], j, source)
                notes += [note] if note else []
        columns += [base] if base else []
        table = _gold_table(source, graphs[0], columns, items, mode, label_map)
        per_graph = list(traces) * len(graphs) if len(traces) == 1 else list(traces)
        collect = _Collect(table, graphs, columns, base, per_graph)
        if traces:
            from rubriclang.cli.replay import warn_unverified
            from rubriclang.interp.trace import ItemsNow

            now = ItemsNow(source, items)  # a record of a changed item is refused, never scored
            for i, (j, t) in enumerate(zip(judges, per_graph, strict=True)):
                for outcome in _replayed(j, t, now):
                    collect(i, outcome)
            warn_unverified(now.warnings())
        else:
            backend = local_backend(judging.annotations, judging.recorded)
            llm_backend = open_llm(stack, _llm_judge(judges, graphs), llm)
            checked = ValidatedItems(source, backend)
            progress = None
            if llm_backend is not None:  # only LLM criteria take long enough to need it
                from rubriclang.cli.progress import Progress

                progress = Progress("items", len(table.ids) * len(judges), lines=fmt == "text")
            try:
                asyncio.run(
                    judge_graphs(judges, checked, backend, llm_backend, judging.concurrency, mode, progress, collect)
                )
            finally:
                if progress is not None:
                    progress.done()
            checked.warn_unknown(items)
    except LocatedError as exc:
        raise data_error(exc) from None
    if isinstance(judges[0], GraphSet):
        notes.append(f"no baseline: each item of `{graph_paths[0]}` has its own graph")
    elif n := no_baseline(graphs[0], baseline):
        notes.append(n)
    if traces:
        for t, i in {t: i for i, t in enumerate(per_graph)}.items():
            if extra := collect.extra[i]:
                notes.append(f"{extra} records of `{t}` are for items not in `{items}`: not scored")
    report = evaluate_table(table, columns, notes)
    usage = usage_json(llm_backend, prices_for(graph_paths[0])) if llm_backend is not None else None
    results = _print_report(report, check_eval(gates.all(), report.to_json(), families), fmt, usage)
    if usage is not None:
        # On stderr: stdout is the report, which scripts may read (with --format json, as `llm`).
        click.echo(usage_text(usage), err=True)
    _exit(report, results, opts.min_coverage)


def _exit(report, results, min_coverage) -> None:
    """Exit 4 when a gate failed, else 1 below --min-coverage (each said on stderr)."""
    below = min_coverage is not None and (report.coverage or 0.0) < min_coverage
    if below:
        click.echo(f"coverage {report.coverage or 0.0:.3f} is below --min-coverage {min_coverage:g}", err=True)
    report_failures(results)
    if below:
        raise SystemExit(1)


def _print_report(report, results, fmt, usage=None):
    """The report on stdout, each gate's result after it (JSON: `gates`, and
    what the LLM criteria spent: `llm`)."""
    from rubriclang.evaluation.evaluate import render_text

    if fmt == "json":
        doc = {**report.to_json(), "llm": usage} if usage is not None else report.to_json()
        click.echo(
            json.dumps({**doc, "gates": [r.to_json() for r in results]} if results else doc, sort_keys=True, indent=2)
        )
    else:
        click.echo(render_text(report) + ("\n\n" + render_gates(results) if results else ""))
    return results


def _gate_families(graph) -> dict[str, list[str]]:
    """Readout (mode) -> the metric names a gate may read for it."""
    from rubriclang.evaluation.evaluate import MODES, judge_kind
    from rubriclang.evaluation.metrics import METRICS

    return {m: list(METRICS[judge_kind(graph, m)[0]]) for m in MODES if m in graph.readouts}


def _judges(graph_paths, fallback):
    """(the judges, a graph or a folder of compiled graphs each; a graph of
    each), all answering in the first one's terms."""
    from rubriclang.interp.graphset import GraphSet

    # A folder of compiled graphs answers in the type of its graphs, which must all agree.
    judges = [load_graph_set(p, fallback) if os.path.isdir(p) else load_graph(p) for p in graph_paths]
    graphs = [_representative(j, p) if isinstance(j, GraphSet) else j for j, p in zip(judges, graph_paths, strict=True)]
    for j in judges:
        if isinstance(j, GraphSet):
            _same_task(graphs[:1] + j.all_graphs(), [graph_paths[0]] + [g.path for g in j.all_graphs()])
    _same_task(graphs, graph_paths)
    return judges, graphs


def _estimate(stack, graph_paths, items, opts: EvalOptions, judging, fallback, fmt, llm: LLMOptions) -> None:
    """`rbg eval --estimate`: every judge through ITEMS with requests
    tallied, not sent (a request two judges make alike counted once, as the
    call cache answers it); replayed --traces call nothing."""
    from rubriclang.errors import LocatedError
    from rubriclang.llm.estimate import Estimate

    judges, graphs = _judges(graph_paths, fallback)
    if opts.traces:
        return no_calls("rbg eval --traces", "it replays the recorded judgments", fmt)
    estimate = Estimate()
    backend = local_backend(judging.annotations, judging.recorded)
    llm_backend = open_llm(stack, _llm_judge(judges, graphs), llm, estimate=estimate)
    try:
        checked = ValidatedItems(_ItemsFile(items, _one_shape(judges, graph_paths)), backend)
        asyncio.run(
            judge_graphs(
                judges, checked, backend, llm_backend, judging.concurrency, judging.mode, each=lambda _i, _o: None
            )
        )
    except LocatedError as exc:
        raise data_error(exc) from None
    echo_estimate(estimate, ["judge"], prices_for(graph_paths[0]), [], fmt, llm.max_retries)


async def judge_graphs(judges, items, backend, llm_backend, concurrency, mode, progress=None, each=None):
    """Each judge's (item id, mode, composition) for every item, in item
    order; a judge is a graph or a folder of compiled graphs (GraphSet),
    ticking `progress` (a `cli.progress.Progress`) once per item and judge.
    With `each`, every outcome goes to `each(judge index, outcome)` as it
    comes instead, and none is kept. Shared by `rbg eval` and `rbg fit`."""
    from rubriclang.interp.graphset import GraphSet, interpreters, run_set

    async with llm_session(llm_backend):
        out = []
        for i, j in enumerate(judges):
            if isinstance(j, GraphSet):
                interps = interpreters(j, lambda g: interpreter(g, [backend, llm_backend], concurrency))
                results = run_set(j, interps, items, concurrency, mode)
            else:
                results = interpreter(j, [backend, llm_backend], concurrency).run(items, mode)
            outcomes = []
            async for r in results:
                if each is None:
                    outcomes.append((r.item.id, r.mode, r.composition))
                else:
                    each(i, (r.item.id, r.mode, r.composition))
                if progress is not None:
                    progress.tick()
            out.append(outcomes)
        return out


def _representative(gs, path: str):
    g = gs.representative()
    if g is None:
        raise DataError(
            f"`{path}` holds no compiled graph: nothing compiled, so there is no judge to evaluate (give --fallback "
            "GRAPH.rbg to judge its items)"
        )
    return g


def _llm_judge(judges, graphs):
    """What `open_llm` serves: every criterion of every judge."""
    from rubriclang.interp.graphset import GraphSet, Union, union

    parts = [union(j) if isinstance(j, GraphSet) else j for j in judges]
    return Union(tuple(c for p in parts for c in p.criteria), graphs[0].path)


def _one_shape(judges, paths):
    """The item shape the judges declare, which must be one (the items are
    read once, for all of them)."""
    from rubriclang.items.shape import shape_of

    shapes = [shape_of(j) for j in judges]
    for shape, path in zip(shapes[1:], paths[1:], strict=True):
        if shape != shapes[0]:
            raise DataError(
                f"`{path}` declares another item shape than `{paths[0]}`: graphs compared on the same items must read "
                "them as one shape (the same `item { ... }` declaration, or none)"
            )
    return shapes[0]


def _replayed(judge, traces, items):
    from rubriclang.evaluation.evaluate import replayed
    from rubriclang.interp.graphset import GraphSet
    from rubriclang.interp.replay import replay_set

    if not isinstance(judge, GraphSet):
        return replayed(judge, traces, items)
    return ((r.item, r.mode, r.composition) for r in replay_set(judge, traces, items=items))


def _set_column(column, gs, items):
    """The column of a folder of graphs, knowing which items had no compiled
    graph, and a note on what the fallback did with them."""
    import attrs

    from rubriclang.checker.graph import CheckedGraph
    from rubriclang.interp.graphset import ABSTAIN, Missing

    count, missing = 0, {}
    for it in items:  # only the items without a graph are kept
        count += 1
        if isinstance(r := gs.route(it), Missing):
            missing[it.id] = r
    column = attrs.evolve(column, graph=gs.folder)
    if not missing:
        return column, None
    judged = {i for i, r in missing.items() if isinstance(gs.fallback_for(r.graph), CheckedGraph)}
    abstained = sum(1 for r in missing.values() if gs.policy(r.graph) == ABSTAIN)
    parts = []
    if judged:
        graphs = sorted({gs.policy(missing[i].graph) for i in judged})
        parts.append(f"{len(judged)} judged by the fallback " + ", ".join(f"`{g}`" for g in graphs))
    if abstained:
        parts.append(f"{abstained} abstained on (fallback `abstain`)")
    if len(missing) - len(judged) - abstained:
        parts.append(f"{len(missing) - len(judged) - abstained} recorded as compile failures")
    uncompiled = frozenset(missing.keys() - judged)
    note = f"{len(missing)} of {count} items have no compiled graph in `{gs.folder}`: " + "; ".join(parts)
    if uncompiled:
        note += " (left out as `compile failed`)"
        column = attrs.evolve(column, uncompiled=uncompiled)
    return column, note
