"""`rbg graph FILE`: a picture of a graph in Mermaid, DOT or SVG."""

from __future__ import annotations

import click

from rubriclang.cli.errors import DataError


@click.command()
@click.argument("path", metavar="FILE")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["mermaid", "dot", "svg"]),
    default="mermaid",
    show_default=True,
    help="Picture format (svg needs Graphviz's `dot`).",
)
def graph(path, fmt) -> None:
    """Draw FILE (or `REV:PATH` at a git revision): its nodes by kind, with
    their inferred types and the sink marked, and edges labelled by the port
    slot they feed. The output is deterministic.
    """
    from rubriclang.cli.diff import load_sides
    from rubriclang.review import dot, mermaid
    from rubriclang.review.view import view

    ((_, _, g),) = load_sides((path,))
    v = view(g)
    if fmt == "mermaid":
        click.echo(mermaid.render(v), nl=False)
        return
    text = dot.render(v)
    if fmt == "svg":
        try:
            text = dot.to_svg(text)
        except dot.GraphvizMissing as exc:
            raise DataError(f"{exc}; install Graphviz, or use `--format dot` and render it elsewhere") from None
        except RuntimeError as exc:
            raise DataError(f"Graphviz failed: {exc}") from None
    click.echo(text, nl=False)
