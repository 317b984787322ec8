"""`rbg items convert SRC -o ITEMS`: a data set's records as items (docs/items.md)."""

from __future__ import annotations

import json

import click

from rubriclang.cli.errors import DataError, data_error
from rubriclang.cli.outputs import command_output, graph_inputs


@click.group()
def items() -> None:
    """Items files: convert a public data set into the items format."""


def _fields(ctx, param, values):
    from rubriclang.evaluation.convert import parse_field

    out: dict[str, str] = {}
    for spec in values:
        try:
            target, source = parse_field(spec)
        except ValueError as exc:
            raise click.BadParameter(str(exc), ctx, param) from None
        if target in out:
            raise click.BadParameter(f"`{target}` is mapped twice", ctx, param)
        out[target] = source
    return out


def _labels(ctx, param, values):
    from rubriclang.evaluation.gold import GoldValueError, parse_label_map

    if not values:
        return None
    try:
        return parse_label_map(values)
    except GoldValueError as exc:
        raise click.BadParameter(exc.message, ctx, param) from None


@items.command()
@click.argument("src", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "-o", "--out", "out", type=click.Path(dir_okay=False), required=True, help="The items file to write (JSON Lines)."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "jsonl", "csv", "tsv"]),
    default=None,
    help="SRC's format (default: from its extension).",
)
@click.option(
    "--field",
    "fields",
    multiple=True,
    callback=_fields,
    metavar="TARGET=SOURCE",
    help=(
        "Fill item field TARGET from SOURCE (a field or dotted path); repeat. TARGET: id, input, response, "
        "reference, rubric, responses.CANDIDATE, annotations.KEY, recorded.KEY."
    ),
)
@click.option(
    "--gold",
    "gold",
    multiple=True,
    metavar="SOURCE",
    help="The field holding the gold label; repeat for several annotators (combined by --combine).",
)
@click.option(
    "--label",
    "labels",
    multiple=True,
    callback=_labels,
    metavar="CODE=VALUE,...",
    help="Map the data set's label codes onto gold values (e.g. 1=a,2=b,0=tie); every code met must be mapped.",
)
@click.option(
    "--combine",
    type=click.Choice(["majority", "mean"]),
    default="majority",
    show_default=True,
    help="How several --gold labels become one: the most common label, or the mean of numbers.",
)
@click.option(
    "--on-tie",
    type=click.Choice(["error", "drop", "tie"]),
    default="error",
    show_default=True,
    help=(
        "With --combine majority, when annotators are split evenly: stop, write no gold, or write the pairwise gold "
        "`tie`."
    ),
)
@click.option(
    "--graph",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Check the result against this graph: a readout for the items' mode, and every gold value of its output type.",
)
def convert(src, out, fmt, fields, gold, labels, combine, on_tie, graph) -> None:
    """Convert SRC (JSON array, JSON Lines, CSV or TSV) into an items file.

    Fields named `id`, `input`, `response`, `reference` or `rubric` in SRC are
    taken as they are unless --field maps them otherwise, and a field named
    `gold` unless --gold names others; records without an id are numbered
    from 1. Nothing is written unless every record converts.
    """
    from rubriclang.evaluation.convert import Converter, Mapping
    from rubriclang.evaluation.gold import GoldError
    from rubriclang.interp.items import ItemError
    from rubriclang.interp.sources import read_records, source_format

    g = None
    if graph:
        from rubriclang.cli.loading import load_graph

        g = load_graph(graph)
    try:
        records = list(read_records(src, source_format(src, fmt)))
        first = records[0][1] if records else {}
        # A source field named `gold` is the gold unless --gold names others.
        mapping = Mapping(fields, tuple(gold) or (("gold",) if "gold" in first else ()), labels, combine, on_tie)
        if labels is not None and not mapping.gold:
            raise click.BadParameter("--label maps gold codes: name the gold field with --gold", param_hint="--label")
        converter = Converter(mapping, first)
        rows = list(converter.items(records))
        if g is not None:
            _validate(g, rows, [w for w, _ in records])
    except (ItemError, GoldError) as exc:
        raise data_error(exc) from None
    except OSError as exc:
        raise DataError(f"cannot read `{src}`: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise DataError(
            f"`{src}` is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); convert it to "
            "UTF-8 first"
        ) from None
    inputs = [("source file SRC", src), *(graph_inputs(g, graph) if g is not None else ())]
    with command_output(out, inputs, "-o"):
        _write(out, rows)
    mode = "pairwise" if mapping.candidates else "pointwise"
    click.echo(f"Wrote {out}: {converter.counts.text()} ({mode}).", err=True)


def _validate(graph, rows: list[dict], wheres: list[str]) -> None:
    """Every converted item read as `rbg eval` reads it under `graph`; gold
    is rewritten in its canonical form (`"yes"` -> `true`)."""
    from rubriclang.evaluation.gold import item_gold
    from rubriclang.interp.compose import Composer, ModeError
    from rubriclang.interp.items import ItemError, item_from_json

    composer = Composer(graph)
    for row, where in zip(rows, wheres):
        item = item_from_json(row, where, shape=graph.item_shape)
        try:
            composer.check_mode(item.mode)
        except ModeError as exc:
            raise ItemError(where, str(exc)) from None
        if item.gold is not None:
            row["gold"] = item_gold(item, graph, where)


def _write(path: str, rows: list[dict]) -> None:
    """Written whole or not at all: a failed conversion leaves no half file."""
    from rubriclang.safeio import atomic_file, describe_os_error

    try:
        with atomic_file(path) as fh:
            for row in rows:
                fh.write((json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))
    except OSError as exc:
        raise DataError(f"cannot write `{path}`: {describe_os_error(exc)}") from None
