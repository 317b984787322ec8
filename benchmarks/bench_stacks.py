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
  pre-commit runs on a commit touching them), files from benchmarks/gen.py;
  then parsing alone, in a cold process, with the generated tables, with
  Lark, and with the module Lark's standalone generator writes.

JSON was measured the same way (a cached rerun of 20,000 items, `rbg eval
--traces` over their traces) with the part this script had at commit
33b9c7d (`--part json`), before the private JSON paths went (README).

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

import gen
from bench_llm import GRAPH, LoopbackServer

from rubriclang import packaged

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


def ab(name: str, repeat: int, run, sides: tuple[str, ...] = SIDES) -> dict:
    """`run(side)` -> (wall, cpu), `repeat` times per side, taking turns
    (in turn order, then in reverse)."""
    seen: dict[str, list[tuple[float, float]]] = {s: [] for s in sides}
    for i in range(repeat):
        for side in sides if i % 2 == 0 else sides[::-1]:
            seen[side].append(run(side))
    return {"workload": name, "sides": list(sides), **seen}


def show(result: dict) -> None:
    """Each side's least time and spread, and its ratios to the first side's."""
    first, *others = result["sides"]

    def spread(values: list[float]) -> str:
        return f"{min(values):.3f}-{max(values):.3f}"

    print(f"\n{result['workload']}")
    for what, k in (("wall s", 0), ("CPU s", 1)):
        o = [r[k] for r in result[first]]
        print(f"  {what:6}  {first} {min(o):.3f} (runs {spread(o)})")
        for side in others:
            b = [r[k] for r in result[side]]
            ratios = [x / y for x, y in zip(b, o, strict=True)]
            print(
                f"  {'':6}  {side} {min(b):.3f} (runs {spread(b)}): {side}/{first} least {min(b) / min(o):.2f}x,"
                f" median {statistics.median(b) / statistics.median(o):.2f}x,"
                f" pairs {min(ratios):.2f}x-{max(ratios):.2f}x"
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


# Parsing alone in a cold process: the generated tables, Lark (its analysed
# grammar read from its cache, as `rbg check` reads it), and the module Lark's
# own standalone generator writes of the grammar (`lark.tools.standalone`).
PARSE_ONLY = {
    "tables": "from rubriclang.syntax.parser import tables_parser as p; parse = lambda t: p().parse(t)",
    "Lark": "from rubriclang.syntax import larkparse as lp; parse = lp._contextual(_BUILDER).parse",
    "Lark standalone": "import rubric_standalone as sa; parse = sa.Lark_StandAlone(transformer=_BUILDER).parse",
}
PARSE_LOOP = """
import sys
from rubriclang.syntax.parser import _BUILDER
{setup}
for path in sys.argv[1:]:
    _BUILDER.begin(path)
    with open(path, encoding="utf-8") as fh:
        parse(fh.read())
"""


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
    check = ab(
        f"parser: rbg check of {args.files} files ({lines:,} lines), one cold process",
        args.repeat,
        lambda side: timed([RBG, "check", *files], environment(side, "parser")),
    )
    grammar, standalone = os.path.join(tmp, "rubric.lark"), os.path.join(tmp, "rubric_standalone.py")
    with open(grammar, "w", encoding="utf-8") as fh:
        fh.write(packaged.grammar())
    subprocess.run(
        [sys.executable, "-m", "lark.tools.standalone", "-l", "contextual", "--keep_all_tokens",
         "--maybe_placeholders", "-o", standalone, grammar],
        check=True,
    )  # fmt: skip
    paths = os.pathsep.join(filter(None, [tmp, os.environ.get("PYTHONPATH")]))
    env = {**environment("home-made", "parser"), "PYTHONPATH": paths}

    def parse_only(side: str) -> tuple[float, float]:
        return timed([sys.executable, "-c", PARSE_LOOP.format(setup=PARSE_ONLY[side]), *files], env)

    for side in PARSE_ONLY:  # warm-up
        parse_only(side)
    size = os.path.getsize(standalone) // 1000
    only = ab(
        f"parser: parsing alone, the same {args.files} files, one cold process (standalone module: {size} KB)",
        args.repeat,
        parse_only,
        tuple(PARSE_ONLY),
    )
    return [check, only]


PARTS = {"http": http, "parser": parser}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=sorted(PARTS), action="append", help="default: every part")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--judgments", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--delay", type=float, default=0.05)
    ap.add_argument("--embedded", type=int, default=8, help="items judged by the embedded model (0: none)")
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
