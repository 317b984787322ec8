"""`rbg run GRAPH ITEMS --out TRACES`: judge items, append traces, resume."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import sys
import time

import click

from rubriclang.cli.execution import (
    DataError,
    annotations_option,
    concurrency_option,
    data_error,
    interpreter,
    llm_options,
    llm_session,
    load_graph,
    local_backend,
    locked_output,
    mode_option,
    open_llm,
    recorded_option,
    usage_json,
    usage_text,
    validated,
)


@click.command()
@click.argument("graph", type=click.Path(dir_okay=False))
@click.argument("items", type=click.Path(dir_okay=False))
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False), help="Trace file (JSON Lines); an existing one is resumed.")
@mode_option
@concurrency_option
@annotations_option
@recorded_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="Summary format.")
@llm_options
def run(graph, items, out, mode, concurrency, annotations, recorded, fmt, llm) -> None:
    """Judge ITEMS with GRAPH, appending one trace line per item to --out.

    Rerunning with the same --out resumes: finished items are skipped, and
    LLM calls already made are answered from the call cache. Exit status: 0
    every item decided or abstained, 1 some items failed, 2 bad input or an
    unusable LLM server.
    """
    with contextlib.ExitStack() as stack:
        _run(stack, graph, items, out, mode, concurrency, annotations, recorded, fmt, llm)


def _run(stack, graph, items, out, mode, concurrency, annotations, recorded, fmt, llm) -> None:
    from rubriclang.interp.items import ItemError, read_items
    from rubriclang.interp.trace import finished_items

    g = load_graph(graph)
    backend = local_backend(annotations, recorded)
    if not os.path.exists(items):
        raise DataError(f"`{items}`: no such file")
    llm_backend = open_llm(stack, g, llm)
    interp = interpreter(g, [backend, llm_backend], concurrency)
    # Held until the command ends: two runs into one file would write every item twice.
    stack.enter_context(locked_output(out))
    try:
        done = finished_items(out, interp.hash)
    except ItemError as exc:
        raise data_error(exc) from None
    total = _count_lines(items)
    stats = collections.Counter()
    decisions = collections.Counter()
    progress = _Progress(total, len(done), enabled=fmt == "text" and sys.stderr.isatty())
    # Opened once the LLM server has answered, so an unusable server leaves no file behind.
    writer = _LazyWriter(out)
    started = time.perf_counter()
    error: DataError | None = None

    async def go():
        async with llm_session(llm_backend):
            stream = (it for it in validated(read_items(items), backend) if it.id not in done)
            writer.open()
            async for result in interp.run(stream, mode):
                writer.write(result.record)
                d = result.composition.decision
                stats[d.status] += 1
                decisions[_label(d)] += 1
                progress.tick()

    try:
        asyncio.run(go())
    except ItemError as exc:
        error = data_error(exc)
    except KeyboardInterrupt:
        progress.done()
        writer.close()
        click.echo(f"Interrupted: {sum(stats.values())} items written to {out}; run again to resume.", err=True)
        sys.exit(130)
    finally:
        writer.close()
        progress.done()
    elapsed = time.perf_counter() - started
    summary = {
        "graph": g.name,
        "out": out,
        "resumed": len(done),
        "judged": sum(stats.values()),
        "ok": stats["ok"],
        "abstain": stats["abstain"],
        "error": stats["error"],
        "decisions": dict(sorted(decisions.items())),
        "seconds": round(elapsed, 3),
    }
    if llm_backend is not None:
        summary["llm"] = usage_json(llm_backend)
    if fmt == "json":
        click.echo(json.dumps(summary, sort_keys=True, indent=2))
    else:
        click.echo(_table(summary))
    if error is not None:
        raise error
    if stats["error"]:
        sys.exit(1)


def _label(d) -> str:
    from rubriclang.interp.readout import describe

    return describe(d)


def _count_lines(path: str) -> int:
    try:
        with open(path, "rb") as fh:
            return sum(1 for line in fh if line.strip())
    except OSError as exc:
        raise DataError(f"cannot read `{path}`: {exc.strerror}") from None


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
        f"Judged {s['judged']} items with `{s['graph']}` in {s['seconds']:.2f} s ({rate:.0f} items/s)"
        + (f"; {s['resumed']} already in {s['out']}" if s["resumed"] else ""),
        f"  ok {s['ok']}   abstain {s['abstain']}   error {s['error']}",
    ]
    if s["decisions"]:
        lines.append("  decisions: " + _decisions_text(s["decisions"]))
    if s.get("llm"):
        lines.append(usage_text(s["llm"]))
    lines.append(f"  traces: {s['out']}")
    return "\n".join(lines)


class _LazyWriter:
    """A TraceWriter opened on demand; closing an unopened one does nothing."""

    def __init__(self, path: str):
        self.path = path
        self._writer = None

    def open(self) -> None:
        from rubriclang.interp.trace import TraceWriter

        self._writer = TraceWriter(self.path)

    def write(self, record: dict) -> None:
        self._writer.write(record)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


class _Progress:
    """A one-line progress counter on stderr, shown only on a terminal."""

    def __init__(self, total: int, skipped: int, enabled: bool):
        self.total, self.n, self.enabled = total, skipped, enabled
        self.last = 0.0

    def tick(self) -> None:
        self.n += 1
        now = time.monotonic()
        if self.enabled and (now - self.last > 0.1 or self.n == self.total):
            self.last = now
            width = 30
            filled = int(width * self.n / self.total) if self.total else width
            sys.stderr.write(f"\r  [{'#' * filled}{'.' * (width - filled)}] {self.n}/{self.total}")
            sys.stderr.flush()

    def done(self) -> None:
        if self.enabled and self.n:
            sys.stderr.write("\n")
            self.enabled = False
