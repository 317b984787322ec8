"""What `run`, `replay` and `eval` share: loading a graph (its diagnostics
shown, exit 2 when it has errors), value tables, backends (the LLM backend
with its server, client and call cache), and turning data errors into clear
messages."""

from __future__ import annotations

import contextlib
import functools
import os
import re

import attrs
import click

from rubriclang.cli.params import FiniteFloat


class DataError(click.ClickException):
    """Unusable input (a graph with errors, malformed items): exit status 2."""

    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"Error: {self.message}", err=True)


def load_graph(path: str):
    """The checked graph of `path`; on errors prints them and exits 2."""
    from rubriclang.checker import check_source
    from rubriclang.diagnostics.render import render
    from rubriclang.errors import LocatedError, decode_utf8

    try:
        with open(path, "rb") as fh:
            text = decode_utf8(fh.read(), path)
    except OSError as exc:
        raise DataError(f"cannot read `{path}`: {exc.strerror or exc}") from None
    except LocatedError as exc:
        raise data_error(exc) from None
    result = check_source(text, path)
    if result.graph is None:
        errors = [d for d in result.diagnostics if d.is_error]
        click.echo(render("text", errors, sources={**result.sources, path: text}), err=True, nl=False)
        raise DataError(f"`{path}` has {len(errors)} error(s); fix them first (see `rbg check {path}`)")
    return result.graph


def load_graph_set(path: str, fallback: str | None):
    """The compiled graphs of the folder `path` (rubriclang.interp.graphset),
    with the fallback (a .rbg path or `abstain`); bad input exits 2."""
    from rubriclang.interp.graphset import ABSTAIN, GraphSetError
    from rubriclang.interp.graphset import load_graph_set as load

    if fallback not in (None, ABSTAIN) and not os.path.isfile(fallback):
        raise DataError(f"--fallback `{fallback}`: no such graph file (give a .rbg file, or `abstain`)")
    try:
        return load(path, fallback, load_graph)
    except GraphSetError as exc:
        raise data_error(exc) from None
    except OSError as exc:
        raise DataError(f"cannot read `{path}`: {exc.strerror or exc}") from None


fallback_option = click.option(
    "--fallback",
    metavar="GRAPH.rbg|abstain",
    default=None,
    help="With a folder of compiled graphs: judge the items whose graph did not compile with this graph (e.g. a direct judge), or abstain on them. Default: record them as compile failures.",
)


def data_error(exc) -> DataError:
    """An ItemError (file:line, message, hint) as a DataError."""
    hint = f"\n  hint: {exc.hint}" if getattr(exc, "hint", "") else ""
    return DataError(f"{exc.where}: {exc.message}{hint}")


def local_backend(annotations: str | None, recorded: str | None):
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


class ValidatedItems:
    """Items, each checked against the value tables as it passes (a table
    naming a candidate the item lacks is an error at the table's line).
    Remembers the ids it saw, so that, once every item has passed, table
    rows for items the file does not have are reported (`warn_unknown`)."""

    def __init__(self, items, backend):
        self.items, self.backend = items, backend
        self.seen: set[str] = set()
        self.count = 0

    def __iter__(self):
        tables = (self.backend.annotations, self.backend.recorded)
        track = any(t.lines for t in tables)  # without table rows, no id need be kept
        for item in self.items:
            for table in tables:
                table.validate(item.id, item.candidate_ids)
            if track:
                self.seen.add(item.id)
            self.count += 1
            yield item

    def check_not_empty(self, items_path: str) -> None:
        """DataError when no item passed: an empty file, or a pipe whose
        writer failed, must not look like a finished run."""
        if not self.count:
            raise DataError(f"`{items_path}` holds no items (is it empty, or did the command feeding it fail?)")

    def warn_unknown(self, items_path: str) -> None:
        """A warning on stderr, with counts, for each table with rows naming
        items that are not in `items_path`."""
        for table, option in ((self.backend.annotations, "--annotations"), (self.backend.recorded, "--recorded")):
            rows, items, first = table.unknown(self.seen)
            if rows:
                click.echo(
                    f"warning: {rows} row(s) of `{table.path}` ({option}) name {items} item(s) that `{items_path}`"
                    f" does not have, first at {first}; they were not used (are the item ids right?)",
                    err=True,
                )


def earlier_text(out: str, counts: dict[str, int]) -> str:
    """The summary line of what a resumed --out already held."""
    return f"  earlier in {out}: ok {counts['ok']}   abstain {counts['abstain']}   error {counts['error']}" + (
        "  (`rbg run --retry-errors` judges them again)" if counts["error"] else ""
    )


