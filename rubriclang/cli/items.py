"""`rbg items convert SRC -o ITEMS`: a data set's records as items (docs/items.md)."""

from __future__ import annotations

import json
import os
import re

import click

from rubriclang.cli.errors import DataError, data_error
from rubriclang.cli.outputs import command_output, graph_inputs


@click.group()
def items() -> None:
    """Items files: convert a public data set into the items format."""


def _fields(ctx, param, values):
    from rubriclang.evaluation.convert import parse_field

    out: dict = {}
    for spec in values:
        try:
            target, source = parse_field(spec)
        except ValueError as exc:
            raise click.BadParameter(str(exc), ctx, param) from None
        if target in out:
            raise click.BadParameter(f"`{target}` is mapped twice", ctx, param)
        out[target] = source
    return out


def _unescape(text: str) -> str:
    """`\\n`, `\\t` and `\\\\` in --sep, which shells do not expand in plain quotes."""
    return re.sub(r"\\([nt\\])", lambda m: {"n": "\n", "t": "\t", "\\": "\\"}[m.group(1)], text)


def _points(ctx, param, value):
    from rubriclang.evaluation.convert import parse_points

    if value is None or "=" not in value:
        return value
    try:
        return parse_points(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


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
        "Fill item field TARGET from SOURCE (a field, a path such as a.b[0].c, or a template '{a} {b.c}'); "
        "repeat. TARGET: id, input, response, reference, rubric, responses.CANDIDATE, annotations.KEY, "
        "recorded.KEY, or a field the rubric declares."
    ),
)
@click.option(
    "--join",
    "joins",
    multiple=True,
    metavar="TARGET=PATH,PATH,...",
    help="Fill TARGET with the texts of several paths joined by --sep, empty ones left out; repeat.",
)
@click.option(
    "--sep",
    default="\\n\\n",
    show_default=True,
    help="The separator of --join (\\n and \\t are a newline and a tab).",
)
@click.option(
    "--conversation",
    "conversations",
    multiple=True,
    metavar="TARGET",
    help="Read TARGET as a chat log (OpenAI messages, or ShareGPT's from/value) and check it as a conversation.",
)
@click.option(
    "--documents",
    "documents",
    multiple=True,
    metavar="TARGET",
    help="Read TARGET as grounding documents: a text is one document, a list of texts one each, objects as they are.",
)
@click.option(
    "--keep-unmapped",
    is_flag=True,
    help="Pass the source fields no --field, --join or --gold reads through into the items, as they are.",
)
@click.option(
    "--ignore",
    multiple=True,
    metavar="PATH",
    help="A source field, or a path inside one, left out on purpose (not counted as unmapped); repeat.",
)
@click.option(
    "--pivot",
    default=None,
    metavar="recorded=FILE|annotations=FILE",
    help="A long-format table (one row per item and key) whose values go into the items' recorded or annotations.",
)
@click.option(
    "--pivot-item", default="item", show_default=True, metavar="PATH", help="The --pivot column of the item id."
)
@click.option("--pivot-key", default="key", show_default=True, metavar="PATH", help="The --pivot column of the key.")
@click.option(
    "--pivot-value",
    default="value",
    show_default=True,
    callback=_points,
    metavar="PATH|POINT=PATH,...",
    help="The --pivot column of the value, or a distribution's columns: 1=answer1_prob,2=answer2_prob,...",
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
def convert(
    src,
    out,
    fmt,
    fields,
    joins,
    sep,
    conversations,
    documents,
    keep_unmapped,
    ignore,
    pivot,
    pivot_item,
    pivot_key,
    pivot_value,
    gold,
    labels,
    combine,
    on_tie,
    graph,
) -> None:
    """Convert SRC (JSON array or object keyed by id, JSON Lines, CSV or TSV)
    into an items file.

    Fields named `id`, `input`, `response`, `reference` or `rubric` in SRC are
    taken as they are unless --field maps them otherwise, and a field named
    `gold` unless --gold names others; records without an id take their key
    in a JSON object keyed by id, else are numbered from 1. Source fields no
    mapping reads are counted in the summary (or kept, --keep-unmapped).
    Nothing is written unless every record converts.
    """
    from rubriclang.evaluation.convert import Converter, Mapping, Pivot, parse_join
    from rubriclang.evaluation.gold import GoldError
    from rubriclang.interp.items import ItemError
    from rubriclang.interp.sources import read_records, source_format

    fields = dict(fields)
    for spec in joins:
        try:
            target, source = parse_join(spec, _unescape(sep))
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--join") from None
        if target in fields:
            raise click.BadParameter(f"`{target}` is mapped twice", param_hint="--join")
        fields[target] = source
    for option, targets in (("--conversation", conversations), ("--documents", documents)):
        for target in targets:
            if target not in fields and target not in ("input", "response"):
                raise click.BadParameter(f"`{target}` is not mapped by --field", param_hint=option)
    spec = _pivot_spec(pivot, pivot_item, pivot_key, pivot_value, src, Pivot)
    g = None
    if graph:
        from rubriclang.cli.loading import load_graph

        g = load_graph(graph)
    _check_declared(fields, g)
    notes = []
    try:
        records = list(read_records(src, source_format(src, fmt)))
        first = records[0][1] if records else {}
        # A source field named `gold` is the gold unless --gold names others.
        mapping = Mapping(
            fields,
            tuple(gold) or (("gold",) if "gold" in first else ()),
            labels,
            combine,
            on_tie,
            conversations=tuple(conversations),
            documents=tuple(documents),
            keep_unmapped=keep_unmapped,
            ignore=tuple(ignore),
        )
        if labels is not None and not mapping.gold:
            raise click.BadParameter("--label maps gold codes: name the gold field with --gold", param_hint="--label")
        converter = Converter(mapping, first)
        rows = list(converter.items(records))
        if spec is not None:
            from rubriclang.evaluation.convert import pivot as pivot_into

            notes.append(pivot_into(spec, read_records(spec.path, source_format(spec.path, None)), rows))
        if g is not None:
            _validate(g, rows, [w for w, _, _ in records])
    except (ItemError, GoldError) as exc:
        raise data_error(exc) from None
    except OSError as exc:
        raise DataError(f"cannot read `{exc.filename or src}`: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise DataError(
            f"`{src}` is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); convert it to "
            "UTF-8 first"
        ) from None
    inputs = [("source file SRC", src), *(graph_inputs(g, graph) if g is not None else ())]
    if spec is not None:
        inputs.append(("--pivot table", spec.path))
    with command_output(out, inputs, "-o"):
        _write(out, rows)
    mode = "pairwise" if mapping.candidates else "pointwise"
    notes += converter.notes()
    click.echo(f"Wrote {out}: {converter.counts.text()} ({mode}).", err=True)
    for note in filter(None, notes):
        click.echo(f"  {note}", err=True)


def _check_declared(fields, graph) -> None:
    """A TARGET that is no built-in item field names a declared field: with
    --graph, one its `item { ... }` declares; without, not a near miss of a
    built-in one (`inptu`), which is far likelier a typo."""
    from rubriclang.evaluation.convert import TEXT_FIELDS
    from rubriclang.nearest import difflib_match

    shape = getattr(graph, "item_shape", None) if graph is not None else None
    builtin = (*TEXT_FIELDS, "responses", "annotations", "recorded")
    for target in fields:
        if "." in target or target in TEXT_FIELDS:
            continue
        if shape is not None:
            if shape.get(target) is None:
                declared = ", ".join(f.name for f in shape.fields) or "none"
                raise click.BadParameter(
                    f"`{target}` is not a field the graph declares (declared: {declared})", param_hint="--field"
                )
        elif graph is not None:
            raise click.BadParameter(
                f"`{target}` is not an item field, and the graph declares no item shape (`item {{ ... }}`)",
                param_hint="--field",
            )
        else:
            near = difflib_match(target, builtin, cutoff=0.8)
            if near:
                raise click.BadParameter(
                    f"`{target}` is not an item field: did you mean `{near[0]}`? (A field a rubric declares under "
                    "this name is accepted with --graph naming that rubric.)",
                    param_hint="--field",
                )


def _pivot_spec(pivot, item, key, value, src, cls):
    """The --pivot table, or None; usage errors for a malformed one."""
    if pivot is None:
        return None
    table, eq, path = pivot.partition("=")
    if not eq or table not in ("recorded", "annotations") or not path:
        raise click.BadParameter(f"`{pivot}` is not recorded=FILE or annotations=FILE", param_hint="--pivot")
    if not os.path.isfile(path):
        raise click.BadParameter(f"`{path}` is not a file", param_hint="--pivot")
    if isinstance(value, tuple):
        return cls(table, path, item, key, points=value)
    return cls(table, path, item, key, value)


def _validate(graph, rows: list[dict], wheres: list[str]) -> None:
    """Every converted item read as `rbg eval` reads it under `graph`; gold
    is rewritten in its canonical form (`"yes"` -> `true`)."""
    from rubriclang.evaluation.gold import item_gold
    from rubriclang.interp.compose import Composer, ModeError
    from rubriclang.interp.items import ItemError, item_from_json

    composer = Composer(graph)
    for row, where in zip(rows, wheres, strict=True):
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
