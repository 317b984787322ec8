"""`rbg eval GRAPH... ITEMS`: agreement with gold labels, beside a baseline
and other graphs, on exactly the same items (docs/evaluation.md)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from typing import TYPE_CHECKING

import click

from rubriclang.cli.backends import interpreter, llm_session, local_backend, open_llm
from rubriclang.cli.errors import DataError, data_error
from rubriclang.cli.llmoptions import llm_options
from rubriclang.cli.loading import ValidatedItems, load_graph, load_graph_set
from rubriclang.cli.outputs import usage_json, usage_text
from rubriclang.cli.params import (
    FiniteFloat,
    annotations_option,
    concurrency_option,
    fallback_option,
    mode_option,
    recorded_option,
)

if TYPE_CHECKING:  # the CLI imports the evaluation lazily
    from rubriclang.evaluation.evaluate import Column


@click.command(name="eval")
@click.argument("paths", nargs=-1, required=True, metavar="GRAPH... ITEMS", type=click.Path(exists=True))
@click.option(
    "--traces",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Replay these recorded judgments instead of judging: one file for every graph, or one per graph in order.",
)
@click.option(
    "--baseline",
    type=click.Choice(["equal", "graph-weights", "none"]),
    default="equal",
    show_default=True,
    help=(
        "The flat baseline of the first graph: its criteria's equal-weight mean, the weights of its top reducer, or "
        "none."
    ),
)
@click.option(
    "--label",
    "labels",
    multiple=True,
    metavar="CODE=VALUE,...",
    help="Map the gold codes of a data set onto gold values, e.g. 1=a,2=b,0=tie; every gold value must then be a code.",
)
@click.option(
    "--min-coverage",
    type=FiniteFloat(0, 1),
    default=None,
    help="Exit 1 when the share of items with gold scored in every column is below this.",
)
@mode_option
@concurrency_option
@annotations_option
@recorded_option
@fallback_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@llm_options
def evaluate(
    paths, traces, baseline, labels, min_coverage, mode, concurrency, annotations, recorded, fallback, fmt, llm
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
    makes no calls. Exit status: 0, 1 below --min-coverage, 2 bad input.

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
    if traces and len(traces) not in (1, len(paths) - 1):
        raise click.UsageError(
            f"give one --traces file for every graph, or one per graph ({len(paths) - 1}); got {len(traces)}"
        )
    with contextlib.ExitStack() as stack:
        _evaluate(
            stack,
            paths[:-1],
            paths[-1],
            traces,
            baseline,
            labels,
            min_coverage,
            mode,
            concurrency,
            annotations,
            recorded,
            fallback,
            fmt,
            llm,
        )


def _names(graphs, paths) -> list[str]:
    """Column names: each rubric's name, or its path where names repeat."""
    names = [g.name for g in graphs]
    out = [n if names.count(n) == 1 and not n.endswith(" baseline") else p for n, p in zip(names, paths)]
    # The same file given twice: numbered, so no column hides another.
    return [n if out.count(n) == 1 else f"{n} #{out[:i].count(n) + 1}" for i, n in enumerate(out)]


def _same_task(graphs, paths) -> None:
    """Every graph must answer in the first one's terms: one gold fits all."""
    want = graphs[0].readouts.get("pointwise")
    for g, p in zip(graphs[1:], paths[1:]):
        have = g.readouts.get("pointwise")
        if want and have and have.output != want.output:
            raise DataError(
                f"`{p}` reads out `{have.output}`, `{paths[0]}` reads out `{want.output}`: "
                "graphs compared on the same gold must give the same output type"
            )


def _same_modes(items, mode, traces, outcomes) -> None:
    """Traced items must be judged in the mode the items (or --mode) give."""
    want = {it.id: mode or it.mode for it in items}
    for t, outs in zip(traces, outcomes):
        for item, m, _ in outs:
            if want.get(item, m) != m:
                raise DataError(
                    f"`{t}` judged item `{item}` {m}, but it is {want[item]} here; evaluate it in the mode it was "
                    f"judged in (--mode {m})"
                )