mode_option = click.option(
    "--mode",
    type=click.Choice(["pointwise", "pairwise"]),
    default=None,
    help="Which readout to use (default: from each item's shape).",
)
annotations_option = click.option(
    "--annotations", type=click.Path(dir_okay=False), help="JSON Lines of human annotations (item, candidate, key, value)."
)
recorded_option = click.option(
    "--recorded", type=click.Path(dir_okay=False), help="JSON Lines of recorded judgments (item, candidate, key, value)."
)
concurrency_option = click.option(
    "--concurrency", type=click.IntRange(1, 4096), default=8, show_default=True, help="Criterion calls in flight at once."
)


# --- LLM criteria -----------------------------------------------------------

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@attrs.frozen
class LLMOptions:
    """The command-line settings of the LLM backend."""

    base_urls: tuple[str, ...]
    model: str | None
    api_key_env: str
    temperature: float
    top_p: float | None
    max_tokens: int
    seed: int | None
    logprobs: bool
    timeout: float
    deadline: float | None
    max_reply_bytes: int | None
    max_retries: int
    per_endpoint: int
    cache: str | None
    no_cache: bool
    model_file: str | None


# Also `rbg compile`'s: every command that asks a server bounds a request's
# time in all and its answer's size.
deadline_option = click.option("--deadline", type=FiniteFloat(min=0, min_open=True), default=None, metavar="SECONDS", help="The longest one request may take in all, however slowly the server sends its answer; past it the request is retried like a timeout (default: 4 x --timeout).")
max_reply_option = click.option("--max-reply-bytes", type=click.IntRange(min=1), default=None, metavar="BYTES", help="The largest answer read; a larger one fails its call, and is stored nowhere (default: 8388608, 8 MiB).")

_LLM_OPTIONS = [
    click.option("--base-url", "base_urls", multiple=True, metavar="URL", help="An OpenAI-compatible server for the LLM criteria; repeat to spread the load. Default: the embedded local model."),
    click.option("--model", metavar="NAME", help="The model to ask (default: the server's only model)."),
    click.option("--api-key-env", metavar="NAME", default="OPENAI_API_KEY", show_default=True, help="The environment variable holding the API key (the key itself is never a flag)."),
    click.option("--temperature", type=FiniteFloat(min=0), default=0.0, show_default=True, help="Sampling temperature."),
    click.option("--top-p", type=FiniteFloat(0, 1, min_open=True), default=None, help="Nucleus sampling (default: not sent)."),
    click.option("--max-tokens", type=click.IntRange(min=1), default=512, show_default=True, help="The longest reply, in tokens."),
    click.option("--seed", type=int, default=0, show_default=True, help="The sampling seed sent to the server."),
    click.option("--logprobs", is_flag=True, help="Read `score[lo, hi]` ratings as probability-weighted means of the scale's tokens (G-Eval)."),
    click.option("--timeout", type=FiniteFloat(min=0, min_open=True), default=120.0, show_default=True, help="Seconds to wait for one answer."),
    deadline_option,
    max_reply_option,
    click.option("--max-retries", type=click.IntRange(0, 100), default=5, show_default=True, help="Retries of a call after 429, 5xx, timeouts and dropped connections."),
    click.option("--per-endpoint", type=click.IntRange(1, 4096), default=16, show_default=True, help="Requests in flight per server."),
    click.option("--cache", "cache", type=click.Path(dir_okay=False), default=None, help="The call cache (default: $XDG_CACHE_HOME/rubriclang/calls.sqlite, else ~/.cache/...)."),
    click.option("--no-cache", is_flag=True, help="Neither read nor write the call cache."),
    click.option("--model-file", type=click.Path(dir_okay=False), default=None, metavar="GGUF", help="The embedded model's GGUF file (used when no --base-url is given)."),
]
_LLM_FIELDS = [a.name for a in attrs.fields(LLMOptions)]


