"""What the commands write besides their results: the summary line of a
resumed output, and the lock on an output with the checks that it
overwrites nothing the command must keep (`command_output`). What a
command spent on models is `cli.estimate`'s."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable

from rubriclang.cli.errors import DataError
from rubriclang.safeio import open_regular


def earlier_text(out: str, counts: dict[str, int]) -> str:
    """The summary line of what a resumed --out already held."""
    return f"  earlier in {out}: ok {counts['ok']}   abstain {counts['abstain']}   error {counts['error']}" + (
        "  (`rbg run --retry-errors` judges them again)" if counts["error"] else ""
    )


def locked_output(out: str, option: str | None = "--out") -> contextlib.ExitStack:
    """The exclusive lock of an output (rubriclang.safeio), to use as a
    context manager; another process holding it, or an output that cannot
    be written, is a DataError (`option`: how the user named it, if they
    can name another)."""
    from rubriclang.safeio import OutputBusy, describe_os_error, output_lock

    stack = contextlib.ExitStack()
    try:
        stack.enter_context(output_lock(out))
    except OutputBusy as exc:
        other = f", or give another {option}" if option else ""
        raise DataError(f"{exc.message}; wait for it to finish{other}") from None
    except OSError as exc:
        raise DataError(f"cannot write `{out}`: {describe_os_error(exc)}") from None
    return stack


# -- where a command writes: one check of what it must not overwrite -------------


def command_output(
    out: str, inputs: Iterable[tuple[str, str | None]], option: str = "--out", *, appends_traces: bool = False
) -> contextlib.ExitStack:
    """The lock of `out` (a file, or a folder: see `locked_output`), once it
    is known that writing it overwrites nothing the command must keep:
    none of its `inputs` ((what, path) pairs: the graph, items, templates,
    the config, tables, traces), whatever the name (a link, a hard link,
    another spelling), and, unless the command `appends_traces`, no trace
    file (judgments already paid for). Every command that writes a file
    the user names takes it. Refusals are DataErrors (exit 2)."""
    check_output(out, inputs, option, appends_traces=appends_traces)
    return locked_output(out, option)


def check_output(
    out: str, inputs: Iterable[tuple[str, str | None]], option: str = "--out", *, appends_traces: bool = False
) -> None:
    """`command_output`'s checks without the lock, for a command that
    refuses a bad output before a long computation (and takes the lock to
    write, when the checks are made again)."""
    not_special(out, option)
    not_an_input(out, inputs, option)
    if not appends_traces:
        not_a_trace(out, option)


def not_special(out: str, option: str) -> None:
    """DataError when `out` is a pipe, a device or a socket: an atomic
    rewrite would replace it (`/dev/null` by a file) rather than write to it."""
    import stat

    from rubriclang.safeio import file_kind

    try:
        mode = os.stat(out).st_mode
    except OSError:
        return  # missing: made by the writer
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise DataError(
            f"{option} `{out}` is {file_kind(mode)}: it must be a regular file\n  hint: give {option} a file path"
        )


def not_an_input(out: str, inputs: Iterable[tuple[str, str | None]], option: str) -> None:
    """DataError when `out` is one of `inputs` (see `command_output`)."""
    if not os.path.exists(out):
        return  # nothing there to lose (a dangling link's target is made)
    for what, path in inputs:
        if not path or path == "-" or not os.path.exists(path):
            continue
        if same_file(out, path):
            alias = "" if os.path.abspath(out) == os.path.abspath(path) else f" (`{path}` under another name)"
            raise DataError(
                f"{option} `{out}` is the {what} this command reads{alias}: writing it would destroy it\n"
                f"  hint: give {option} another path"
            )


def same_file(a: str, b: str) -> bool:
    """Whether paths `a` and `b` name one file (links and hard links too)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def not_a_trace(out: str, option: str) -> None:
    """DataError when `out` is an existing trace file: only `rbg run` and
    `rbg batch import` write traces, and only by appending."""
    from rubriclang.interp.trace import RECORD_START

    try:
        with open_regular(out) as fh:
            head = fh.read(len(RECORD_START))
    except OSError:
        return  # missing, or not a file: the writer says why it cannot write it
    if head == RECORD_START:
        raise DataError(
            f"{option} `{out}` is a trace file (judgments `rbg run` recorded): writing it would destroy them\n"
            f"  hint: give {option} another path"
        )


def graph_inputs(graph, path: str) -> list[tuple[str, str | None]]:
    """What a command reads with the graph at `path` (a checked graph, or
    None for a folder of graphs): the graph, its prompt templates and the
    project config that governs it."""
    from rubriclang.config import find_config

    found: list[tuple[str, str | None]] = [("graph" if graph is not None else "folder of graphs", path)]
    if graph is not None:
        # A template's path is as the graph wrote it: relative to the graph's folder.
        folder = os.path.dirname(path)
        found += [
            ("prompt template", os.path.join(folder, c.prompt.path))
            for c in graph.criteria
            if c.prompt is not None and c.prompt.path is not None
        ]
    found.append(("project config", find_config(path)))
    return found
