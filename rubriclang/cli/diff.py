"""`rbg diff OLD NEW`: what changed between two versions of a rubric, by meaning.

Exit status, like diff(1): 0 no semantic change, 1 changes, 2 an error (a
side that cannot be read or does not check, bad traces). As git's external
diff driver (`--git-driver`) it always exits 0, since git stops at the first
driver that does not.
"""

from __future__ import annotations

import difflib
import os
import sys

import click

from rubriclang.cli.errors import DataError, data_error
from rubriclang.review.render import FORMATS
from rubriclang.safetext import unguarded

NULL = "/dev/null"  # what git passes for the missing side of an added or deleted file


def checked(label: str, text: str):
    """(graph, errors): the checked graph of `text`, or None and its errors."""
    from rubriclang.checker import check_source

    result = check_source(text, label)
    return result.graph, [d for d in result.diagnostics if d.is_error]


def load_sides(args: tuple[str, ...]):
    """[(label, text, graph)] for each argument (a file or `REV:PATH`); when
    any side cannot be read or has errors, prints every problem and exits 2."""
    from rubriclang.diagnostics.render import render
    from rubriclang.review.gitrev import SideError, read_side

    sides, problems = [], []
    for arg in args:
        try:
            side = read_side(arg)
        except SideError as exc:
            problems.append(str(exc))
            continue
        graph, errors = checked(side.label, side.text)
        if errors:
            click.echo(render("text", errors, sources={side.label: side.text}), err=True, nl=False)
            problems.append(f"`{side.label}` has {len(errors)} error(s); fix them first (see `rbg check`)")
        sides.append((side.label, side.text, graph))
    if problems:
        raise DataError("\n".join(problems))
    return sides


@click.command()
@click.argument("args", nargs=-1, metavar="OLD NEW")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True, help="Output format.")
@click.option(
    "--color/--no-color",
    default=None,
    help="Colour text output (default: when stdout is a terminal and NO_COLOR is unset).",
)
@click.option(
    "--traces",
    type=click.Path(exists=True, dir_okay=False),
    help=(
        "Replay these traces under both versions: which decisions change. OLD and NEW may then be folders of "
        "compiled graphs (`rbg compile --out-dir`)."
    ),
)
@click.option(
    "--items",
    "items_path",
    type=click.Path(exists=True, dir_okay=False),
    help="With --traces: check that every record judged the item of its id as this items file holds it now.",
)
@click.option(
    "--limit", type=click.IntRange(0), default=50, show_default=True, help="Changed items listed (text and markdown)."
)
@click.option(
    "--git-driver",
    is_flag=True,
    help="Run as git's external diff driver: git passes PATH OLD-FILE OLD-HEX OLD-MODE NEW-FILE NEW-HEX NEW-MODE.",
)
def diff(args, fmt, color, traces, items_path, limit, git_driver) -> None:
    """Compare OLD and NEW (files, or `REV:PATH` at a git revision) by meaning:
    nodes added, removed and changed, rewired ports, the sink, the contract,
    the readouts. Reformatting and comments are no change. With --traces,
    OLD or NEW may be a folder of graphs compiled per instance: the graph
    ids added, removed and changed, and each traced item replayed under its
    own graph (a missing one is a compile failure, or the folder's fallback);
    --items refuses the records whose item has changed since it was judged.
    Exit status: 0 no semantic change, 1 changes, 2 an error. See
    docs/review.md.
    """
    if color is None:
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    if git_driver:
        _git_driver(args, fmt, color, limit)
        return
    if len(args) != 2:
        raise click.UsageError(f"expected OLD and NEW, got {len(args)} argument(s)")
    if items_path and not traces:
        raise click.UsageError("--items checks the records of --traces: give --traces too")
    if any(os.path.isdir(a) for a in args):
        click.get_current_context().exit(_show_sets(args, fmt, limit, traces, items_path))
    (old_label, _, old), (new_label, _, new) = load_sides(args)
    code = _show(old_label, new_label, old, new, fmt, color, limit, traces, items_path)
    click.get_current_context().exit(code)


