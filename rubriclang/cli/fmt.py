"""`rbg fmt`: rewrite .rbg files in the canonical layout.

A file with syntax errors is refused (its diagnostics are printed, the file is
left alone). Files are written atomically and only when they change. Status
lines go to stderr; diffs and formatted standard input go to stdout.
Exit status: 0 done, 1 a file was refused (or, with `--check` or `--diff`,
would change), 2 unreadable input or an unwritable file.

`--diff` exits 1 when it prints a change, as `ruff format --diff` and
`git diff --exit-code` do (black's `--diff` exits 0 unless `--check` is given
too): a dry run whose output is a change to make is a check, and a CI step or
hook that runs it must fail on that change rather than print it and pass.
"""

from __future__ import annotations

import sys

import click

from rubriclang.cli.inputs import InputError, Source, read_sources
from rubriclang.diagnostics import sorted_diagnostics
from rubriclang.diagnostics.render import render_text
from rubriclang.errors import LocatedError, decode_utf8
from rubriclang.fmt import format_source
from rubriclang.safeio import describe_os_error, open_regular, write_atomic
from rubriclang.safetext import unguarded


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--check", "check_only", is_flag=True, help="Write nothing; exit 1 if any file would change, and list them."
)
@click.option(
    "--diff", is_flag=True, help="Write nothing; print a unified diff of each change; exit 1 if there is one."
)
@click.option("--stdin-filename", metavar="PATH", help="The path to report for `-` (standard input).")
def fmt(paths, check_only, diff, stdin_filename) -> None:
    """Format PATHS (files, folders of *.rbg, or - for stdin to stdout)."""
    dry = check_only or diff
    sources = read_sources(paths, stdin_filename)
    changed: list[str] = []
    unchanged: list[str] = []
    refused: list[str] = []
    for src in sources:
        result = format_source(src.text, src.path)
        if result.output is None:
            refused.append(src.path)
            click.echo(render_text(sorted_diagnostics(result.diagnostics), {src.path: src.text}), err=True, nl=False)
            click.echo(f"Error: cannot format {src.path}: fix the errors above first", err=True)
            continue
        (changed if result.changed else unchanged).append(src.path)
        if diff and result.changed:
            click.echo(unified_diff(src.path, src.text, result.output), nl=False)
        if src.from_stdin and not dry:
            # The user's own file, byte for byte: not through the stream guard.
            click.echo(result.output, nl=False, file=unguarded(sys.stdout))
        elif result.changed and check_only:
            click.echo(f"would reformat {src.path}", err=True)
        elif result.changed and not dry:
            _write(src, result.output)

    if not (len(sources) == 1 and sources[0].from_stdin):
        click.echo(_summary(len(changed), len(unchanged), len(refused), dry), err=True)
    if refused or (dry and changed):
        click.get_current_context().exit(1)


def unified_diff(path: str, before: str, after: str) -> str:
    """A unified diff of one file's formatting, as `--diff` prints it."""
    import difflib  # only for --diff

    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"{path}\t(original)",
        tofile=f"{path}\t(formatted)",
    )
    # A last line without a newline would run into the next file's header.
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def _write(src: Source, text: str) -> None:
    """Replace the file `src` was read from by `text`, under its lock, unless
    another program changed it since it was read: its change would be lost."""
    from rubriclang.cli.outputs import locked_output

    try:
        with locked_output(src.path, None):
            with open_regular(src.path) as fh:
                now = fh.read()
            if decode_utf8(now, src.path) != src.text:
                raise InputError([f"`{src.path}` changed while it was being formatted; it is left as it is now"])
            write_atomic(src.path, text)
    except OSError as exc:
        raise InputError([f"cannot write `{src.path}`: {describe_os_error(exc)}"]) from None
    except LocatedError as exc:  # it is no longer UTF-8: changed too
        raise InputError([f"`{src.path}` changed while it was being formatted ({exc.message})"]) from None


def _summary(n_changed: int, n_unchanged: int, n_refused: int, dry: bool) -> str:
    def files(n: int) -> str:
        return f"{n} file" if n == 1 else f"{n} files"

    parts = []
    if n_changed:
        parts.append(f"{files(n_changed)} {'would be reformatted' if dry else 'reformatted'}")
    if n_unchanged:
        parts.append(f"{files(n_unchanged)} {'would be left' if dry else 'left'} unchanged")
    if n_refused:
        parts.append(f"{files(n_refused)} refused (syntax errors)")
    return ", ".join(parts) + "."
