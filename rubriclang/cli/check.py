"""`rbg check`: report every diagnostic in .rbg files.

Exit status: 0 clean, 1 errors found (or warnings with `--strict`), 2 the
command could not do its job (bad usage, unreadable input, broken catalog).
"""

from __future__ import annotations

import os
import sys

import click

from rubriclang.catalog import CatalogError
from rubriclang.checker import check_source
from rubriclang.cli.inputs import InputError, read_sources
from rubriclang.diagnostics import FORMATS, sorted_diagnostics
from rubriclang.diagnostics.codes import registry
from rubriclang.safetext import unguarded


def _codes(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    """`--select`/`--ignore`: comma-separated codes or prefixes, each known."""
    out = []
    for value in values:
        for code in (c.strip().upper() for c in value.split(",")):
            if not code:
                continue
            if not _known(code):
                raise click.BadParameter(
                    f"`{code}` is not a diagnostic code or prefix of one (see `rbg explain --list`)"
                )
            out.append(code)
    return tuple(out)


def _known(code: str) -> bool:
    # The registry is read only when a code is given: a plain check needs none.
    return any(k.startswith(code) for k in registry())


class _ProjectCodes:
    """Each file's `select` and `ignore`: the command line's, else those of
    the `[check]` table of the project that governs the file (read once per
    config file; a code it does not know is an error at its line)."""

    def __init__(self, select: tuple[str, ...], ignore: tuple[str, ...]):
        self.given = {"select": select, "ignore": ignore}
        self._by_config: dict[str | None, dict[str, tuple[str, ...]]] = {}

    def __call__(self, path: str) -> dict[str, tuple[str, ...]]:
        from rubriclang.config import ConfigError, find_config, load_config

        found = find_config(path)
        if found not in self._by_config:
            project: dict = {}
            if found is not None:
                try:
                    config = load_config(path)
                except ConfigError as exc:
                    raise InputError(
                        [f"{exc.where}: {exc.message}" + (f"\n  hint: {exc.hint}" if exc.hint else "")]
                    ) from None
                project = {key: self._checked(config, key) for key in self.given if key in config.check}
            self._by_config[found] = {key: codes or tuple(project.get(key, ())) for key, codes in self.given.items()}
        return self._by_config[found]

    @staticmethod
    def _checked(config, key: str) -> tuple[str, ...]:
        codes = tuple(c.strip().upper() for c in config.check[key])
        for code in codes:
            if not code or not _known(code):
                raise InputError(
                    [
                        f"{config.where('check', key)}: `{code}` in [check] `{key}` is not a diagnostic code or prefix "
                        "of one\n  hint: see `rbg explain --list`"
                    ]
                )
        return codes


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="text",
    show_default=True,
    help="Output format.",
)
@click.option(
    "--select",
    multiple=True,
    callback=_codes,
    metavar="CODES",
    help="Only these warnings (codes or prefixes, comma-separated).",
)
@click.option(
    "--ignore",
    multiple=True,
    callback=_codes,
    metavar="CODES",
    help="Not these warnings (codes or prefixes, comma-separated).",
)
@click.option("--strict", is_flag=True, help="Warnings also make the exit status 1.")
@click.option(
    "--color/--no-color",
    default=None,
    help="Colour text output (default: when stdout is a terminal and NO_COLOR is unset).",
)
@click.option("--stdin-filename", metavar="PATH", help="The path to report for `-` (standard input).")
def check(paths, fmt, select, ignore, strict, color, stdin_filename) -> None:
    """Check PATHS (files, folders of *.rbg, or - for stdin) for errors and warnings.

    Without --select or --ignore, each file's are those of the `[check]`
    table of its project's rubriclang.toml (docs/project.md), if any.
    """
    sources = read_sources(paths, stdin_filename)
    diagnostics = []
    texts = {s.path: s.text for s in sources}
    codes = _ProjectCodes(select, ignore)
    try:
        for src in sources:
            result = check_source(src.text, src.path, **codes(src.path))
            diagnostics.extend(sorted_diagnostics(result.diagnostics))
            texts.update(result.sources)
    except CatalogError as exc:
        raise InputError([f"the operator catalog could not be loaded: {exc}"]) from None

    if color is None:
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    out = ""
    if diagnostics or fmt != "text":  # clean files in text are the summary alone: no renderer to import
        from rubriclang.diagnostics.render import render

        out = render(fmt, diagnostics, sources=texts, color=color)
    if fmt == "text":
        out += summary(diagnostics, len(sources)) + "\n"
    # Coloured text carries its own escape codes, past the stream guard
    # (the renderer has made the data in it printable).
    click.echo(out, nl=False, color=color, file=unguarded(sys.stdout) if color else None)

    errors = any(d.is_error for d in diagnostics)
    if errors or (strict and diagnostics):
        click.get_current_context().exit(1)


def summary(diagnostics, n_files: int) -> str:
    """`Found 2 errors and 1 warning in 1 of 3 files.` or `All checks passed (3 files).`"""
    if not diagnostics:
        return f"All checks passed ({_count(n_files, 'file')})."
    n_errors = sum(d.is_error for d in diagnostics)
    n_warnings = len(diagnostics) - n_errors
    found = " and ".join(_count(n, word) for n, word in ((n_errors, "error"), (n_warnings, "warning")) if n)
    n_with = len({d.span.file for d in diagnostics})
    return f"Found {found} in {n_with} of {_count(n_files, 'file')}."


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
