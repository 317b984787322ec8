"""`rbg batch export|import`: a graph's LLM calls as OpenAI Batch API files.

    rbg batch export GRAPH ITEMS -o REQUESTS.jsonl --model NAME
    (submit REQUESTS.jsonl: `vllm run-batch -i REQUESTS.jsonl -o RESULTS.jsonl --model NAME`,
     or a hosted batch API)
    rbg batch import GRAPH ITEMS RESULTS.jsonl --out TRACES.jsonl --model NAME --base-url URL

The sampling options must be the ones the calls were exported with (and the
ones a later `rbg run` would use): they are part of every request.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os

import attrs
import click

from rubriclang.cli.backends import interpreter, local_backend, uses_llm
from rubriclang.cli.errors import DataError, data_error
from rubriclang.cli.estimate import echo_estimate, prices_for
from rubriclang.cli.failures import FailureReasons, failures_text
from rubriclang.cli.llmoptions import SAMPLING_OPTIONS, estimate_option, sampling_of
from rubriclang.cli.loading import ValidatedItems, load_graph
from rubriclang.cli.options import JudgingOptions, collect, judging_options
from rubriclang.cli.outputs import command_output, earlier_text, graph_inputs
from rubriclang.items.shape import shape_of

# How many missing calls an error lists before it only counts the rest.
_LIST_AT_MOST = 20


@attrs.frozen
class BatchRequests:
    """What every request of the batch is: its model and `rbg run`'s
    sampling (part of a request's body and of its cache key)."""

    model: str
    temperature: float
    top_p: float | None
    max_tokens: int
    seed: int | None
    logprobs: bool


sampling_options = collect(
    BatchRequests,
    [
        click.option(
            "--model", required=True, metavar="NAME", help="The model the requests name (the batch server's model)."
        ),
        *SAMPLING_OPTIONS,
        click.option("--logprobs", is_flag=True, help="Ask for token logprobs where `rbg run --logprobs` would."),
    ],
    "requests",
)


@attrs.frozen
class ImportOptions:
    """Where `rbg batch import` writes the traces, and the server and cache
    the results are filed under."""

    out: str
    base_urls: tuple[str, ...]
    identity: str | None
    cache: str | None
    api_key_env: str


_IMPORT_OPTIONS = [
    click.option(
        "--out",
        required=True,
        type=click.Path(dir_okay=False),
        help="Trace file (JSON Lines); an existing one is resumed.",
    ),
    click.option(
        "--base-url",
        "base_urls",
        multiple=True,
        metavar="URL",
        help="The server a live run would use: the cache keys calls by it.",
    ),
    click.option(
        "--identity",
        metavar="ID",
        help="The cache identity of the server instead of --base-url (e.g. an embedded model's).",
    ),
    click.option(
        "--cache",
        type=click.Path(dir_okay=False),
        default=None,
        help="The call cache to fill (default: the one `rbg run` uses).",
    ),
    click.option(
        "--api-key-env",
        metavar="NAME",
        default="OPENAI_API_KEY",
        show_default=True,
        help="The environment variable holding the key the batch ran with: results that echo it are stored redacted.",
    ),
]


@click.group()
def batch() -> None:
    """Export a graph's LLM criterion calls as an OpenAI Batch API file, or
    import the batch's results and judge with them, making no calls."""


@batch.command("export")
@click.argument("graph", type=click.Path(dir_okay=False))
@click.argument("items", type=click.Path(dir_okay=False))
@click.option(
    "-o", "--out", required=True, type=click.Path(dir_okay=False), help="The request file to write (JSON Lines)."
)
@sampling_options
@estimate_option("the batch")
def export(graph, items, out, requests: BatchRequests, estimate) -> None:
    """Write one Batch API request per LLM criterion call that `rbg run`
    would make for ITEMS: the same body, byte for byte. Rule, annotation and
    recorded criteria make no call and are not exported."""
    from rubriclang.safeio import describe_os_error, write_atomic

    g = load_graph(graph)
    _batchable(g)
    if estimate:
        return _estimate(_calls(g, _read_items(items, shape_of(g)), requests), requests, prices_for(graph))
    os.makedirs(os.path.dirname(os.path.realpath(out)), exist_ok=True)
    with command_output(out, [*graph_inputs(g, graph), ("items file", items)], "-o"):
        calls = _calls(g, _read_items(items, shape_of(g)), requests)
        lines = "".join(json.dumps(c.line(requests.model), ensure_ascii=False) + "\n" for c in calls)
        try:
            write_atomic(out, lines)
        except OSError as exc:
            raise DataError(f"cannot write `{out}`: {describe_os_error(exc)}") from None
    criteria = len({c.criterion for c in calls})
    click.echo(f"Exported {len(calls)} requests ({criteria} LLM criteria) to {out}")


def _estimate(calls, requests: BatchRequests, prices: dict) -> None:
    """`rbg batch export --estimate`: the batch's requests, each sent once
    (so the calls are exact), their tokens and cost."""
    from rubriclang.llm.estimate import Estimate, Phase, count_tokens

    estimate = Estimate()
    phase = estimate.phases["batch"] = Phase()
    estimate.models["batch"] = {requests.model}
    for c in calls:
        phase.add(1, count_tokens(c.request.messages), c.request.sampling.max_tokens)
    notes = [
        "an answer a live run would ask again is not in the batch: `rbg batch import` counts them, and `rbg run` "
        "with the same cache makes only those calls",
        "the price is the project config's: a hosted batch API may bill less than its live one",
    ]
    echo_estimate(estimate, ["batch"], prices, notes, "text")


def _batchable(g) -> None:
    """DataError unless the graph's LLM calls can go in one batch file."""
    from rubriclang.llm.batch import profiled_criteria

    if not uses_llm(g):
        raise DataError(f"`{g.path}` has no LLM criteria: no call to export or import")
    profiled = profiled_criteria(g)
    if profiled:
        name, profile = profiled[0]
        raise DataError(
            f"criterion `{name}` is judged by model profile `{profile}`: a batch file serves one model, so graphs "
            "with model profiles run live (`rbg run`)"
        )


def _read_items(path: str, shape=None) -> list:
    """Every item of `path`, read once (it may be a pipe: import needs them twice)."""
    from rubriclang.interp.items import ItemError, read_items

    if not os.path.exists(path):
        raise DataError(f"`{path}`: no such file")
    try:
        return list(read_items(path, shape))
    except ItemError as exc:
        raise data_error(exc) from None


def _calls(g, items: list, requests: BatchRequests):
    from rubriclang.llm.batch import llm_calls

    return asyncio.run(llm_calls(g, items, requests.model, sampling_of(requests), requests.logprobs))


@batch.command("import")
@click.argument("graph", type=click.Path(dir_okay=False))
@click.argument("items", type=click.Path(dir_okay=False))
@click.argument("results", type=click.Path(dir_okay=False))
@collect(ImportOptions, _IMPORT_OPTIONS, "opts")
@sampling_options
@judging_options
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="Summary format."
)
def import_(graph, items, results, opts: ImportOptions, requests: BatchRequests, judging: JudgingOptions, fmt) -> None:
    """Put the batch RESULTS into the call cache, under the keys a live run
    looks up, then judge ITEMS with GRAPH from the cache alone.

    Fails before judging, listing their custom_ids, when results are missing
    for some calls. Exit status: 0 every item decided or abstained; 1 some
    items failed (an unreadable answer that a live run would retry counts:
    rerun `rbg run` with the same cache to make only those calls); 2 bad
    input or missing results.
    """
    from rubriclang.cli.backends import open_cache
    from rubriclang.cli.llmoptions import api_key_from_env
    from rubriclang.llm.batch import BatchError, load_into_cache, read_results
    from rubriclang.llm.redact import Redactor

    if bool(opts.base_urls) == bool(opts.identity):
        raise click.UsageError("give the server with --base-url, or its cache identity with --identity (one of them)")
    g = load_graph(graph)
    identity = opts.identity or _identity(opts.base_urls, requests.model)
    try:
        answers = read_results(results, requests.model, Redactor(api_key_from_env(opts.api_key_env)))
    except BatchError as exc:
        raise data_error(exc) from None
    _batchable(g)
    item_list = _read_items(items, shape_of(g))
    calls = _calls(g, item_list, requests)
    cache = open_cache(opts.cache, warn=False)
    try:
        loaded = load_into_cache(calls, answers, cache, identity, requests.model)
        if cache.write_error is not None:  # the judging below reads the results from the cache alone
            raise DataError(
                f"the batch results cannot be stored in the call cache `{cache.path}` ({cache.write_error}); "
                "nothing was judged\n  hint: make room, or give another --cache, and import again"
            )
        if loaded.missing:
            raise DataError(_missing_message(loaded, calls, answers))
        inputs = [
            *graph_inputs(g, graph),
            ("items file", items),
            ("batch results file", results),
            ("--annotations table", judging.annotations),
            ("--recorded table", judging.recorded),
            ("call cache", cache.path),
        ]
        summary = _judge(g, item_list, items, opts.out, inputs, cache, identity, requests, judging, fmt)
    finally:
        cache.close()
    summary.update(stored=loaded.stored, cached_before=loaded.cached_before)
    if fmt == "json":
        click.echo(json.dumps(summary, sort_keys=True, indent=2))
    else:
        click.echo(_text(summary))
    if summary["error"] or summary["earlier"]["error"] or summary["further_calls"]:
        raise SystemExit(1)


