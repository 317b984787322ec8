"""The project a command runs in (`rubriclang.config`, docs/project.md) and
its defaults for the daily commands: where an output goes when none is
named, the call cache and the concurrency. The command line always wins;
a default taken from the project is said on stderr, with where it came from."""

from __future__ import annotations

import os
import re
import time

import attrs
import click

from rubriclang.cli.errors import DataError
from rubriclang.cli.llmoptions import user_set
from rubriclang.config import ConfigError, ProjectConfig, load_config

# What an output's name keeps of a graph's or suite's name: no separator,
# no character a shell or another system would need quoted.
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
RUN_SUFFIX = ".traces.jsonl"
RUN_META = ".run.json"  # beside a run's traces: the graph and items it judged (`rbg view`'s landing page)


def project_config(start: str) -> ProjectConfig:
    """The project config governing `start` (a file or folder; the current
    folder's when none governs it); a malformed one is a DataError at its line."""
    try:
        return load_config(start)
    except ConfigError as exc:
        raise DataError(f"{exc.where}: {exc.message}" + (f"\n  hint: {exc.hint}" if exc.hint else "")) from None


def shown(path: str) -> str:
    """`path` relative to the current folder when it is below it, else as it is."""
    rel = os.path.relpath(path)
    return path if rel.startswith(os.pardir) else rel


def default_output(config: ProjectConfig, kind: str, stem: str, suffix: str, option: str, command: str) -> str:
    """A new output in the project's `kind` folder (`runs`, `audits`),
    named `<UTC time>-<stem><suffix>` so that names sort by date and never
    resume or overwrite an earlier output; the folder is made if missing.
    Outside a project it is a DataError saying what to give."""
    if config.path is None:
        raise DataError(
            f"{command} needs {option}: no project config (rubriclang.toml, or [tool.rubriclang] in pyproject.toml) "
            "was found upward from the inputs or the current folder to give a default"
            f"\n  hint: give {option}, or start a project here with `rbg init`"
        )
    folder = config.folder(kind)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        from rubriclang.safeio import describe_os_error

        raise DataError(
            f"cannot make the project's {kind} folder `{shown(folder)}` ({config.where('project', kind)}): "
            f"{describe_os_error(exc)}\n  hint: give {option}, or set `{kind}` in [project]"
        ) from None
    base = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + (_UNSAFE.sub("-", stem).strip("-.") or kind)
    n = 1
    while True:
        path = os.path.join(folder, f"{base}{'' if n == 1 else f'-{n}'}{suffix}")
        taken = (path, path + ".lock", path.removesuffix(RUN_SUFFIX) + RUN_META if suffix == RUN_SUFFIX else path)
        if not any(os.path.lexists(p) for p in taken):
            break
        n += 1
    out = shown(path)
    click.echo(
        f"{command}: writing to {out} (the project's {kind} folder, {shown(config.path)}; {option} names another)",
        err=True,
    )
    return out


def concurrency(given: int, config: ProjectConfig) -> int:
    """--concurrency as given, else the project's `concurrency`, else its default."""
    if user_set("concurrency") or "concurrency" not in config.project:
        return given
    return int(config.project["concurrency"])


def cache_options(cache: str | None, no_cache: bool, config: ProjectConfig) -> tuple[str | None, bool]:
    """(--cache, --no-cache) as given, else as the project sets them."""
    if cache is not None or no_cache:
        return cache, no_cache
    project = config.cache()
    return (None, True) if project is False else (project if isinstance(project, str) else None, False)


def with_cache(llm, config: ProjectConfig):
    """The LLM options with the project's call cache, unless --cache or
    --no-cache was given."""
    cache, no_cache = cache_options(llm.cache, llm.no_cache, config)
    return attrs.evolve(llm, cache=cache, no_cache=no_cache)
