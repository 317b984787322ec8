"""`rbg agreement A B`: how far two judges' judgments of the same items
agree, from their traces (docs/evaluation.md, "Two judges on the same items")."""

from __future__ import annotations

import json

import click

from rubriclang.cli.errors import data_error


@click.command()
@click.argument("a", type=click.Path(exists=True, dir_okay=False), metavar="TRACES_A")
@click.argument("b", type=click.Path(exists=True, dir_okay=False), metavar="TRACES_B")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def agreement(a, b, fmt) -> None:
    """Compare two judges' traces of the same items: per criterion both
    judged, the share of equal values (over the value pairs both judged,
    with a 95% Wilson interval by item), and the share of verdicts that
    differ (over the items both decided). For instance a rubric with its
    criteria grouped into one call (`group NAME = [...]`) against the same
    criteria asked one call each: what the saving costs in fidelity. Records
    are paired by item id. No calls. Exit status: 0, 2 bad traces.
    """
    from rubriclang.evaluation.agreement import compare_traces, render_text
    from rubriclang.interp.items import ItemError

    try:
        result = compare_traces(a, b)
    except ItemError as exc:
        raise data_error(exc) from None
    if fmt == "json":
        click.echo(json.dumps(result.to_json(), sort_keys=True, indent=2))
    else:
        click.echo(render_text(result))
