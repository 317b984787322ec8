"""`rbg replay GRAPH TRACES`: recompute decisions from recorded judgments."""

from __future__ import annotations

import collections
import json
import os
import sys

import click

from rubriclang.cli.errors import data_error
from rubriclang.cli.loading import load_graph, load_graph_set
from rubriclang.cli.params import fallback_option


@click.command()
@click.argument("graph", type=click.Path(exists=True))
@click.argument("traces", type=click.Path(exists=True, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--limit", type=int, default=50, show_default=True, help="Changed items named in text output.")
@click.option(
    "--items",
    "items_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Check that every record judged the item of its id as this items file holds it now (refused otherwise).",
)
@fallback_option
def replay(graph, traces, fmt, limit, items_path, fallback) -> None:
    """Recompute composition and readout of TRACES under GRAPH, with no calls.

    GRAPH may be the folder of compiled graphs (and --fallback) that `rbg
    run GRAPHS/` judged with: each record is replayed under the graph it
    was judged by.

    With the graph that wrote the traces, exit 0 when every decision is
    identical. With another version sharing the criteria, list the decisions
    it would change. Exit 1 when any decision differs.

    With --items, a record whose item has changed since it was judged (its
    input, responses, reference... no longer what `item_hash` recorded) is
    refused: exit 2, naming TRACES:LINE and the item.
    """
    from rubriclang.interp.items import ItemError
    from rubriclang.interp.readout import transition_lines
    from rubriclang.interp.replay import replay as do_replay
    from rubriclang.interp.replay import replay_set
    from rubriclang.items.shape import shape_of

    if fallback is not None and not os.path.isdir(graph):
        raise click.UsageError("--fallback is for a folder of compiled graphs: GRAPH is one graph file")
    judge = load_graph_set(graph, fallback) if os.path.isdir(graph) else load_graph(graph)
    try:
        now = items_now(items_path, shape_of(judge))
    except ItemError as exc:
        raise data_error(exc) from None
    if os.path.isdir(graph):
        records = replay_set(judge, traces, values=False, items=now)
    else:
        records = do_replay(judge, traces, values=False, items=now)
    changed = []
    transitions: collections.Counter[str] = collections.Counter()
    n = 0
    try:
        for r in records:
            n += 1
            if r.changed:
                changed.append(r)
                transitions[r.transition()] += 1
    except ItemError as exc:
        raise data_error(exc) from None
    warn_unverified(now.warnings() if now is not None else ())
    if fmt == "json":
        click.echo(
            json.dumps(
                {
                    "items": n,
                    "changed": len(changed),
                    "transitions": dict(sorted(transitions.items())),
                    "differences": [{"item": r.item, "old": r.old.to_json(), "new": r.new.to_json()} for r in changed],
                },
                sort_keys=True,
                indent=2,
            )
        )
    elif not changed:
        click.echo(f"Replayed {n} items: every decision is identical.")
    else:
        click.echo(f"Replayed {n} items: {len(changed)} decisions differ.")
        for line in transition_lines(((r.item, r.transition()) for r in changed), limit):
            click.echo(line)
    if changed:
        sys.exit(1)


def items_now(path: str | None, shape=None):
    """The items of `--items` to check trace records against
    (interp.trace.ItemsNow), read for the judge's declared item shape
    (`items.shape.shape_of`), or None without it; raises ItemError."""
    if path is None:
        return None
    from rubriclang.interp.items import read_items
    from rubriclang.interp.trace import ItemsNow

    return ItemsNow(read_items(path, shape), path)


def warn_unverified(warnings) -> None:
    """On stderr, each warning of trace records that could not be checked
    against the items (written before traces carried `item_hash`):
    `ItemsNow.warnings()`, `TraceFile.warnings(items)`."""
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