def _evaluate(
    stack,
    graph_paths,
    items,
    traces,
    baseline,
    labels,
    min_coverage,
    mode,
    concurrency,
    annotations,
    recorded,
    fallback,
    fmt,
    llm,
) -> None:
    from rubriclang.errors import LocatedError
    from rubriclang.evaluation.evaluate import evaluate as do_eval
    from rubriclang.evaluation.evaluate import graph_columns, no_baseline, render_text
    from rubriclang.evaluation.gold import GoldValueError, parse_label_map, read_gold
    from rubriclang.interp.graphset import GraphSet
    from rubriclang.interp.items import read_items

    # A folder of compiled graphs answers in the type of its graphs, which must all agree.
    judges = [load_graph_set(p, fallback) if os.path.isdir(p) else load_graph(p) for p in graph_paths]
    graphs = [_representative(j, p) if isinstance(j, GraphSet) else j for j, p in zip(judges, graph_paths)]
    for j in judges:
        if isinstance(j, GraphSet):
            _same_task(graphs[:1] + j.all_graphs(), [graph_paths[0]] + [g.path for g in j.all_graphs()])
    _same_task(graphs, graph_paths)
    if isinstance(judges[0], GraphSet) and baseline != "none":
        baseline = "none"  # each item has its own graph: no one flat baseline
    names = [p if isinstance(j, GraphSet) else n for j, p, n in zip(judges, graph_paths, _names(graphs, graph_paths))]
    try:
        label_map = parse_label_map(labels) if labels else None
    except GoldValueError as exc:
        raise click.BadParameter(exc.message + (f" ({exc.hint})" if exc.hint else ""), param_hint="--label") from None
    llm_backend = None
    try:
        item_list = list(read_items(items))
        gold = read_gold(item_list, graphs[0], items, mode, label_map)
        if not gold:
            raise DataError(f"`{items}` has no `gold` labels to evaluate against")
        if traces:
            from rubriclang.cli.replay import warn_unverified
            from rubriclang.interp.trace import ItemsNow

            per_graph = list(traces) * len(graphs) if len(traces) == 1 else list(traces)
            now = ItemsNow(item_list, items)  # a record of a changed item is refused, never scored
            outcomes = [list(_replayed(j, t, now)) for j, t in zip(judges, per_graph)]
            warn_unverified(now.warnings())
            _same_modes(item_list, mode, per_graph, outcomes)
        else:
            backend = local_backend(annotations, recorded)
            llm_backend = open_llm(stack, _llm_judge(judges, graphs), llm)
            checked = ValidatedItems(item_list, backend)
            progress = None
            if llm_backend is not None:  # only LLM criteria take long enough to need it
                from rubriclang.cli.progress import Progress

                progress = Progress("items", len(item_list) * len(judges), lines=fmt == "text")
            try:
                outcomes = asyncio.run(judge_graphs(judges, checked, backend, llm_backend, concurrency, mode, progress))
            finally:
                if progress is not None:
                    progress.done()
            checked.warn_unknown(items)
    except LocatedError as exc:
        raise data_error(exc) from None
    columns: list[Column] = []
    notes: list[str] = []
    for i, (g, j, name, outs) in enumerate(zip(graphs, judges, names, outcomes)):
        # The baseline (of the first graph) comes right after the graphs.
        cols = graph_columns(g, name, outs, baseline if i == 0 else "none")
        if isinstance(j, GraphSet):
            cols[0], note = _set_column(cols[0], j, item_list)
            notes += [note] if note else []
        columns.insert(i, cols[0])
        columns.extend(cols[1:])
    if isinstance(judges[0], GraphSet):
        notes.append(f"no baseline: each item of `{graph_paths[0]}` has its own graph")
    elif n := no_baseline(graphs[0], baseline):
        notes.append(n)
    if traces:
        ids = {it.id for it in item_list}
        for t, outs in dict(zip(per_graph, outcomes)).items():
            if extra := sum(1 for item, _, _ in outs if item not in ids):
                notes.append(f"{extra} records of `{t}` are for items not in `{items}`: not scored")
    report = do_eval(graphs[0], item_list, gold, columns, mode, notes)
    click.echo(json.dumps(report.to_json(), sort_keys=True, indent=2) if fmt == "json" else render_text(report))
    usage = usage_json(llm_backend) if llm_backend is not None else None
    if usage is not None:
        # On stderr: stdout is the report, which scripts may read.
        click.echo(usage_text(usage), err=True)
    if min_coverage is not None and (report.coverage or 0.0) < min_coverage:
        click.echo(f"coverage {report.coverage or 0.0:.3f} is below --min-coverage {min_coverage:g}", err=True)
        raise SystemExit(1)


async def judge_graphs(judges, items, backend, llm_backend, concurrency, mode, progress=None):
    """Each judge's (item id, mode, composition) for every item, in item
    order; a judge is a graph or a folder of compiled graphs (GraphSet),
    ticking `progress` (a `cli.progress.Progress`) once per item and judge.
    Shared by `rbg eval` and `rbg fit`."""
    from rubriclang.interp.graphset import GraphSet, interpreters, run_set

    async with llm_session(llm_backend):
        out = []
        for j in judges:
            if isinstance(j, GraphSet):
                interps = interpreters(j, lambda g: interpreter(g, [backend, llm_backend], concurrency))
                results = run_set(j, interps, items, concurrency, mode)
            else:
                results = interpreter(j, [backend, llm_backend], concurrency).run(items, mode)
            outcomes = []
            async for r in results:
                outcomes.append((r.item.id, r.mode, r.composition))
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

    routes = {it.id: gs.route(it) for it in items}
    missing = {i: r for i, r in routes.items() if isinstance(r, Missing)}
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
    note = f"{len(missing)} of {len(items)} items have no compiled graph in `{gs.folder}`: " + "; ".join(parts)
    if uncompiled:
        note += " (left out as `compile failed`)"
        column = attrs.evolve(column, uncompiled=uncompiled)
    return column, note