def _show(old_label, new_label, old, new, fmt, color, limit, traces=None, items_path=None) -> int:
    """Print the diff; the exit status it calls for (0 same, 1 changed)."""
    from rubriclang.review.diff import diff_graphs
    from rubriclang.review.render import Report, render

    impact = None
    if traces:
        impact = _impact(old, new, traces, items_path)
    d = diff_graphs(old, new)
    report = Report(old_label, new_label, old, new, d, impact)
    # Coloured text carries its own escape codes, past the stream guard
    # (the renderer has made the data in it printable).
    out = unguarded(sys.stdout) if color and fmt == "text" else None
    click.echo(render(fmt, report, color=color, limit=limit), nl=False, color=color, file=out)
    return 1 if d.changed else 0


def _show_sets(args, fmt, limit, traces, items_path=None) -> int:
    """The diff where OLD or NEW is a folder of compiled graphs."""
    from rubriclang.cli.loading import load_graph, load_graph_set
    from rubriclang.review.setdiff import graphs_of, render, set_diff

    if not traces:
        raise click.UsageError(
            "a folder of compiled graphs is compared through its traces: give --traces TRACES (from `rbg run FOLDER "
            "ITEMS`)"
        )
    old, new = (load_graph_set(a, None) if os.path.isdir(a) else load_graph(a) for a in args)
    impact = _impact(old, new, traces, items_path)
    d = set_diff(graphs_of(old, args[0]), graphs_of(new, args[1]))
    click.echo(render(fmt, args[0], args[1], d, impact, limit), nl=False)
    return 1 if d.any else 0


def _impact(old, new, traces, items_path):
    """The verdict impact of `traces`, their records checked against
    `items_path` when given; a bad trace or a changed item exits 2."""
    from rubriclang.cli.replay import items_now, warn_unverified
    from rubriclang.interp.items import ItemError
    from rubriclang.items.shape import shape_of
    from rubriclang.review.impact import verdict_impact

    try:
        now = items_now(items_path, shape_of(_writer(old, new, traces))) if items_path else None
        impact = verdict_impact(old, new, traces, now)
    except ItemError as exc:
        raise data_error(exc) from None
    warn_unverified(now.warnings() if now is not None else ())
    return impact


def _writer(old, new, traces: str):
    """The side whose graph wrote the traces (by the first record's graph
    hash), else OLD, the usual writer, when it is a graph: items are read
    under the shape they were judged with, so that a version declaring
    another shape does not make every record look changed."""
    from rubriclang.checker.graph import CheckedGraph
    from rubriclang.interp.trace import graph_hash, read_traces

    first = next(read_traces(traces), None)
    written = first[1].get("graph", {}).get("hash") if first else None
    for side in (old, new):
        if isinstance(side, CheckedGraph) and written == graph_hash(side):
            return side
    return old if isinstance(old, CheckedGraph) else new


def _git_driver(args, fmt, color, limit) -> None:
    if len(args) == 1:  # git's call for an unmerged path
        click.echo(f"* Unmerged path {args[0]}")
        return
    if len(args) not in (7, 9):
        raise click.UsageError(f"git passes 7 (or 9, for a rename) arguments to a diff driver, got {len(args)}")
    path, old_file, new_file = args[0], args[1], args[4]
    new_path = args[7] if len(args) == 9 else path
    old_label, new_label = (
        NULL if f == NULL else f"{ab}/{p}" for f, ab, p in ((old_file, "a", path), (new_file, "b", new_path))
    )
    labels = (old_label, new_label)
    texts = [None if f == NULL else _read(f) for f in (old_file, new_file)]
    graphs = []
    for label, text in zip(labels, texts, strict=True):
        graph, errors = checked(label, text) if text is not None else (None, [])
        if errors:
            # A broken version is still a version: show its lines rather than nothing.
            click.echo(f"rbg diff: `{label}` does not check ({len(errors)} error(s)); showing a line diff")
            old_text, new_text = (t or "" for t in texts)
            lines = difflib.unified_diff(old_text.splitlines(True), new_text.splitlines(True), old_label, new_label)
            click.echo("".join(lines), nl=False)
            return
        graphs.append(graph)
    _show(old_label, new_label, graphs[0], graphs[1], fmt, color, limit)


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read `{path}`: {exc}") from None