def _identity(base_urls, model: str) -> str:
    from rubriclang.cli.llmoptions import checked_url
    from rubriclang.llm.client import OpenAIClient

    async def identity() -> str:
        # The client names the servers as a live run's client would.
        async with OpenAIClient([checked_url(u) for u in base_urls], model) as client:
            return client.identity

    return asyncio.run(identity())


def _missing_message(loaded, calls, answers) -> str:
    wanted = {c.custom_id for c in calls}
    lines = [f"the results answer {len(calls) - len(loaded.missing)} of {len(calls)} calls; missing:"]
    lines += [f"  {call.custom_id}  ({why})" for call, why in loaded.missing[:_LIST_AT_MOST]]
    if len(loaded.missing) > _LIST_AT_MOST:
        lines.append(f"  ... and {len(loaded.missing) - _LIST_AT_MOST} more")
    stale = len(set(answers.completions) - wanted)
    if stale:
        lines.append(
            f"  {stale} results answer no current request: have the graph, the items, --model or the sampling "
            "options changed since the export?"
        )
    lines.append(
        f"  the {loaded.stored} results found are in the cache; submit the missing requests again and import their "
        "results"
    )
    return "\n".join(lines)


def _judge(
    g, item_list, items, out, inputs, cache, identity, requests: BatchRequests, judging: JudgingOptions, fmt
) -> dict:
    """`rbg run`'s loop over `item_list` (read from the path `items`), with a
    backend that answers from the cache only; `out` is none of `inputs`."""
    from rubriclang.interp.items import ItemError
    from rubriclang.interp.trace import usable_out
    from rubriclang.llm.batch import import_backend

    local = local_backend(judging.annotations, judging.recorded)
    backend, client = import_backend(cache, identity, requests.model, sampling_of(requests), requests.logprobs)
    interp = interpreter(g, [local, backend], judging.concurrency)
    try:
        usable_out(out)  # a device, a pipe or a missing folder gets no lock file
    except ItemError as exc:
        raise data_error(exc) from None
    with command_output(out, inputs, appends_traces=True):
        return _judge_into(out, interp, local, item_list, items, judging.mode, client, backend, fmt)


