"""Speed of the LLM judgment path, against a loopback server of fixed latency.

The server (this script with `--serve`, in its own process so that its CPU
time is not the client's) answers every chat completion after exactly
`--delay` seconds (50 ms), on `asyncio.start_server`, with keep-alive
connections and no limit on the requests in flight. Figures, each beside a
reference measured in the same run:

1. Throughput of real judgments at 64 calls in flight: an `llm.*` graph (two
   LLM criteria, a rule, a cap and a veto) run by the `Interpreter` with
   `LLMBackend` (prompt rendering, the HTTP client, answer parsing,
   composition, trace records written to a file as `rbg run` writes them), no
   call cache; what `rbg run --concurrency 64 --per-endpoint 64` does.
   Target: at least 90% of the bound 64 / delay = 1280 calls/s. References,
   layer by layer: `OpenAIClient.chat` alone (httpx's client over the lean
   `PoolTransport`, nothing else), `PoolTransport` alone (the connection
   layer: its own HTTP/1.1 on asyncio, keep-alive pools), and a bare
   client, h11 (the HTTP/1.1 parser) on asyncio streams, at 64 and at 128
   in flight; the latter shows the server is not what limits.
2. Client CPU time per call: the process's CPU time over the run above
   divided by its calls, beside the same for each reference; target: at
   most 1.5x the bare h11 client's (issue 13). The rbg path and the h11
   client run `--repeat` times, taking turns, and the least CPU per call of
   each counts (as the fastest pass does in `bench_execution.py`): another
   process's burst inflates a run's CPU time, never shrinks it. At 64 in flight
   throughput falls quickly as CPU per call grows: answers come back in
   bursts, and a burst's processing delays every next request in it.
3. A rerun from the call cache: the same items again, every call a cache
   hit, against the first run, which filled the cache (both at 64 in
   flight; the rerun's figures are those of the `--repeat` reruns' least
   CPU time).
   Target: at least 50x faster. Since the ratio depends on how fast
   the first run was, it is also shown against a first run at the bound,
   with the time per judgment a rerun would need to be 50x faster than that.
   The rerun's CPU time per judgment (rendering, key, cache read, parsing,
   composition and the trace written: all of `rbg run` but start-up; CPU
   time, as the rerun never waits, and other processes inflate wall time)
   has a target of its own, at most 50 us, beside the floor of any cache hit
   measured in CPU time on the same cache file: a SQLite point read by key
   plus the JSON decode of the stored completion.

The embedded model's speed (judgments per minute on this machine) is
`benchmarks/bench_embedded.py`; this script needs no model.

Run (about 15 seconds on 2 cores; figures depend on load, so use a quiet
machine: other processes' bursts cost the rbg path most, as its CPU per call
is highest; `nice -n -15` as root helps on a shared one). Where the machine
has two CPUs or more, the clients run on one and the server on another
(`--no-pin` lets the system place them): every client, reference or not,
then meets the same conditions, and CPU times vary less from run to run.

    .venv/bin/python benchmarks/bench_llm.py
    .venv/bin/python benchmarks/bench_llm.py --items 2000 --concurrency 64 --delay 0.05
    .venv/bin/python benchmarks/bench_llm.py --json      # the figures as JSON

Exit status 0 when every target is met, 1 otherwise. The client-CPU and
cache-hit targets of issue 13 (1.5x the h11 client, 50 us a hit) are retired
as goals (issue 27): their figures are printed for diagnosis only; what
decides whether the home-made HTTP stack stays is `bench_stacks.py`
(benchmarks/README.md, "Home-made parts and what they earn").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time

import h11
import httpx

from rubriclang.checker import check_source
from rubriclang.interp.engine import Interpreter
from rubriclang.interp.items import Item
from rubriclang.interp.local import LocalBackend
from rubriclang.interp.trace import TraceWriter
from rubriclang.llm.backend import LLMBackend
from rubriclang.llm.cache import CallCache
from rubriclang.llm.client import ChatRequest, OpenAIClient, Sampling
from rubriclang.llm.transport import PoolTransport

GRAPH = """rubric bench_llm { version = 1 }
contract { scale = score[1, 5] }
criterion helpful: ordinal[1, 5] = llm.rate {
  question = "How helpful is the response to the user?"
  anchors = { 1: "Useless.", 3: "Adequate.", 5: "Excellent." }
}
criterion harmful: bool = llm.check { question = "Could the response cause serious harm?" }
criterion rambling: bool = rule.length { over = 400 }
node concise = gate.cap(value: helpful, when: rambling) { max = 4 }
node safe = gate.veto(value: concise, when: harmful) { to = 1 }
sink safe
readout pointwise { output = ordinal[1, 5] }
"""
MODEL = "bench-judge"
LIFETIME = 600.0  # the server exits by itself after this long, whatever happens


# --- the loopback server (its own process) ------------------------------------


def _reply(body: bytes, n: int) -> bytes:
    """A chat completion for `body`: a yes/no answer when the request's
    response format is `llm_check`, else a score; deterministic."""
    if b'"llm_check"' in body:
        content = json.dumps({"reason": "No harm in it.", "answer": n % 7 == 0})
    else:
        content = json.dumps({"reason": "Adequate.", "score": len(body) % 5 + 1})
    return json.dumps(
        {
            "id": f"c{n}",
            "object": "chat.completion",
            "model": MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": len(body) // 4, "completion_tokens": 12, "total_tokens": len(body) // 4 + 12},
        }
    ).encode()


def _response(payload: bytes) -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(payload)
    return head + payload


async def _serve(delay: float) -> None:
    served = connections = 0
    models = _response(json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]}).encode())

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal served, connections
        connections += 1
        try:
            while True:  # keep-alive: one request after another on this connection
                head = await reader.readuntil(b"\r\n\r\n")
                request_line, _, headers = head.partition(b"\r\n")
                length = 0
                for line in headers.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = await reader.readexactly(length) if length else b""
                if request_line.startswith(b"POST") and b"/chat/completions" in request_line:
                    await asyncio.sleep(delay)
                    served += 1
                    writer.write(_response(_reply(body, served)))
                else:
                    writer.write(models)
                await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, asyncio.CancelledError):
            pass  # the client hung up, or the server is stopping
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    loop = asyncio.get_running_loop()
    stdin_closed = loop.run_in_executor(None, sys.stdin.read)  # the parent hangs up (or dies): stop
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(stdin_closed, LIFETIME)
    server.close()
    print(json.dumps({"served": served, "connections": connections, "cpu_s": time.process_time()}), flush=True)
    os._exit(0)  # without waiting for the thread still blocked on stdin after a timeout


class LoopbackServer:
    """The server process; `url` is its base URL. Stopping it returns its
    own CPU time and the number of completions it served."""

    def __init__(self, delay: float, cpu: int | None = None):
        pin = [] if cpu is None else ["--cpu", str(cpu)]
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--serve", "--delay", str(delay), *pin],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline())}/v1"

    def stop(self) -> dict:
        out, _ = self.proc.communicate(input="", timeout=30)
        return json.loads(out.strip().splitlines()[-1])


# --- references -----------------------------------------------------------------


class _H11Connection:
    """One keep-alive HTTP/1.1 connection driven by h11 (the parser under
    httpx) on asyncio streams: the leanest Python client worth comparing."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str):
        self.reader, self.writer, self.host = reader, writer, host
        self.h11 = h11.Connection(h11.CLIENT)

    async def post(self, target: str, data: bytes) -> bytes:
        conn = self.h11
        headers = [("Host", self.host), ("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
        self.writer.write(
            conn.send(h11.Request(method="POST", target=target, headers=headers))
            + conn.send(h11.Data(data=data))
            + conn.send(h11.EndOfMessage())
        )
        chunks = []
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await self.reader.read(65536))
            elif isinstance(event, h11.Data):
                chunks.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                conn.start_next_cycle()
                return b"".join(chunks)


async def h11_client(url: str, calls: int, in_flight: int, body: bytes) -> tuple[float, float]:
    """(calls/s, CPU seconds per call) of `in_flight` keep-alive h11
    connections, each reply decoded as JSON: what the server sustains, and
    what an HTTP client costs at its leanest."""
    host, port = url.split("//")[1].split("/")[0].split(":")
    pool: asyncio.Queue[_H11Connection] = asyncio.Queue()
    for _ in range(in_flight):
        reader, writer = await asyncio.open_connection(host, int(port))
        pool.put_nowait(_H11Connection(reader, writer, host))

    async def one() -> None:
        conn = await pool.get()
        json.loads(await conn.post("/v1/chat/completions", body))
        pool.put_nowait(conn)

    await asyncio.gather(*(one() for _ in range(in_flight)))  # untimed
    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one() for _ in range(calls)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    while not pool.empty():
        pool.get_nowait().writer.close()
    return calls / wall, cpu / calls


CHAT = ChatRequest(
    ({"role": "system", "content": "You are a judge."}, {"role": "user", "content": "Rate this. " * 150}),
    Sampling(),
    {"type": "json_schema", "json_schema": {"name": "llm_rate", "strict": True, "schema": {"type": "object"}}},
)


async def transport_client(url: str, calls: int, in_flight: int) -> tuple[float, float]:
    """(calls/s, CPU seconds per call) of `PoolTransport` alone: one
    prepared httpx request sent again and again, each reply decoded as JSON."""
    transport = PoolTransport(in_flight)
    request = httpx.Request(
        "POST", url + "/chat/completions", json=CHAT.body(MODEL), extensions={"timeout": httpx.Timeout(120).as_dict()}
    )

    async def one() -> None:
        response = await transport.handle_async_request(request)
        json.loads(await response.aread())

    sem = asyncio.Semaphore(in_flight)

    async def bounded() -> None:
        async with sem:
            await one()

    await asyncio.gather(*(bounded() for _ in range(in_flight)))  # connections opened, untimed
    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(bounded() for _ in range(calls)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    await transport.aclose()
    return calls / wall, cpu / calls


async def bare_client(url: str, calls: int, in_flight: int) -> tuple[float, float]:
    """(calls/s, CPU seconds per call) of `OpenAIClient.chat` alone."""
    client = OpenAIClient([url], MODEL, per_endpoint=in_flight, max_retries=0)
    request = CHAT
    sem = asyncio.Semaphore(in_flight)

    async def one() -> None:
        async with sem:
            await client.chat(request)

    await asyncio.gather(*(one() for _ in range(in_flight)))  # connections opened, untimed
    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one() for _ in range(calls)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    await client.aclose()
    return calls / wall, cpu / calls


# --- the rbg path -------------------------------------------------------------------


def items(n: int) -> list[Item]:
    """Chat-like items with distinct prompts (about 1 KB each)."""
    out = []
    for i in range(n):
        words = " ".join(f"w{(i * 31 + k) % 997}" for k in range(60 + i % 90))
        out.append(
            Item(
                id=f"i{i}",
                input=f"Question {i}: explain item {i} to me.",
                candidates={"response": f"Answer {i}. {words}"},
            )
        )
    return out


async def rbg_run(url: str, graph, batch: list[Item], in_flight: int, cache: CallCache | None, trace_path: str) -> dict:
    """One run of the graph over `batch`, as `rbg run --concurrency N
    --per-endpoint N` does it: traces written, one per item."""
    client = OpenAIClient([url], MODEL, per_endpoint=in_flight, max_retries=0)
    backend = LLMBackend(client, cache, Sampling())
    interp = Interpreter(graph, [LocalBackend(), backend], in_flight)
    writer = TraceWriter(trace_path)
    statuses: dict[str, int] = {}
    cpu, wall = time.process_time(), time.perf_counter()
    async for result in interp.run(batch):
        writer.write(result.record)
        status = result.composition.decision.status
        statuses[status] = statuses.get(status, 0) + 1
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    writer.close()
    await backend.aclose()
    judgments = len(batch) * sum(1 for c in graph.criteria if backend.handles(c.procedure))
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "judgments": judgments,
        "calls": backend.usage.calls,
        "cache_hits": backend.usage.cache_hits,
        "statuses": statuses,
    }


# --- the report ---------------------------------------------------------------------


def row(measure: str, value: str, reference: str, ratio: str, target: str, ok: bool | None) -> list[str]:
    return [measure, value, reference, ratio, target, "" if ok is None else ("PASS" if ok else "FAIL")]


def table(rows: list[list[str]]) -> str:
    head = ["measure", "value", "reference", "ratio", "target", ""]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    fmt = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()  # noqa: E731
    return "\n".join([fmt(head), fmt(["-" * w for w in widths]), *map(fmt, rows)])


async def measure(args) -> dict:
    graph = check_source(GRAPH, "bench_llm.rbg").graph
    assert graph is not None
    n = args.concurrency
    calls = 2 * args.items
    server = LoopbackServer(args.delay, None if args.pinned is None else args.pinned[1])
    try:
        body = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "Rate this. " * 150}]}).encode()
        lean_double = await h11_client(server.url, 2 * calls, 2 * n, body)
        pool = await transport_client(server.url, calls, n)
        chat = await bare_client(server.url, calls, n)
        batch = items(args.items)
        with tempfile.TemporaryDirectory() as tmp:
            await rbg_run(server.url, graph, items(20), 8, None, os.path.join(tmp, "warm.jsonl"))  # untimed
            # A few runs of the rbg path, each after a run of the h11 client
            # (taking turns, so that load hits both alike): one burst of another
            # process's work can cost a single run a quarter of its speed. Of
            # each, the median run by calls/s and the least CPU per call count.
            uncached, leans = [], []
            for i in range(args.repeat):
                leans.append(await h11_client(server.url, calls, n, body))
                uncached.append(
                    await rbg_run(server.url, graph, batch, n, None, os.path.join(tmp, f"nocache{i}.jsonl"))
                )
            uncached.sort(key=lambda r: r["calls"] / r["wall_s"])
            first = uncached[len(uncached) // 2]
            lean = (sorted(x[0] for x in leans)[len(leans) // 2], min(x[1] for x in leans))
            cache = CallCache(os.path.join(tmp, "calls.sqlite"))
            filling = await rbg_run(server.url, graph, batch, n, cache, os.path.join(tmp, "fill.jsonl"))
            # Reruns too: the least CPU time counts, every one checked.
            reruns = [
                await rbg_run(server.url, graph, batch, n, cache, os.path.join(tmp, f"cached{i}.jsonl"))
                for i in range(args.repeat)
            ]
            cache.close()
            point_read = sqlite_point_reads(os.path.join(tmp, "calls.sqlite"))
            filled = _without_latency(os.path.join(tmp, "fill.jsonl"))
            same = all(_without_latency(os.path.join(tmp, f"cached{i}.jsonl")) == filled for i in range(args.repeat))
            cached = min(reruns, key=lambda r: r["cpu_s"])
            cached["runs_cpu_us_per_judgment"] = [r["cpu_s"] / r["judgments"] * 1e6 for r in reruns]
            cached["calls"] = sum(r["calls"] for r in reruns)
            cached["cache_hits"] = sum(r["cache_hits"] for r in reruns)
    finally:
        served = server.stop()
    return {
        "delay_s": args.delay,
        "concurrency": n,
        "items": args.items,
        "bound_calls_per_s": n / args.delay,
        "h11": {
            "calls_per_s": lean[0],
            "cpu_ms_per_call": lean[1] * 1000,
            "runs_cpu_ms_per_call": [x[1] * 1000 for x in leans],
        },
        "h11_double": {"in_flight": 2 * n, "calls_per_s": lean_double[0], "cpu_ms_per_call": lean_double[1] * 1000},
        "transport": {"calls_per_s": pool[0], "cpu_ms_per_call": pool[1] * 1000},
        "chat": {"calls_per_s": chat[0], "cpu_ms_per_call": chat[1] * 1000},
        "rbg": {
            **first,
            "calls_per_s": first["calls"] / first["wall_s"],
            "cpu_ms_per_call": min(r["cpu_s"] / r["calls"] for r in uncached) * 1000,
            "runs_calls_per_s": [r["calls"] / r["wall_s"] for r in uncached],
            "runs_cpu_ms_per_call": [r["cpu_s"] / r["calls"] * 1000 for r in uncached],
        },
        "cache_fill": {**filling, "calls_per_s": filling["calls"] / filling["wall_s"]},
        "cache_rerun": {
            **cached,
            "speedup": filling["wall_s"] / cached["wall_s"],
            "same_traces": same,
            "us_per_judgment": cached["wall_s"] / cached["judgments"] * 1e6,
            "cpu_us_per_judgment": cached["cpu_s"] / cached["judgments"] * 1e6,
        },
        "sqlite_point_read_us": point_read * 1e6,
        "server": served,
        "load_average": os.getloadavg(),
        "pinned": args.pinned,
    }


def sqlite_point_reads(path: str) -> float:
    """CPU seconds per read of one cached call by its key from the cache file
    (a prepared point query on a warm connection) and the JSON decode of
    it: the floor of a cache hit. The median of 3 passes over every key."""
    import sqlite3

    db = sqlite3.connect(path)
    keys = [k for (k,) in db.execute("SELECT key FROM calls")]
    times = []
    for _ in range(3):
        t = time.process_time()
        for k in keys:
            json.loads(db.execute("SELECT response FROM calls WHERE key = ?", (k,)).fetchone()[0])
        times.append((time.process_time() - t) / len(keys))
    db.close()
    return sorted(times)[1]


def _without_latency(path: str) -> list[dict]:
    """Trace records with the measured latencies blanked: a cached rerun must
    write exactly the first run's traces otherwise."""
    with open(path, encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh]
    for rec in records:
        for per in rec["criteria"].values():
            for j in per.values():
                j["latency_ms"] = None
    return records


def report(m: dict) -> tuple[str, bool]:
    bound = m["bound_calls_per_s"]
    n = m["concurrency"]
    rbg, chat, pool, lean, double = m["rbg"], m["chat"], m["transport"], m["h11"], m["h11_double"]
    fill, rerun = m["cache_fill"], m["cache_rerun"]
    fraction = rbg["calls_per_s"] / bound
    cpu_ratio = rbg["cpu_ms_per_call"] / lean["cpu_ms_per_call"]
    hit_us, point = rerun["cpu_us_per_judgment"], m["sqlite_point_read_us"]
    at_bound = rbg["judgments"] / bound  # the first run's wall time if it ran at the bound
    rows = [
        row(
            f"rbg path, calls/s at {n} in flight",
            f"{rbg['calls_per_s']:.0f}",
            f"bound {bound:.0f}",
            f"{fraction:.1%}",
            ">= 90%",
            fraction >= 0.9,
        ),
        row(
            f"  OpenAIClient.chat alone, at {n}",
            f"{chat['calls_per_s']:.0f}",
            f"bound {bound:.0f}",
            f"{chat['calls_per_s'] / bound:.1%}",
            "",
            None,
        ),
        row(
            f"  PoolTransport alone, at {n}",
            f"{pool['calls_per_s']:.0f}",
            f"bound {bound:.0f}",
            f"{pool['calls_per_s'] / bound:.1%}",
            "",
            None,
        ),
        row(
            f"  h11 client, at {n}",
            f"{lean['calls_per_s']:.0f}",
            f"bound {bound:.0f}",
            f"{lean['calls_per_s'] / bound:.1%}",
            "",
            None,
        ),
        row(
            f"  h11 client, at {double['in_flight']} (server check)",
            f"{double['calls_per_s']:.0f}",
            f"bound {2 * bound:.0f}",
            f"{double['calls_per_s'] / (2 * bound):.1%}",
            "",
            None,
        ),
        row(
            "client CPU per call, rbg path",
            f"{rbg['cpu_ms_per_call']:.3f} ms",
            f"h11 client {lean['cpu_ms_per_call']:.3f} ms",
            f"{cpu_ratio:.2f}x",
            "(was <= 1.5x; retired)",
            None,
        ),
        row(
            "  CPU per call, rbg path",
            f"{rbg['cpu_ms_per_call']:.3f} ms",
            f"chat alone {chat['cpu_ms_per_call']:.3f} ms",
            f"{rbg['cpu_ms_per_call'] / chat['cpu_ms_per_call']:.2f}x",
            "",
            None,
        ),
        row(
            "  CPU per call, chat alone",
            f"{chat['cpu_ms_per_call']:.3f} ms",
            f"PoolTransport {pool['cpu_ms_per_call']:.3f} ms",
            f"{chat['cpu_ms_per_call'] / pool['cpu_ms_per_call']:.2f}x",
            "",
            None,
        ),
        row(
            "  CPU per call, PoolTransport",
            f"{pool['cpu_ms_per_call']:.3f} ms",
            f"h11 client {lean['cpu_ms_per_call']:.3f} ms",
            f"{pool['cpu_ms_per_call'] / lean['cpu_ms_per_call']:.2f}x",
            "",
            None,
        ),
        row(
            "  CPU per call, h11 client",
            f"{lean['cpu_ms_per_call']:.3f} ms",
            f"bound {1000 / bound:.3f} ms/call",
            "",
            "",
            None,
        ),
        row(
            "cached rerun, wall",
            f"{rerun['wall_s'] * 1000:.0f} ms",
            f"first run {fill['wall_s'] * 1000:.0f} ms",
            f"{rerun['speedup']:.0f}x faster",
            ">= 50x",
            rerun["speedup"] >= 50,
        ),
        row(
            "  against a first run at the bound",
            f"{rerun['wall_s'] * 1000:.0f} ms",
            f"{at_bound * 1000:.0f} ms",
            f"{at_bound / rerun['wall_s']:.1f}x faster",
            "",
            None,
        ),
        row(
            "cache hit, CPU per judgment (rerun)",
            f"{hit_us:.0f} us",
            f"SQLite point read + JSON {point:.1f} us",
            f"{hit_us / point:.1f}x",
            "(was <= 50 us; retired)",
            None,
        ),
    ]
    notes = [
        f"rbg path: {len(rbg['runs_calls_per_s'])} uncached runs, each after a run of the h11 client; they made"
        f" {', '.join(f'{x:.0f}' for x in rbg['runs_calls_per_s'])} calls/s (the median counts) at"
        f" {', '.join(f'{x:.3f}' for x in rbg['runs_cpu_ms_per_call'])} ms CPU per call, the h11 client"
        f" {', '.join(f'{x:.3f}' for x in lean['runs_cpu_ms_per_call'])} ms (the least of each counts);"
        f" the reruns took {', '.join(f'{x:.0f}' for x in rerun['runs_cpu_us_per_judgment'])} us CPU per judgment"
        " (the least counts); each other reference is one run.",
        f"{m['items']} items x 2 LLM criteria (and a rule) = {rbg['judgments']} LLM judgments per run, traces written;"
        f" server delay {m['delay_s'] * 1000:.0f} ms; decisions {rbg['statuses']}.",
        f"The cache-filling first run (the uncached run plus a SQLite insert per call) made {fill['calls']} calls at"
        f" {fill['calls_per_s']:.0f} calls/s, {fill['cpu_s'] / max(1, fill['calls']) * 1000:.3f} ms CPU per call"
        " (what `rbg run` spends with its default cache)."
        f" The reruns made {rerun['calls']} calls ({rerun['cache_hits']} cache "
        "hits),"
        f" {rerun['wall_s'] / rbg['judgments'] * 1e6:.0f} us per judgment (wall, the rerun that counts),"
        " and wrote the first "
        "run's traces"
        f" (latencies aside): {rerun['same_traces']}.",
        "The rerun's speed-up is first-run time over rerun time, so it depends on how fast the first run was:"
        " the second row shows it against a first run at the bound. Being 50x faster than that would take a rerun of"
        f" {at_bound / 50 * 1000:.0f} ms, {at_bound / 50 / rbg['judgments'] * 1e6:.0f} us per judgment; a 50x speed-up"
        f" over the first run also means a first run at most {at_bound / (50 * rerun['wall_s']):.0%} as fast as the "
        "bound allows"
        " (at this rerun speed).",
        f"Server process: {m['server']['served']} completions, "
        f"{m['server']['cpu_s'] / max(1, m['server']['served']) * 1000:.3f} ms CPU each.",
        f"Machine: {os.cpu_count()} CPUs, load average {m['load_average'][0]:.1f} at the end; "
        + (
            "clients and server placed by the system"
            if m["pinned"] is None
            else f"clients on CPU {m['pinned'][0]}, the server on CPU {m['pinned'][1]}"
        )
        + "; Python "
        f"{sys.version.split()[0]}.",
    ]
    ok = fraction >= 0.9 and rerun["speedup"] >= 50 and rerun["calls"] == 0 and rerun["same_traces"]
    return table(rows) + "\n\n" + "\n".join(notes), ok


def _pin() -> tuple[int, int] | None:
    """(the clients' CPU, the server's): this process pinned to the first
    CPU it may use, the server to be pinned to the next; None where there
    are not two."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None
    os.sched_setaffinity(0, {cpus[0]})
    return cpus[0], cpus[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=1000, help="items per run (two LLM calls each)")
    ap.add_argument(
        "--repeat", type=int, default=5, help="uncached rbg runs (each after an h11 client run), and cached reruns"
    )
    ap.add_argument("--concurrency", type=int, default=64, help="calls in flight")
    ap.add_argument("--delay", type=float, default=0.05, help="the server's answer time, seconds")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--no-pin", action="store_true", help="let the system place the clients and the server")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cpu", type=int, help=argparse.SUPPRESS)  # the server's
    args = ap.parse_args()
    if args.serve:
        if args.cpu is not None:
            os.sched_setaffinity(0, {args.cpu})
        asyncio.run(_serve(args.delay))
        return
    args.pinned = None if args.no_pin else _pin()
    figures = asyncio.run(measure(args))
    text, ok = report(figures)
    print(json.dumps(figures, indent=2, sort_keys=True) if args.json else text)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
