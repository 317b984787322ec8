"""Each home-made replacement of a library, A/B against the library, on the
workloads a user waits for (issue 27, item 1). Every figure is a fresh `rbg`
process (the installed console script), run with the home-made part and with
`RBG_PLAIN_LIBS=1` (the plain library path) taking turns, `--repeat` times;
wall time and the process's CPU time (user + system, from the OS), the least
of the repeats for each side, and the spread.

- http: `rbg run` of `--judgments` LLM judgments (two LLM criteria per item)
  against a loopback server (bench_llm.py's, in its own process) answering
  each call after `--delay` seconds, at `--concurrency` calls in flight; then
  a cached rerun of the same items (every call a cache hit; no HTTP at all,
  so the two sides should read alike); and `--embedded` items judged by the
  embedded llama.cpp server (SmolLM2-135M on the CPU), with no cache.
- parser: `rbg check` of a 50-file repository in one cold process (what
  pre-commit runs on a commit touching them), files from benchmarks/gen.py.

    .venv/bin/python benchmarks/bench_stacks.py                   # every part
    .venv/bin/python benchmarks/bench_stacks.py --part parser --repeat 5

The figures and the decisions they back are in benchmarks/README.md,
"Home-made parts and what they earn".
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gen  # noqa: E402
from bench_llm import GRAPH, LoopbackServer  # noqa: E402

RBG = shutil.which("rbg", path=os.path.dirname(sys.executable)) or "rbg"
SIDES = ("home-made", "library")


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of `argv`; exits the script unless it exits 0."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv[:3])}... exited {done.returncode}: {done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def environment(side: str, part: str) -> dict[str, str]:
    """The environment of `part`'s `side`: `RBG_PLAIN_LIBS` names the part on the library side."""
    env = {k: v for k, v in os.environ.items() if k != "RBG_PLAIN_LIBS"}
    if side == "library":
        env["RBG_PLAIN_LIBS"] = part
    return env


def ab(name: str, repeat: int, run) -> dict:
    """`run(side)` -> (wall, cpu), `repeat` times per side, taking turns."""
    seen: dict[str, list[tuple[float, float]]] = {s: [] for s in SIDES}
    for i in range(repeat):
        for side in SIDES if i % 2 == 0 else SIDES[::-1]:
            seen[side].append(run(side))
    return {"workload": name, **{side: seen[side] for side in SIDES}}


def show(result: dict) -> None:
    ours, lib = result["home-made"], result["library"]

    def spread(values: list[float]) -> str:
        return f"{min(values):.3f}-{max(values):.3f}"

    print(f"\n{result['workload']}")
    for what, k in (("wall s", 0), ("CPU s", 1)):
        o, b = [r[k] for r in ours], [r[k] for r in lib]
        ratios = [x / y for x, y in zip(b, o, strict=True)]
        print(
            f"  {what:6}  home-made {min(o):.3f} (runs {spread(o)})   library {min(b):.3f} (runs {spread(b)})"
            f"   library/home-made: least {min(b) / min(o):.2f}x,"
            f" median {statistics.median(b) / statistics.median(o):.2f}x, pairs {min(ratios):.2f}x-{max(ratios):.2f}x"
        )


def items_file(path: str, n: int) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            words = " ".join(f"w{(i * 31 + k) % 997}" for k in range(60 + i % 90))
            item = {"id": f"i{i}", "input": f"Question {i}: explain item {i}.", "response": f"Answer {i}. {words}"}
            fh.write(json.dumps({**item, "gold": i % 5 + 1}) + "\n")


@contextlib.contextmanager
def served(delay: float):
    """bench_llm.py's loopback server, in its own process, for one run or a
    few (it stops by itself after 10 minutes)."""
    server = LoopbackServer(delay)
    try:
        yield server.url
    finally:
        server.stop()


def judge(tmp: str, items: str, out: str, cache: str, url: str, concurrency: int) -> list[str]:
    """`rbg run` of the benchmark graph over `items`."""
    graph = os.path.join(tmp, "g.rbg")
    if not os.path.exists(graph):
        with open(graph, "w", encoding="utf-8") as fh:
            fh.write(GRAPH)
    return [RBG, "run", graph, items, "--out", out, "--cache", cache, "--base-url", url,
            "--concurrency", str(concurrency), "--per-endpoint", str(concurrency), "--max-retries", "0"]  # fmt: skip


