"""`rbg run GRAPH ITEMS --out TRACES`: judge items, append traces, resume.
In a project (docs/project.md) --out may be left out: a new file in the
project's runs folder."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import stat
import sys
import time
from typing import TYPE_CHECKING

import attrs
import click

from rubriclang.cli.backends import interpreter, llm_session, local_backend, open_llm
from rubriclang.cli.errors import DataError, data_error
from rubriclang.cli.estimate import echo_estimate, prices_for, usage_json, usage_text
from rubriclang.cli.failures import FailureReasons, failures_text
from rubriclang.cli.llmoptions import LLMOptions, llm_options
from rubriclang.cli.loading import ValidatedItems, load_graph, load_graph_set
from rubriclang.cli.options import JudgingOptions, collect, judging_options
from rubriclang.cli.outputs import command_output, earlier_text, graph_inputs
from rubriclang.cli.params import fallback_option
from rubriclang.cli.progress import Progress, rate_text
from rubriclang.cli.project import RUN_META, RUN_SUFFIX, default_output, project_config, with_cache
from rubriclang.cli.project import concurrency as project_concurrency
from rubriclang.cli.replay import warn_unverified
from rubriclang.items.shape import shape_of

if TYPE_CHECKING:  # the CLI imports the engine lazily
    from rubriclang.checker import CheckedGraph
    from rubriclang.config import ProjectConfig
    from rubriclang.interp.graphset import GraphSet
    from rubriclang.interp.trace import TraceWriter


@attrs.frozen
class ResumeOptions:
    """What a run into an --out that has lines already judges again, or accepts."""

    retry_errors: bool
    rejudge_changed: bool
    allow_mixed_judges: bool


_RESUME_OPTIONS = [
    click.option("--retry-errors", is_flag=True, help="Judge again the items whose trace line in --out is an error."),
    click.option(
        "--rejudge-changed",
        is_flag=True,
        help="Judge again the items whose content changed since their line in --out was written (refused by default).",
    ),
    click.option(
        "--allow-mixed-judges",
        is_flag=True,
        help=(
            "Resume an --out whose LLM judgments came from another server, model, profile or sampling (refused by "
            "default)."
        ),
    ),
]


@click.command()
@click.argument("graph", type=click.Path())
@click.argument("items", type=click.Path(dir_okay=False))
@click.option(
    "--out",
    "out",
    type=click.Path(),
    help=("Trace file (JSON Lines); an existing one is resumed. Default, in a project: a new file in its runs folder."),
)
@collect(ResumeOptions, _RESUME_OPTIONS, "resume")
@judging_options
@fallback_option
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="Summary format."
)
@llm_options
def run(graph, items, out, resume: ResumeOptions, judging: JudgingOptions, fallback, fmt, llm: LLMOptions) -> None:
    """Judge ITEMS with GRAPH, appending one trace line per item to --out.

    GRAPH may be a folder of graphs compiled per instance (`rbg compile
    --out-dir`): each item is judged by the graph of its id (or of its
    `graph` field); an item whose graph did not compile is recorded as a
    compile failure, or handled by --fallback.

    Rerunning with the same --out resumes: finished items are skipped, and
    LLM calls already made are answered from the call cache; the summary
    counts them too. --retry-errors judges the failed ones again. An item
    whose content (input, responses, reference...) changed since its line was
    written is refused, naming the line, unless --rejudge-changed judges it
    again. A file whose LLM judgments came from another judge (server, model, profile or
    sampling) is refused unless --allow-mixed-judges is given. Exit
    status: 0 every item in --out decided or abstained, 1 some failed, 2 bad
    input, an --out that cannot be written, or an unusable LLM server.

    In a project (rubriclang.toml, see docs/project.md) --out defaults to a
    new file `RUNS/<UTC time>-<graph>.traces.jsonl`, and --concurrency and
    the call cache to the project's settings.
    """
    config = project_config(graph)
    judging = attrs.evolve(judging, concurrency=project_concurrency(judging.concurrency, config))
    llm = with_cache(llm, config)
    if llm.estimate:
        return _estimate(graph, items, judging, fallback, fmt, llm)
    with contextlib.ExitStack() as stack:
        _run(stack, graph, items, out, resume, judging, fallback, fmt, llm, config)


def _run(
    stack,
    graph,
    items,
    out,
    resume: ResumeOptions,
    judging: JudgingOptions,
    fallback,
    fmt,
    llm: LLMOptions,
    config: ProjectConfig,
) -> None:
    from rubriclang.interp.graphset import union
    from rubriclang.interp.items import ItemError, read_items
    from rubriclang.interp.trace import OutputError, graph_hash, scan_trace, usable_out

    gs, g = _load(graph, fallback)
    backend = local_backend(judging.annotations, judging.recorded)
    if not os.path.exists(items):
        raise DataError(f"`{items}`: no such file")
    out, meta = _output(out, graph, config)
    try:
        usable_out(out)  # a device, a pipe or a missing folder gets no lock file
    except ItemError as exc:
        raise data_error(exc) from None
    # Held until the command ends: two runs into one file would write every item twice.
    inputs = [
        *graph_inputs(g, graph),
        ("items file", items),
        ("--annotations table", judging.annotations),
        ("--recorded table", judging.recorded),
        ("--fallback graph", fallback),
        ("call cache", llm.cache),
    ]
    stack.enter_context(command_output(out, inputs, appends_traces=True))
    try:
        # Before the LLM server starts: an unusable --out fails at once.
        state = scan_trace(out, gs.hashes() if gs is not None else graph_hash(_one(g)))
        retry, changed = _to_judge_again(state, items, resume.retry_errors, resume.rejudge_changed, shape_of(g))
        if not state.statuses:  # a resumed run's items were all just read, for its shape too
            _fit_shape(items, shape_of(g))
    except ItemError as exc:
        raise data_error(exc) from None
    warn_unverified(state.warnings(items))
    judge = union(gs) if gs is not None else g
    llm_backend = open_llm(stack, judge, llm)
    judge_items = _judging(gs, g, [backend, llm_backend], judging)
    retry |= changed
    done = state.statuses.keys() - retry
    stats: collections.Counter[str] = collections.Counter()
    routes: collections.Counter[str] = collections.Counter()
    decisions: collections.Counter[str] = collections.Counter()
    failures = FailureReasons()
    # On stderr; with `--format json`, only a terminal gets it (and only then are the items counted).
    shown = fmt == "text" or sys.stderr.isatty()
    progress = Progress("items", _count_items(items) if shown else None, done=len(done), lines=fmt == "text")
    # Opened once the LLM server has answered, so an unusable server leaves the file as it was.
    writer = _LazyWriter(state, retry)
    checked = ValidatedItems(read_items(items, shape_of(g)), backend)
    started = time.perf_counter()
    error: DataError | None = None

    async def go():
        async with llm_session(llm_backend):
            if llm_backend is not None and not resume.allow_mixed_judges:
                # Once the servers have answered: the model they serve is part of the judge.
                _same_judges(state, judge, llm_backend, retry)
            stream = (it for it in checked if not _traced(it, done, state, items))
            writer.open()
            _write_meta(meta, graph, items, config.root)
            async for result in judge_items(stream):
                writer.write(result.record)
                if gs is not None:
                    routes[result.route] += 1
                d = result.composition.decision
                stats[d.status] += 1
                decisions[_label(d)] += 1
                failures.add(result.record["item"], d)
                progress.tick()

    try:
        asyncio.run(go())
    except (ItemError, OutputError) as exc:
        error = data_error(exc)
    except KeyboardInterrupt:
        progress.done()
        writer.close()
        again = f"run again with --out {out}" if meta is not None else "run again"
        click.echo(f"Interrupted: {sum(stats.values())} items written to {out}; {again} to resume.", err=True)
        sys.exit(130)
    finally:
        writer.close()
        progress.done()
    if error is None:
        checked.warn_unknown(items)
        try:
            checked.check_not_empty(items)
        except DataError as exc:
            error = exc
    elapsed = time.perf_counter() - started
    earlier = state.counts(skip=retry)
    summary = {
        "graph": g.name if g is not None else graph,
        "out": out,
        "resumed": len(done),
        "earlier": earlier,
        "retried": len(retry - changed),
        "rejudged": len(changed),
        "judged": sum(stats.values()),
        "ok": stats["ok"],
        "abstain": stats["abstain"],
        "error": stats["error"],
        "decisions": dict(sorted(decisions.items())),
        "failures": failures.to_json(),
        "failures_other": failures.others(),
        "seconds": round(elapsed, 3),
    }
    if gs is not None:
        # How each item judged now was routed: its compiled graph, the
        # fallback graph, an abstention, or a compile failure.
        summary["routes"] = {k: routes[k] for k in ("compiled", "fallback", "abstain", "failed")}
        summary["compile_failures"] = routes["fallback"] + routes["abstain"] + routes["failed"]
    if llm_backend is not None:
        summary["llm"] = usage_json(llm_backend, prices_for(graph))
    _report(summary, fmt, error)
    if stats["error"] or earlier["error"]:
        sys.exit(1)


def _load(graph: str, fallback: str | None) -> tuple[GraphSet | None, CheckedGraph | None]:
    """(the folder of compiled graphs, None) or (None, the graph) that GRAPH is."""
    if os.path.isdir(graph):
        return load_graph_set(graph, fallback), None
    if fallback is not None:
        raise click.UsageError("--fallback is for a folder of compiled graphs: GRAPH is one graph file")
    return None, load_graph(graph)


def _judging(gs, g, backends: list, judging: JudgingOptions):
    """stream -> the results of judging its items: each by its own graph of
    the folder `gs`, or all by the graph `g`."""
    from rubriclang.interp.graphset import interpreters, run_set

    if gs is not None:
        interps = interpreters(gs, lambda one: interpreter(one, backends, judging.concurrency))
        return lambda stream: run_set(gs, interps, stream, judging.concurrency, judging.mode)
    interp = interpreter(g, backends, judging.concurrency)
    return lambda stream: interp.run(stream, judging.mode)


def _estimate(graph: str, items: str, judging: JudgingOptions, fallback, fmt: str, llm: LLMOptions) -> None:
    """`rbg run --estimate`: every item through the judge (for a folder of
    compiled graphs, its own graph) with requests tallied, not sent."""
    from rubriclang.interp.graphset import union
    from rubriclang.interp.items import ItemError, read_items
    from rubriclang.llm.estimate import Estimate

    gs, g = _load(graph, fallback)
    backend = local_backend(judging.annotations, judging.recorded)
    estimate = Estimate()
    with contextlib.ExitStack() as stack:
        llm_backend = open_llm(stack, union(gs) if gs is not None else g, llm, estimate=estimate)
        judge_items = _judging(gs, g, [backend, llm_backend], judging)
        checked = ValidatedItems(read_items(items, shape_of(g)), backend)

        async def go():
            async for _ in judge_items(iter(checked)):
                pass

        try:
            asyncio.run(go())
        except ItemError as exc:
            raise data_error(exc) from None
    echo_estimate(estimate, ["judge"], prices_for(graph), [], fmt, llm.max_retries)


def _report(summary: dict, fmt: str, error: DataError | None) -> None:
    """Print the summary, then raise the run's data error, if any; a
    malformed or empty items file, where nothing was judged, gets its error
    alone, not a summary of nothing."""
    if error is not None and not summary["judged"]:
        raise error
    click.echo(json.dumps(summary, sort_keys=True, indent=2) if fmt == "json" else _table(summary))
    if error is not None:
        raise error


def _same_judges(state, graph, backend, retry: set[str]) -> None:
    """Refuse to append judgments of another judge (server, model, profile
    or sampling) to a trace: its figures would mix two judges unseen."""
    expected = {c.name: backend.fingerprint(c) for c in graph.criteria if backend.handles(c.procedure)}
    skip = {state.lines[i] for i in retry}
    others = state.other_judges({k: v for k, v in expected.items() if v is not None}, skip)
    if others:
        crit, line, profile, model = others[0]
        who = f"model `{model}`" + (f" (profile `{profile}`)" if profile else "")
        raise DataError(
            f"{state.path}:{line}: criterion `{crit}` was judged there by {who} with other server, model or sampling "
            "settings than this run's"
            "\n  hint: write to a new --out file to judge with these settings, or pass --allow-mixed-judges to append "
            "to this one anyway"
        )


def _output(out: str | None, graph: str, config: ProjectConfig) -> tuple[str, str | None]:
    """(--out, None) when given; else a new trace file in the project's runs
    folder and the path of its `.run.json` (`_write_meta`)."""
    if out is not None:
        return out, None
    stem = os.path.basename(os.path.normpath(graph)).removesuffix(".rbg")
    out = default_output(config, "runs", stem, RUN_SUFFIX, "--out", "rbg run")
    return out, out.removesuffix(RUN_SUFFIX) + RUN_META


def _write_meta(path: str | None, graph: str, items: str, root: str | None) -> None:
    """Beside a run in the project's runs folder (`path`, None for an --out
    given): the graph and items it judges (relative to the project's root)
    and when it started, which its trace records do not say (`rbg view`'s
    landing page shows them)."""
    if path is None:
        return
    from datetime import UTC, datetime

    from rubriclang.canonical import canonical_json
    from rubriclang.safeio import write_atomic

    def rel(p: str) -> str:
        inside = os.path.relpath(os.path.abspath(p), root)
        return os.path.abspath(p) if inside.startswith(os.pardir) else inside

    started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    doc = {"schema": "rubriclang.run/1", "graph": rel(graph), "items": rel(items), "started": started}
    write_atomic(path, canonical_json(doc) + "\n")


def _fit_shape(items: str, shape) -> None:
    """Every item of a rubric that declares its item's shape fits it, before
    any call (ItemError otherwise); a pipe's items, which can be read once,
    are checked as they come."""
    from rubriclang.interp.items import read_items

    if shape is not None and stat.S_ISREG(os.stat(items).st_mode):
        collections.deque(read_items(items, shape), maxlen=0)


def _to_judge_again(
    state, items: str, retry_errors: bool, rejudge_changed: bool, shape=None
) -> tuple[set[str], set[str]]:
    """(the failed items of `state` to retry, with --retry-errors; the items
    whose content changed since they were traced, with --rejudge-changed),
    both among the items ITEMS still has: only their lines are dropped to be
    judged again (a line for an item no longer in ITEMS would be lost).
    Without --rejudge-changed a changed item is refused here, before a byte
    of the file changes. ITEMS is read here and again when judging, so
    these need a file; a pipe's changed items are refused as they come
    (`_traced`)."""
    from rubriclang.interp.items import read_items
    from rubriclang.interp.trace import stale_error

    failed = state.errored() if retry_errors else set()
    if not state.statuses:
        return set(), set()
    if not stat.S_ISREG(os.stat(items).st_mode):
        for flag, wanted in (("--retry-errors", failed), ("--rejudge-changed", rejudge_changed)):
            if wanted:
                raise DataError(f"`{items}`: {flag} reads the items twice, so they must be a file, not a pipe")
        return set(), set()
    retry, stale = set(), []
    for it in read_items(items, shape):
        if it.id in failed:
            retry.add(it.id)
        elif (s := state.stale(it, items)) is not None:
            stale.append(s)
    if stale and not rejudge_changed:
        raise stale_error(state.path, sorted(stale), f"`{items}`", _CHANGED_HINT)
    return retry, {s.item for s in stale}


_CHANGED_HINT = "pass --rejudge-changed to judge them again (their lines are replaced), or give a new --out"


def _traced(item, done, state, items: str) -> bool:
    """Whether `item` is already traced in --out, as it is now: an ItemError
    when its line judged other content (for items read from a pipe, which
    `_to_judge_again` could not read ahead)."""
    if item.id not in done:
        return False
    from rubriclang.interp.trace import stale_error

    stale = state.stale(item, items)
    if stale is not None:
        raise stale_error(
            state.path,
            [stale],
            f"`{items}`",
            "give ITEMS as a file (not a pipe) with --rejudge-changed to judge it again, or give a new --out",
        )
    return True


def _label(d) -> str:
    from rubriclang.interp.readout import describe

    return describe(d)


def _count_items(path: str) -> int | None:
    """The number of items, for the progress bar: None (unknown) for a pipe,
    which can be read only once."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as fh:
            return sum(1 for line in fh if line.strip())
    except OSError:
        return None  # reading the items reports it


def _decisions_text(decisions: dict[str, int]) -> str:
    """A histogram of the decisions, or for many real values, their range and mean."""
    numbers = {}
    for label, n in decisions.items():
        try:
            numbers[float(label)] = n
        except ValueError:
            break
    else:
        if len(numbers) > 10:
            total = sum(numbers.values())
            mean = sum(x * n for x, n in numbers.items()) / total
            return f"{len(numbers)} distinct values from {min(numbers):g} to {max(numbers):g}, mean {mean:.3g}"
    return ", ".join(f"{k}: {v}" for k, v in decisions.items())


def _table(s: dict) -> str:
    rate = s["judged"] / s["seconds"] if s["seconds"] > 0 else 0.0
    lines = [
        f"Judged {s['judged']} item{'' if s['judged'] == 1 else 's'} with `{s['graph']}` in {s['seconds']:.2f} s"
        f" ({rate_text(rate)} items/s)" + (f"; {s['resumed']} already in {s['out']}" if s["resumed"] else ""),
        f"  ok {s['ok']}   abstain {s['abstain']}   error {s['error']}",
    ]
    if "routes" in s:
        r = s["routes"]
        lines.append(
            f"  graphs: compiled {r['compiled']}   did not compile {s['compile_failures']}"
            f" (fallback graph {r['fallback']}, abstained {r['abstain']}, recorded as compile failures {r['failed']})"
        )
    if s["resumed"]:
        lines.append(earlier_text(s["out"], s["earlier"]))
    if s["retried"]:
        lines.append(f"  retried {s['retried']} items whose earlier judgment was an error")
    if s["rejudged"]:
        lines.append(f"  judged again {s['rejudged']} items whose content changed since their earlier judgment")
    if s["decisions"]:
        lines.append("  decisions: " + _decisions_text(s["decisions"]))
    lines.extend(failures_text(s.get("failures", []), s.get("failures_other", 0)))
    if s.get("llm"):
        lines.append(usage_text(s["llm"]))
    lines.append(f"  traces: {s['out']}")
    return "\n".join(lines)


def _one(g: CheckedGraph | None) -> CheckedGraph:
    """The graph of a run on one graph file (not a folder)."""
    assert g is not None
    return g


class _LazyWriter:
    """A TraceWriter opened on demand, continuing the scanned file (first
    dropping the lines of the items to retry); closing an unopened one does
    nothing."""

    def __init__(self, state, retry: set[str]):
        self.state, self.retry = state, retry
        self._writer: TraceWriter | None = None

    def open(self) -> None:
        from rubriclang.interp.trace import TraceWriter, without_items

        state = without_items(self.state, self.retry) if self.retry else self.state
        self._writer = TraceWriter(state.path, state)

    def write(self, record: dict) -> None:
        assert self._writer is not None  # opened before the first record
        self._writer.write(record)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
