"""`rbg explain`: what a diagnostic code means, with a wrong and a right example."""

from __future__ import annotations

import textwrap

import click

from rubriclang.diagnostics.codes import registry
from rubriclang.nearest import difflib_match


@click.command()
@click.argument("code", required=False)
@click.option("--list", "list_all", is_flag=True, help="List every code.")
def explain(code: str | None, list_all: bool) -> None:
    """Explain CODE (e.g. RB203, or its name, e.g. parameter-value)."""
    codes = registry()
    if list_all:
        click.echo(code_list(codes), nl=False)
        return
    if not code:
        raise click.UsageError("give a code, e.g. `rbg explain RB203`, or `--list` for all of them")
    info = _lookup(codes, code.strip())
    if info is None:
        raise click.UsageError(_unknown(codes, code.strip()))
    click.echo(explanation(info), nl=False)


def _lookup(codes, key: str):
    by_name = {info.name: info for info in codes.values()}
    return codes.get(key.upper()) or by_name.get(key.lower())


def _unknown(codes, key: str) -> str:
    candidates = [*codes, *(info.name for info in codes.values())]
    close = difflib_match(key.upper(), codes, n=3)
    close += difflib_match(key.lower(), candidates, n=3)
    hint = f" Did you mean {', '.join(dict.fromkeys(close))}?" if close else ""
    return f"unknown diagnostic code `{key}`.{hint} Known codes: {', '.join(codes)}."


def explanation(info) -> str:
    """The full text `rbg explain CODE` prints."""
    return "\n".join(
        [
            f"{info.code} {info.name} ({info.severity})",
            "",
            info.summary,
            "",
            info.explanation,
            "",
            "Wrong:",
            "",
            textwrap.indent(info.wrong, "    "),
            "",
            "Right:",
            "",
            textwrap.indent(info.right, "    "),
            "",
        ]
    )


def code_list(codes) -> str:
    """One line per code: code, severity, name, summary; grouped as in the docs."""
    width = max(len(info.name) for info in codes.values())
    lines: list[str] = []
    group = None
    for info in codes.values():
        if info.group != group:
            group = info.group
            lines.append(("\n" if lines else "") + f"{group}:")
        lines.append(f"  {info.code}  {info.severity!s:<7}  {info.name:<{width}}  {info.summary}")
    return "\n".join(lines) + "\n"