def http(args, tmp: str) -> list[dict]:
    n = args.judgments // 2  # two LLM criteria per item
    items = os.path.join(tmp, "items.jsonl")
    items_file(items, n)
    runs = 0

    def out() -> str:
        nonlocal runs
        runs += 1
        return os.path.join(tmp, f"t{runs}.jsonl")

    filled = os.path.join(tmp, "filled.sqlite")
    with served(args.delay) as url:
        timed(judge(tmp, items, out(), filled, url, args.concurrency), environment("home-made", "http"))
        bound = args.concurrency / args.delay
        fresh = ab(
            f"http: rbg run, {2 * n:,} judgments, {args.concurrency} in flight, server"
            f" {args.delay * 1000:g} ms a call (bound {bound:,.0f} calls/s = {2 * n / bound:.2f} s)",
            args.repeat,
            lambda side: timed(
                judge(tmp, items, out(), os.path.join(tmp, f"c{runs}.sqlite"), url, args.concurrency),
                environment(side, "http"),
            ),
        )
        rerun = ab(
            f"http: the cached rerun of the same {n:,} items",
            args.repeat,
            lambda side: timed(judge(tmp, items, out(), filled, url, args.concurrency), environment(side, "http")),
        )
    if not args.embedded:
        return [fresh, rerun]
    few = os.path.join(tmp, "few.jsonl")
    items_file(few, args.embedded)
    graph = os.path.join(tmp, "g.rbg")
    real = ab(
        f"http: rbg run of {args.embedded} items ({2 * args.embedded} judgments) on the embedded llama.cpp"
        " (SmolLM2-135M), no cache",
        args.repeat,
        lambda side: timed([RBG, "run", graph, few, "--out", out(), "--no-cache"], environment(side, "http")),
    )
    return [fresh, rerun, real]


def json_part(args, tmp: str) -> list[dict]:
    items = os.path.join(tmp, "items.jsonl")
    items_file(items, args.items)
    cache, traces = os.path.join(tmp, "calls.sqlite"), os.path.join(tmp, "traces.jsonl")
    with served(0.001) as url:  # the cache filled fast: a server with no latency to speak of
        timed(judge(tmp, items, traces, cache, url, 64), environment("home-made", "json"))
    runs = 0

    def rerun(side: str) -> tuple[float, float]:
        nonlocal runs
        runs += 1
        with served(0.001) as url:  # asked for its model list only
            return timed(
                judge(tmp, items, os.path.join(tmp, f"r{runs}.jsonl"), cache, url, 64), environment(side, "json")
            )

    reruns = ab(
        f"json: the cached rerun of {args.items:,} items ({2 * args.items:,} LLM judgments)", args.repeat, rerun
    )
    graph = os.path.join(tmp, "g.rbg")
    evals = ab(
        f"json: rbg eval --traces over those {args.items:,} items' traces ({os.path.getsize(traces) / 1e6:.0f} MB)",
        args.repeat,
        lambda side: timed([RBG, "eval", graph, items, "--traces", traces], environment(side, "json")),
    )
    return [reruns, evals]


def parser(args, tmp: str) -> list[dict]:
    folder = os.path.join(tmp, "repo")
    os.makedirs(folder)
    files = []
    for i, text in enumerate(gen.corpus(args.files, seed=3)):
        files.append(os.path.join(folder, f"r{i:02d}.rbg"))
        with open(files[-1], "w", encoding="utf-8") as fh:
            fh.write(text)
    for side in SIDES:  # warm-up: .pyc files and Lark's grammar cache written, as on a user's machine
        timed([RBG, "check", *files], environment(side, "parser"))
    lines = sum(t.count("\n") for t in gen.corpus(args.files, seed=3))
    return [
        ab(
            f"parser: rbg check of {args.files} files ({lines:,} lines), one cold process",
            args.repeat,
            lambda side: timed([RBG, "check", *files], environment(side, "parser")),
        )
    ]


PARTS = {"http": http, "json": json_part, "parser": parser}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=sorted(PARTS), action="append", help="default: every part")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--judgments", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--delay", type=float, default=0.05)
    ap.add_argument("--embedded", type=int, default=8, help="items judged by the embedded model (0: none)")
    ap.add_argument("--items", type=int, default=20000, help="items of the JSON part's cached rerun")
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--json", action="store_true", help="print the raw figures as JSON too")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs, {args.repeat} runs a side, taking turns")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for part in args.part or sorted(PARTS):
            os.makedirs(os.path.join(tmp, part))
            for result in PARTS[part](args, os.path.join(tmp, part)):
                show(result)
                results.append(result)
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
