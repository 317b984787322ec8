"""Turning command-line paths into source texts, shared by `check` and `fmt`.

A path is a file (checked whatever its name), a folder (every `*.rbg` below
it, sorted, skipping hidden folders and files), or `-` for standard input.
Every problem is a user's mistake, reported together as exit status 2.
"""

from __future__ import annotations

import os
import sys

import click

from rubriclang.errors import LocatedError, decode_utf8
from rubriclang.records import frozen
from rubriclang.safeio import open_regular

STDIN = "-"


class InputError(click.ClickException):
    """Paths that cannot be read as .rbg sources: exit status 2, no traceback."""

    exit_code = 2

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems

    def show(self, file=None) -> None:
        for problem in self.problems:
            click.echo(f"Error: {problem}", err=True)


@frozen
class Source:
    """One input: the path shown in diagnostics, where it came from, its text."""

    path: str
    text: str
    from_stdin: bool = False


def expand(paths: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The files the paths name (in order, without repeats), and the problems."""
    files: list[str] = []
    problems: list[str] = []
    for path in paths:
        if path == STDIN or os.path.isfile(path):
            files.append(path)
        elif os.path.isdir(path):
            found = _rbg_files_below(path)
            if not found:
                problems.append(f"no .rbg files found in `{path}`")
            files.extend(found)
        elif os.path.exists(path):
            problems.append(f"`{path}` is neither a file nor a folder")
        else:
            problems.append(f"`{path}`: no such file or folder")
    return list(dict.fromkeys(files)), problems


def _rbg_files_below(folder: str) -> list[str]:
    found: list[str] = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found.extend(
            os.path.normpath(os.path.join(root, n)) for n in names if n.endswith(".rbg") and not n.startswith(".")
        )
    return sorted(found, key=lambda p: p.split(os.sep))


def read_sources(paths: tuple[str, ...], stdin_filename: str | None) -> list[Source]:
    """Every source the paths name; raises InputError listing every problem."""
    files, problems = expand(paths)
    sources = []
    for path in files:
        try:
            if path == STDIN:
                data = sys.stdin.buffer.read()
                shown = stdin_filename or "<stdin>"
            else:
                with open_regular(path) as fh:
                    data = fh.read()
                shown = path
            sources.append(Source(shown, decode_utf8(data, shown), path == STDIN))
        except OSError as exc:
            problems.append(f"cannot read `{path}`: {exc.strerror or exc}")
        except LocatedError as exc:
            problems.append(f"{exc.where}: {exc.message}")
    if problems:
        raise InputError(problems)
    return sources