def _judge_into(out, interp, local, item_list, items, mode, client, backend, fmt) -> dict:
    from rubriclang.cli.replay import warn_unverified
    from rubriclang.interp.items import ItemError
    from rubriclang.interp.trace import OutputError, TraceWriter, scan_trace, stale_error

    try:
        state = scan_trace(out, interp.hash)
        # A traced item is skipped only if it is still what its line judged.
        if stale := state.changed(item_list, items):
            raise stale_error(out, stale, f"`{items}`", "import into a new --out, or `rbg run --rejudge-changed` them")
        writer = TraceWriter(out, state)
    except (ItemError, OutputError) as exc:
        raise data_error(exc) from None
    warn_unverified(state.warnings(items))
    done = state.statuses.keys()
    stats: collections.Counter[str] = collections.Counter()
    checked = ValidatedItems(item_list, local)

    from rubriclang.cli.progress import Progress

    failures = FailureReasons()
    resumed = sum(1 for it in item_list if it.id in done)
    progress = Progress("items", len(item_list), done=resumed, lines=fmt == "text")

    async def go():
        stream = (it for it in checked if it.id not in done)
        async for result in interp.run(stream, mode):
            writer.write(result.record)
            d = result.composition.decision
            stats[d.status] += 1
            failures.add(result.record["item"], d)
            progress.tick()

    try:
        asyncio.run(go())
    except (ItemError, OutputError) as exc:
        raise data_error(exc) from None
    finally:
        writer.close()
        progress.done()
    checked.warn_unknown(items)
    return {
        "out": out,
        "resumed": len(done),
        "earlier": state.counts(),
        "judged": sum(stats.values()),
        "ok": stats["ok"],
        "abstain": stats["abstain"],
        "error": stats["error"],
        "failures": failures.to_json(),
        "failures_other": failures.others(),
        "further_calls": len(client.requests),
        "cache_hits": backend.usage.cache_hits,
    }


def _text(s: dict) -> str:
    lines = [
        f"Imported {s['stored']} batch results into the cache ({s['cached_before']} calls were cached already)",
        f"Judged {s['judged']} items from the cache"
        + (f"; {s['resumed']} already in {s['out']}" if s["resumed"] else ""),
        f"  ok {s['ok']}   abstain {s['abstain']}   error {s['error']}",
    ]
    lines.extend(failures_text(s["failures"], s["failures_other"]))
    if s["resumed"]:
        lines.append(earlier_text(s["out"], s["earlier"]))
    if s["further_calls"]:
        lines.append(
            f"  {s['further_calls']} judgments needed a further call (a retry after an unreadable answer) and failed;"
            " `rbg run` with the same cache makes only those calls"
        )
    lines.append(f"  traces: {s['out']}")
    return "\n".join(lines)
