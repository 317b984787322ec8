"""The criterion backends a command runs a graph with: the local one (value
tables), the LLM one (its server, client and call cache, checked before any
item is judged), and the Interpreter over them."""

from __future__ import annotations

import contextlib
import os

import click

from rubriclang.cli.errors import DataError, data_error
from rubriclang.cli.llmoptions import LLMOptions, sampling_of


def local_backend(annotations: str | None, recorded: str | None):
    """The local backend over the value tables (human annotations, recorded
    judgments); a malformed table is a DataError."""
    from rubriclang.interp.items import ItemError
    from rubriclang.interp.local import LocalBackend
    from rubriclang.interp.tables import ValueTable

    try:
        ann = ValueTable.read(annotations) if annotations else None
        rec = ValueTable.read(recorded) if recorded else None
    except ItemError as exc:
        raise data_error(exc) from None
    return LocalBackend(ann, rec)


def interpreter(graph, backends, concurrency: int):
    """An Interpreter over `backends` (the first that handles a procedure
    runs it); None entries are skipped."""
    from rubriclang.interp.engine import BackendError, Interpreter

    try:
        return Interpreter(graph, [b for b in backends if b is not None], concurrency)
    except BackendError as exc:
        raise DataError(str(exc)) from None


def uses_llm(graph) -> bool:
    """Whether any criterion of the graph is an LLM procedure."""
    from rubriclang.llm.backend import LLMBackend

    return any(LLMBackend.handles(c.procedure) for c in graph.criteria)


def open_llm(stack: contextlib.ExitStack, graph, opts: LLMOptions, estimate=None):
    """The LLM backend for `graph`, or None when it has no LLM criteria. The
    embedded server (no --base-url) and the cache are closed with `stack`;
    the clients, bound to the event loop, are closed by `llm_session`.

    Criteria that name a model profile (`model = "NAME"`) are answered by
    `[models.NAME]` of the project config; the others by the command line's
    server, else the config's `default` profile, else the embedded model
    (`rubriclang.llm.connect`, which `rbg audit` shares). With `estimate`
    (an `llm.estimate.Estimate`) nothing is sent and no cache is used: the
    requests are tallied there."""
    if not uses_llm(graph):
        return None
    from rubriclang.llm.backend import LLMBackend
    from rubriclang.llm.connect import ConnectError, Connections
    from rubriclang.llm.parsing import weighted_points

    server, sampling = opts.server(dry=estimate is not None), sampling_of(opts)
    connections = Connections(estimate)
    stack.callback(connections.stop)
    try:
        client, sampling, profiles = connections.judges(graph, server, sampling)
    except ConnectError as exc:
        if exc.embedded:
            raise DataError(
                "the graph has LLM criteria and no --base-url was given, so they need the embedded model: "
                f"{exc.message}"
            ) from None
        raise DataError(exc.message + (f"\n  hint: {exc.hint}" if exc.hint else "")) from None
    cache = None if opts.no_cache or estimate is not None else open_cache(opts.cache)
    if cache is not None:
        stack.callback(cache.close)
    if opts.logprobs and not any(weighted_points(c) for c in graph.criteria):
        click.echo(
            "note: --logprobs weighs `llm.rate` criteria on `score[lo, hi]` with one-digit bounds; this graph has none",
            err=True,
        )
    return LLMBackend(client, cache, sampling, use_logprobs=opts.logprobs, profiles=profiles)


@contextlib.asynccontextmanager
async def llm_session(backend):
    """Checks, before any item is judged, that the server answers and has
    the model (exit 2 with the reason otherwise); closes the client after."""
    if backend is None:
        yield
        return
    from rubriclang.llm.client import LLMError

    try:
        checked = set()
        for name, profile in backend.profiles.items():
            if id(profile.client) in checked:
                continue
            checked.add(id(profile.client))
            try:
                await profile.client.check_model()
            except LLMError as exc:
                raise DataError((f"model profile `{name}`: " if name else "") + _explain(exc)) from None
        yield
    finally:
        await backend.aclose()


def _explain(exc) -> str:
    hint = {
        "unreachable": "is the server running, and is --base-url right?",
        "timeout": "the server is up but slow: try a larger --timeout (or --deadline)",
        "reply_too_large": "the server answers at length: a larger --max-reply-bytes, or a smaller --max-tokens",
        "auth": "put the key in the environment variable named by --api-key-env",
        "unknown_model": "name a model the server has with --model",
    }.get(exc.kind)
    return exc.message + (f"\n  hint: {hint}" if hint else "")


def open_cache(path: str | None, warn: bool = True):
    """The call cache at `path` (default: the user's); one that cannot be
    opened is a DataError. One that later cannot be written says so once on
    standard error, unless `warn` is False (a command that makes that an
    error of its own, from `write_error`)."""
    import sqlite3

    from rubriclang.llm.cache import CallCache, default_path

    path = path or default_path()
    try:
        return CallCache(path) if warn else CallCache(path, warn=lambda _message: None)
    except (sqlite3.Error, OSError) as exc:
        reason = f"{exc}; its disk is full" if _disk_full(path) else str(exc)
        raise DataError(
            f"cannot open the call cache `{path}`: {reason}\n  hint: give another --cache, or --no-cache"
        ) from None


def _disk_full(path: str) -> bool:
    try:
        return os.statvfs(os.path.dirname(os.path.abspath(path))).f_bavail == 0
    except OSError:
        return False
