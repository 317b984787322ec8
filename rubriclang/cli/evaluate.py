"""`rbg eval GRAPH ITEMS`: agreement with gold labels, beside baselines."""

from __future__ import annotations

import asyncio
import contextlib
import json

import click

from rubriclang.cli.execution import (
    DataError,
    ValidatedItems,
    annotations_option,
    concurrency_option,
    data_error,
    interpreter,
    llm_options,
    llm_session,
    load_graph,
    local_backend,
    mode_option,
    open_llm,
    recorded_option,
    usage_json,
    usage_text,
)


@click.command(name="eval")
@click.argument("graph", type=click.Path(exists=True, dir_okay=False))
@click.argument("items", type=click.Path(exists=True, dir_okay=False))
@click.option("--traces", type=click.Path(exists=True, dir_okay=False), help="Use recorded judgments from this trace file instead of judging.")
@click.option("--baseline", type=click.Choice(["weighted", "none"]), default="weighted", show_default=True, help="The flat weighted baseline beside the graph.")
@mode_option
@concurrency_option
@annotations_option
@recorded_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@llm_options
def evaluate(graph, items, traces, baseline, mode, concurrency, annotations, recorded, fmt, llm) -> None:
    """Compare GRAPH's decisions on ITEMS with their `gold` labels.

    Pointwise: exact agreement, within-1 accuracy, MAE, Pearson, Spearman and
    Kendall; pairwise: accuracy, coverage, tie and abstain rates; each with a
    bootstrap 95% interval. LLM calls go through the call cache, so
    evaluating again makes no calls.
    """
    with contextlib.ExitStack() as stack:
        _evaluate(stack, graph, items, traces, baseline, mode, concurrency, annotations, recorded, fmt, llm)


def _evaluate(stack, graph, items, traces, baseline, mode, concurrency, annotations, recorded, fmt, llm) -> None:
    from rubriclang.evaluation.evaluate import evaluate as do_eval
    from rubriclang.evaluation.evaluate import render_text, strip_private
    from rubriclang.interp.items import ItemError, read_items
    from rubriclang.interp.trace import read_traces

    g = load_graph(graph)
    llm_backend = None
    try:
        # Read once: ITEMS may be a pipe.
        all_items = list(read_items(items))
        gold = {it.id: it.gold for it in all_items}
        if traces:
            records = [rec for _, rec in read_traces(traces) if rec["item"] in gold]
        else:
            backend = local_backend(annotations, recorded)
            llm_backend = open_llm(stack, g, llm)
            interp = interpreter(g, [backend, llm_backend], concurrency)

            checked = ValidatedItems(all_items, backend)

            async def go():
                async with llm_session(llm_backend):
                    return [r.record async for r in interp.run(checked, mode)]

            records = asyncio.run(go())
            checked.warn_unknown(items)
    except ItemError as exc:
        raise data_error(exc) from None
    if not any(v is not None for v in gold.values()):
        raise DataError(f"`{items}` has no `gold` labels to evaluate against")
    report = do_eval(g, records, gold, with_baseline=baseline == "weighted")
    if fmt == "json":
        click.echo(json.dumps(strip_private(report), sort_keys=True, indent=2))
    else:
        click.echo(render_text(report))
    if llm_backend is not None:
        # On stderr: stdout is the report, which scripts may read.
        click.echo(usage_text(usage_json(llm_backend)), err=True)
