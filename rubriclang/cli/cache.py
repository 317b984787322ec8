"""`rbg cache stats|clear`: look at or empty the LLM call cache."""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

import click

from rubriclang.cli.errors import DataError

cache_path_option = click.option(
    "--cache",
    "path",
    type=click.Path(dir_okay=False),
    default=None,
    help="The call cache (default: the one `rbg run` uses).",
)


@click.group()
def cache() -> None:
    """The cache of LLM calls that `rbg run` and `rbg eval` share."""


@cache.command()
@cache_path_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def stats(path, fmt) -> None:
    """How many calls are cached, their tokens, per model, and the file's size."""
    found = _existing(path)
    if found is None:
        s: dict[str, Any] = {
            "path": _path(path),
            "entries": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "bytes": 0,
            "models": {},
        }
    else:
        with found as c, _usable(c.path, "read"):
            s = c.stats()
    if fmt == "json":
        click.echo(json.dumps(s, sort_keys=True, indent=2))
        return
    click.echo(f"{s['path']}: {s['entries']} cached calls, {s['bytes'] / 1e6:.1f} MB")
    click.echo(f"  tokens: {s['prompt_tokens']} prompt, {s['completion_tokens']} completion")
    for model, n in s["models"].items():
        click.echo(f"  {model}: {n}")


@cache.command()
@cache_path_option
def clear(path) -> None:
    """Remove every cached call (and what was learned about servers)."""
    found = _existing(path)
    n = 0
    if found is not None:
        with found as c, _usable(c.path, "emptied"):
            n = c.clear()
    click.echo(f"Removed {n} cached calls from {_path(path)}")


def _path(path: str | None) -> str:
    from rubriclang.llm.cache import default_path

    return path or default_path()


@contextlib.contextmanager
def _usable(path: str, what: str):
    """A cache that fails while being read or emptied (a full or read-only
    disk, a damaged file) is a DataError."""
    import sqlite3

    try:
        yield
    except (sqlite3.Error, OSError) as exc:
        raise DataError(f"the call cache `{path}` cannot be {what}: {exc}") from None


def _existing(path: str | None):
    """The cache at `path`, or None when there is none (never creates one)."""
    import sqlite3

    from rubriclang.llm.cache import CallCache

    path = _path(path)
    if not os.path.exists(path):
        return None
    try:
        # A cache it cannot write is an error of its own here (`_usable`), not a warning.
        return contextlib.closing(CallCache(path, warn=lambda _message: None))
    except (sqlite3.Error, OSError) as exc:
        raise DataError(f"`{path}` is not a usable call cache: {exc}") from None