def llm_options(f):
    """Adds the LLM backend's options to a command; they reach it as one
    `llm: LLMOptions` argument."""

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        opts = LLMOptions(**{name: kwargs.pop(name) for name in _LLM_FIELDS})
        return f(*args, llm=opts, **kwargs)

    for option in reversed(_LLM_OPTIONS):
        wrapper = option(wrapper)
    return wrapper


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
    from rubriclang.llm.client import Sampling
    from rubriclang.llm.connect import ConnectError, Connections, Server
    from rubriclang.llm.parsing import weighted_points

    if opts.base_urls and opts.model_file:
        raise click.UsageError("--model-file runs the embedded model, which --base-url replaces: give one of them")
    urls = tuple(checked_url(u) for u in opts.base_urls)
    key = api_key_from_env(opts.api_key_env) if urls and estimate is None else None
    server = Server(urls, opts.model, key, opts.model_file, opts.timeout, opts.max_retries, opts.per_endpoint, deadline=opts.deadline, max_reply_bytes=opts.max_reply_bytes)
    sampling = Sampling(temperature=opts.temperature, top_p=opts.top_p, max_tokens=opts.max_tokens, seed=opts.seed)
    connections = Connections(estimate)
    stack.callback(connections.stop)
    try:
        client, sampling, profiles = connections.judges(graph, server, sampling)
    except ConnectError as exc:
        if exc.embedded:
            raise DataError(f"the graph has LLM criteria and no --base-url was given, so they need the embedded model: {exc.message}") from None
        raise DataError(exc.message + (f"\n  hint: {exc.hint}" if exc.hint else "")) from None
    cache = None if opts.no_cache or estimate is not None else open_cache(opts.cache)
    if cache is not None:
        stack.callback(cache.close)
    if opts.logprobs and not any(weighted_points(c) for c in graph.criteria):
        click.echo("note: --logprobs weighs `llm.rate` criteria on `score[lo, hi]` with one-digit bounds; this graph has none", err=True)
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


def usage_json(backend) -> dict | None:
    """What the LLM backend spent, for a run's summary: in all, and per
    model profile when the graph names profiles."""
    if backend is None:
        return None
    out = {"model": backend.client.model, **backend.usage.to_json()}
    if len(backend.profiles) > 1:
        out["profiles"] = {
            name or "default": {"model": model, **usage.to_json()}
            for name, (model, usage) in backend.usage_by_profile().items()
            if name is not None or usage.calls or usage.cache_hits
        }
    return out


def usage_text(usage: dict) -> str:
    lines = []
    for name, u in (usage.get("profiles") or {"": usage}).items():
        label = f"LLM `{u['model']}`" + (f" (profile `{name}`)" if name else "")
        lines.append(
            f"  {label}: {u['calls']} calls, {u['cache_hits']} cache hits"
            + (f", {u['shared']} shared with a call in flight" if u.get("shared") else "")
            + ";"
            f" tokens {u['prompt_tokens']} prompt, {u['completion_tokens']} completion"
        )
    return "\n".join(lines)


def _explain(exc) -> str:
    hint = {
        "unreachable": "is the server running, and is --base-url right?",
        "timeout": "the server is up but slow: try a larger --timeout (or --deadline)",
        "reply_too_large": "the server answers at length: a larger --max-reply-bytes, or a smaller --max-tokens",
        "auth": "put the key in the environment variable named by --api-key-env",
        "unknown_model": "name a model the server has with --model",
    }.get(exc.kind)
    return exc.message + (f"\n  hint: {hint}" if hint else "")


def checked_url(url: str) -> str:
    import httpx

    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        parsed = None
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host:
        raise click.BadParameter(f"`{url}` is not an http(s) URL (e.g. http://localhost:8000/v1)", param_hint="--base-url")
    return url


def api_key_from_env(name: str) -> str | None:
    # The key is read from the environment, never taken as a flag, and never
    # echoed: a value that is not a variable name may be the key itself.
    if not _ENV_NAME.fullmatch(name):
        raise click.BadParameter("expects the NAME of an environment variable that holds the key, not the key", param_hint="--api-key-env")
    key = os.environ.get(name)
    if _given("api_key_env") and not key:
        raise DataError(f"the environment variable `{name}` (--api-key-env) is not set")
    return key or None


def _given(param: str) -> bool:
    """Whether the user set the option, rather than leaving its default."""
    ctx = click.get_current_context(silent=True)
    source = ctx.get_parameter_source(param) if ctx is not None else None
    return source not in (None, click.core.ParameterSource.DEFAULT)


def open_cache(path: str | None):
    import sqlite3

    from rubriclang.llm.cache import CallCache, default_path

    path = path or default_path()
    try:
        return CallCache(path)
    except (sqlite3.Error, OSError) as exc:
        raise DataError(f"cannot open the call cache `{path}`: {exc} (give another --cache, or --no-cache)") from None


def locked_output(out: str) -> contextlib.ExitStack:
    """The exclusive lock of an output (rubriclang.safeio), to use as a
    context manager; another process holding it, or an output that cannot
    be written, is a DataError."""
    from rubriclang.safeio import OutputBusy, describe_os_error, output_lock

    stack = contextlib.ExitStack()
    try:
        stack.enter_context(output_lock(out))
    except OutputBusy as exc:
        raise DataError(f"{exc.message}; wait for it to finish, or give another --out") from None
    except OSError as exc:
        raise DataError(f"cannot write `{out}`: {describe_os_error(exc)}") from None
    return stack
