"""`rbg audit cheaper GRAPH ITEMS --traces T --profile NAME`: which criteria
can run on a cheaper model profile (docs/audit.md, "Which criteria can run
cheaper"), measured against the repeat noise."""

from __future__ import annotations

import asyncio
import contextlib
import json

import click

from rubriclang.cli.errors import DataError, data_error
from rubriclang.cli.llmoptions import LLMOptions, llm_options, sampling_of


@click.command("cheaper")
@click.argument("graph", type=click.Path(exists=True, dir_okay=False))
@click.argument("items_path", metavar="ITEMS", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--traces",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="The traces GRAPH wrote on ITEMS (rbg run): the judgments every other criterion keeps.",
)
@click.option(
    "--profile", required=True, metavar="NAME", help="The cheaper model profile ([models.NAME] in rubriclang.toml)."
)
@click.option("--criterion", "names", multiple=True, metavar="NAME", help="Only this LLM criterion (repeatable).")
@click.option(
    "--repeats",
    type=click.IntRange(1, 100),
    default=2,
    show_default=True,
    help="Re-judgments per item on each profile (seed + 1 .. seed + N).",
)
@click.option("--concurrency", type=click.IntRange(1, 1024), default=4, show_default=True, help="Judgments in flight.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@llm_options
def cheaper(graph, items_path, traces, profile, names, repeats, concurrency, fmt, llm: LLMOptions) -> None:
    """Re-judge each LLM criterion of GRAPH alone on the model profile
    --profile, every other criterion replayed from --traces, and on its own
    profile as often: per criterion, how often the verdict flips on the
    cheaper profile, against how often it flips by re-judging on its own
    (the repeat noise), each with a 95% Wilson interval and its coverage,
    and the calls, tokens and money each side cost. Exit status: 0, 2 bad
    input (a profile the config lacks, traces of another graph).
    """
    from rubriclang.audit.cheaper import CheaperError, Experiment, candidates, document, render_text, run
    from rubriclang.cli.backends import open_cache
    from rubriclang.cli.estimate import prices_for
    from rubriclang.cli.loading import load_graph
    from rubriclang.config import ConfigError, load_config
    from rubriclang.interp.items import ItemError, read_items
    from rubriclang.interp.trace import ItemsNow, read_traces
    from rubriclang.items.shape import shape_of
    from rubriclang.llm.connect import ConnectError, Connections

    if llm.estimate:
        raise click.UsageError("--estimate is not offered here: the experiment's calls depend on the criteria chosen")
    judge = load_graph(graph)
    try:
        config = load_config(graph)
    except ConfigError as exc:
        raise DataError(f"{exc.where}: {exc.message}" + (f"\n  hint: {exc.hint}" if exc.hint else "")) from None
    if profile not in config.models:
        where = config.path or "no rubriclang.toml or [tool.rubriclang] in pyproject.toml upward from the graph"
        defined = ", ".join(f"`{n}`" for n in sorted(config.models)) or "none"
        raise DataError(
            f"--profile `{profile}`: {where} defines no [models.{profile}] (it defines: {defined})\n"
            f"  hint: add a `[models.{profile}]` table with `base_url` and `model` (docs/judges.md)"
        )
    try:
        chosen, notes = candidates(judge, names, profile)
        items = {it.id: it for it in read_items(items_path, shape_of(judge))}
        records = tuple(read_traces(traces, ItemsNow(items, items_path)))
    except CheaperError as exc:
        raise DataError(str(exc)) from None
    except ItemError as exc:
        raise data_error(exc) from None
    if not chosen:
        raise DataError("no LLM criterion to re-judge: " + "; ".join(notes))
    exp = Experiment(judge, records, items, profile, repeats, chosen, traces, concurrency)
    server, sampling = llm.server(), sampling_of(llm)
    prices = prices_for(graph)

    async def go():
        connections = Connections()
        try:
            return await run(exp, connections, server, sampling, cache, prices)
        finally:
            await connections.aclose()
            connections.stop()

    with contextlib.ExitStack() as stack:
        cache = None if llm.no_cache else open_cache(llm.cache)
        if cache is not None:
            stack.callback(cache.close)
        try:
            results = asyncio.run(go())
        except (CheaperError, ConnectError) as exc:
            hint = getattr(exc, "hint", "")
            raise DataError(getattr(exc, "message", str(exc)) + (f"\n  hint: {hint}" if hint else "")) from None
    doc = document(exp, results, notes)
    click.echo(json.dumps(doc, sort_keys=True, indent=2) if fmt == "json" else render_text(doc), nl=fmt == "json")
