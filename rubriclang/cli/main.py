"""The `rbg` (alias `rubriclang`) entry point: a command group whose
subcommands are imported only when invoked, so `rbg check` never pays for the
imports of `rbg audit` (or any other command), and startup stays fast."""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import sys
from typing import NoReturn

import click

from rubriclang.safetext import guard_standard_streams

# name -> ("module:function", one-line help). Adding a command is adding a line.
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("rubriclang.cli.check:check", "Check .rbg files and report diagnostics."),
    "fmt": ("rubriclang.cli.fmt:fmt", "Rewrite .rbg files in the canonical layout."),
    "init": ("rubriclang.cli.init:init", "Start a project: settings, a rubric, items and an audit suite."),
    "explain": ("rubriclang.cli.explain:explain", "Explain a diagnostic code, with examples."),
    "run": ("rubriclang.cli.run:run", "Judge items with a graph, writing resumable traces."),
    "replay": ("rubriclang.cli.replay:replay", "Recompute decisions from recorded judgments, no calls."),
    "eval": ("rubriclang.cli.evaluate:evaluate", "Compare a graph's decisions with gold labels."),
    "fit": (
        "rubriclang.cli.fit:fit",
        "Fit a graph's numeric parameters on labelled items, reporting a held-out split.",
    ),
    "items": ("rubriclang.cli.items:items", "Convert a public data set into an items file."),
    "cache": ("rubriclang.cli.cache:cache", "Show or clear the cache of LLM calls."),
    "model": ("rubriclang.cli.model:model", "Get or locate the local GGUF model."),
    "lsp": ("rubriclang.cli.lsp:lsp", "Run the language server (stdio)."),
    "diff": ("rubriclang.cli.diff:diff", "Compare two versions of a rubric by meaning, with verdict impact."),
    "agreement": (
        "rubriclang.cli.agreement:agreement",
        "Compare two judges' traces of the same items, criterion by criterion.",
    ),
    "graph": ("rubriclang.cli.graph:graph", "Draw a graph as Mermaid, DOT or SVG."),
    "compile": (
        "rubriclang.cli.compile:compile_command",
        "Compile a prose rubric (TOML spec) into a checked .rbg with a model.",
    ),
    "batch": ("rubriclang.cli.batch:batch", "Export LLM criterion calls as Batch API files, or import their results."),
    "audit": ("rubriclang.cli.audit:audit", "Audit a judge under controlled perturbations."),
    "view": ("rubriclang.cli.view:view", "Look at traces, evaluations, audits and diffs in a local browser viewer."),
}


class LazyGroup(click.Group):
    """A group that imports a subcommand's module only when it is invoked.

    `--help` lists the commands from `COMMANDS` without importing any of them.
    """

    def __init__(self, *args, lazy_commands: dict[str, tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy_commands = lazy_commands

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.lazy_commands:
            return super().get_command(ctx, cmd_name)
        self.invoked = cmd_name
        module_name, func_name = self.lazy_commands[cmd_name][0].split(":")
        command = getattr(importlib.import_module(module_name), func_name)
        if cmd_name not in QUICK_EXIT:
            gc.enable()  # start-up is over (see `main`); a long run needs its cycles collected
        return command

    def invoke(self, ctx: click.Context):
        from rubriclang.cli.errors import disk_errors

        with disk_errors():  # a disk that fills under any command: one clear error, not a traceback
            return super().invoke(ctx)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, self.lazy_commands[name][1]) for name in sorted(self.lazy_commands)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(
    "rbg",
    cls=LazyGroup,
    lazy_commands=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(package_name="rubriclang", message="%(prog)s %(version)s")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """rubriclang: typed rubric graphs (.rbg) for LLM judges."""
    # Whatever a message or listing quotes (item ids, replies, paths), no
    # control character reaches the terminal. Not for the language server:
    # its stdout is a JSON-RPC channel. (`main` guards earlier still, for
    # the errors click reports before this runs, such as an unknown command.)
    if ctx.invoked_subcommand != "lsp":
        guard_standard_streams()


# Commands that only read files and print: when they are done, the process
# exits without tearing the interpreter down (freeing every module and
# object), which is about a third of a cold `rbg check`. What a normal exit
# does that anyone could observe still happens first: `quick_exit`.
QUICK_EXIT = frozenset({"check", "fmt", "explain"})


def main() -> None:
    """Console-script entry point (`rbg`, `rubriclang`)."""
    # Start-up (importing the command) makes tens of thousands of objects that
    # live as long as the process: the cyclic collector's passes over them were
    # a tenth of a cold `rbg check`. It is off until the command is imported,
    # and stays off for the QUICK_EXIT commands, which make next to no cyclic
    # garbage (none for a clean file) and exit without teardown anyway.
    gc.disable()
    if sys.argv[1:2] != ["lsp"] and not _completing():
        guard_standard_streams()
    try:
        cli()
    except SystemExit as exc:
        if getattr(cli, "invoked", None) not in QUICK_EXIT or not isinstance(exc.code, (int, type(None))):
            raise
        quick_exit(exc.code or 0)


def _completing() -> bool:
    """Whether the shell asks for its completion script or for completions
    (`_RBG_COMPLETE=bash_source rbg`, README "Shell completion"): click writes
    them as bytes for the shell to read, not as text for a terminal, and
    they hold command and option names, no data."""
    # click's name for it, from the program's name (`rbg` or `rubriclang`)
    return f"_{os.path.basename(sys.argv[0])}_COMPLETE".replace("-", "_").upper() in os.environ


def quick_exit(status: int) -> NoReturn:
    """Exit with `status` as a normal exit would, minus the teardown: the
    `atexit` work runs and the standard streams are flushed first. A flush
    that fails (a closed pipe) gives status 120, as Python's own exit does."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            status = status or 120
    os._exit(status)
