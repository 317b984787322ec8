"""Peak memory of every command that reads items or traces, as items grow.

For each size N (default 10,000 and 100,000; 1,000,000 by `--items`), N
items are generated for a rule-only graph (no LLM, no server): a GSM8K-like
question, a response ending in a number, a reference `#### number` and a
bool gold label. Each command then runs in a fresh subprocess and its peak
resident memory is read (`ru_maxrss` of the only child of a fresh parent):

    run       rbg run GRAPH ITEMS --out TRACES
    replay    rbg replay GRAPH TRACES
    eval      rbg eval GRAPH ITEMS                    (judging, with bootstrap intervals)
    eval-tr   rbg eval GRAPH ITEMS --traces TRACES
    fit       rbg fit GRAPH ITEMS -o FITTED --folds 0 --max-iter 1   (memory, not the search, is measured)
    audit     rbg audit run SUITE --out DIR           (one surface operator, every item)
    export    rbg view TRACES ITEMS --export DIR

Target (benchmarks/README.md): peak memory grows sub-linearly, the largest
size's peak at most 2x the smallest's for a 10x step; a command that must
hold something per item says what and how much. Exit 1 when a target is
missed.

Run: .venv/bin/python benchmarks/bench_memory.py [--items 10000 100000 1000000] [--only eval,replay]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

RBG = os.path.join(os.path.dirname(sys.executable), "rbg")
COMMANDS = ("run", "replay", "eval", "eval-tr", "fit", "audit", "export")
RATIO_TARGET = 2.0  # peak at the largest size over peak at the smallest, for sizes 10x apart or more

GRAPH = """\
rubric bench_memory { version = 1 }

contract { scale = bool }

criterion correct: bool = rule.matches_reference { mode = numeric }
criterion long: bool = rule.length { over = 12 }

node correct_n = transform.map(value: correct) { values = { true: 1, false: 0 } }
node long_n = transform.map(value: long) { values = { true: 1, false: 0 } }
node score = reduce.weighted_mean(inputs: [correct_n, long_n]) { weights = [0.8, 0.2] }
node verdict = transform.threshold(value: score) { at = 0.5 }

sink verdict

readout pointwise { output = bool }
"""

SUITE = """\
judge = "graph.rbg"
items = "items.jsonl"
repeats = 1
seed = 0
operators = ["typo_noise"]

[options.typo_noise]
fields = ["response"]
"""

_MEASURE = """
import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
sys.stdout.write(f"{r.returncode} {peak}\\n")
sys.stdout.write(r.stderr.decode("utf-8", "replace")[-2000:])
"""


_WORDS = ("so", "then", "we", "add", "the", "two", "numbers")


def make_items(path: str, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            a, b = rng.randint(2, 999), rng.randint(2, 999)
            answer = a + b if rng.random() < 0.7 else a + b + rng.randint(1, 9)
            words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 20)))
            item = {
                "id": f"q{i:07d}",
                "input": f"Sam has {a} marbles and finds {b} more. How many marbles does Sam have now?",
                "response": f"{words}. {a} + {b} = {answer}. The answer is {answer}.",
                "reference": f"{a} + {b} = {a + b}\n#### {a + b}",
                "gold": answer == a + b if rng.random() < 0.9 else answer != a + b,
            }
            fh.write(json.dumps(item) + "\n")


def measure(argv: list[str], cwd: str) -> tuple[int, float, float, str]:
    """(exit status, peak MB, seconds, stderr's tail) of one command."""
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", _MEASURE, *argv], capture_output=True, text=True, cwd=cwd)
    seconds = time.perf_counter() - t0
    first, _, err = r.stdout.partition("\n")
    status, kb = map(int, first.split())
    return status, kb / 1024, seconds, err


def argv_of(command: str, d: str) -> list[str]:
    g, items, traces = f"{d}/graph.rbg", f"{d}/items.jsonl", f"{d}/traces.jsonl"
    return {
        "run": [RBG, "run", g, items, "--out", traces],
        "replay": [RBG, "replay", g, traces],
        "eval": [RBG, "eval", g, items],
        "eval-tr": [RBG, "eval", g, items, "--traces", traces],
        "fit": [RBG, "fit", g, items, "-o", f"{d}/fitted.rbg", "--folds", "0", "--max-iter", "1"],
        "audit": [RBG, "audit", "run", f"{d}/suite.toml", "--out", f"{d}/audit"],
        "export": [RBG, "view", traces, items, "--export", f"{d}/export"],
    }[command]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--only", default=",".join(COMMANDS), help="commands to measure, comma-separated")
    ap.add_argument("--keep", action="store_true", help="keep the generated files (their folder is printed)")
    args = ap.parse_args()
    only = [c for c in COMMANDS if c in args.only.split(",")]
    if "run" not in only and {"replay", "eval-tr", "export"} & set(only):
        only.insert(0, "run")  # they read its traces
    root = tempfile.mkdtemp(prefix="bench_memory.")
    peaks: dict[str, dict[int, float]] = {c: {} for c in only}
    failed = False
    try:
        print(f"{'command':<8} {'items':>9} {'peak MB':>9} {'seconds':>8}  {'KB/item':>8}")
        for n in sorted(args.items):
            d = os.path.join(root, str(n))
            os.makedirs(d)
            make_items(f"{d}/items.jsonl", n)
            with open(f"{d}/graph.rbg", "w") as fh:
                fh.write(GRAPH)
            with open(f"{d}/suite.toml", "w") as fh:
                fh.write(SUITE)
            for c in only:
                status, mb, seconds, err = measure(argv_of(c, d), d)
                # rbg eval exits 0; rbg run 0 (every item judged); others 0 or 1 by their own rules
                if status not in (0, 1):
                    print(f"{c}: exit {status}\n{err}", file=sys.stderr)
                    failed = True
                    continue
                peaks[c][n] = mb
                print(f"{c:<8} {n:>9,} {mb:>9.1f} {seconds:>8.1f}  {mb * 1024 / n:>8.2f}", flush=True)
        if len(args.items) > 1:
            lo, hi = min(args.items), max(args.items)
            print(f"\npeak at {hi:,} items over peak at {lo:,} (target <= {RATIO_TARGET}x for sizes 10x apart):")
            for c, by in peaks.items():
                if lo in by and hi in by:
                    ratio = by[hi] / by[lo]
                    miss = hi >= 10 * lo and ratio > RATIO_TARGET
                    failed |= miss
                    print(f"  {c:<8} {ratio:5.2f}x {'MISSED' if miss else 'met'}")
    finally:
        if args.keep:
            print(f"files kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
