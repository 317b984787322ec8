"""Peak memory and throughput of `rbg run` and `rbg replay` over structured items.

Issue 26 ("Done when", speed): a 100k-item run over conversation items of
10 turns stays flat in memory. For each size N (default 10,000 and
100,000), N pointwise items are generated, deterministic from `--seed`: a
`response` that is an OpenAI chat-completions conversation of 10 turns
(system, user, assistant turns with `tool_calls` whose arguments are JSON
strings, tool results tied to their call ids, a final answer citing
documents), a `documents` field of three documents and an `answer` text.
The rubric declares that shape and is rules only (no LLM, no server): a
per-element `rule.json_valid` over each tool call's arguments,
`rule.count` of the calls, `rule.citations_valid` of the answer against
the documents, reduced to one bool verdict.

Each command runs in a fresh subprocess and its peak resident memory is
read as `bench_memory.py` reads it (`ru_maxrss` of the only child of a
fresh parent), with its CPU time (user and system, the command's process
tree); the same commands over bench_memory's plain-text GSM8K-like items of
the same N run in the same pass, as the reference for memory and for CPU
per item. CPU rather than wall time: on a shared machine the wall time of a
long run grows with everything else running, its CPU time does not.

Targets (benchmarks/README.md): the peak at the largest size at most 2x the
peak at the smallest for a 10x step (bench_memory's target). Throughput
against the plain items is printed, without a target: a conversation item
is about 2 KB of JSON and is validated field by field. Exit 1 when a target
is missed.

Run: .venv/bin/python benchmarks/bench_structured.py [--items 10000 100000] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_memory

RBG = bench_memory.RBG
RATIO_TARGET = bench_memory.RATIO_TARGET
COMMANDS = ("run", "replay")

GRAPH = """\
rubric bench_structured { version = 1 }

contract { scale = bool }

item {
  response: conversation
  documents: documents
  answer: text
}

criterion args_ok: bool = rule.json_valid each tool_call in response { arguments = true }
criterion few_calls: bool = rule.count { of = tool_calls, max = 3 }
criterion cites: bool = rule.citations_valid { field = "answer", at_least = 1 }

node calls_ok = reduce.all(inputs: [args_ok])
node calls_ok_d = transform.default(value: calls_ok) { value = true }
node verdict = reduce.all(inputs: [calls_ok_d, few_calls, cites])

sink verdict

readout pointwise { output = bool }
"""

_CITIES = ("Lisbon", "Oslo", "Quito", "Hanoi", "Nairobi", "Perth", "Lima", "Riga")
_WORDS = ("the", "flight", "leaves", "at", "noon", "and", "arrives", "late", "on", "time", "gate", "seat")


def _words(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(lo, hi)))


def _call(call_id: str, name: str, arguments: dict[str, object]) -> dict[str, object]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def make_item(i: int, rng: random.Random) -> dict[str, object]:
    """One pointwise item: a 10-turn conversation, three documents, an answer citing some."""
    src, dst = rng.sample(_CITIES, 2)
    date = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    docs = [{"id": f"doc{k}", "title": f"{src} to {dst}, part {k}", "text": _words(rng, 20, 60)} for k in range(3)]
    c1, c2, c3 = (f"call_{i}_{k}" for k in range(3))
    conversation = [
        {"role": "system", "content": "You are a travel agent. Use the tools; cite documents as [docN]."},
        {"role": "user", "content": f"Book me a flight from {src} to {dst} on {date}."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                _call(c1, "search_flights", {"from": src, "to": dst, "date": date}),
                _call(c2, "get_user", {"user_id": f"u{rng.randint(1, 99_999)}"}),
            ],
        },
        {"role": "tool", "tool_call_id": c1, "content": json.dumps({"flights": [f"F{rng.randint(100, 999)}"]})},
        {"role": "tool", "tool_call_id": c2, "content": json.dumps({"name": "Sam", "tier": "gold"})},
        {"role": "assistant", "content": f"I found a flight; {_words(rng, 3, 12)}. Shall I book it?"},
        {"role": "user", "content": "Yes, please."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [_call(c3, "book_flight", {"flight": f"F{rng.randint(100, 999)}", "seats": 1})],
        },
        {"role": "tool", "tool_call_id": c3, "content": json.dumps({"status": "confirmed"})},
        {"role": "assistant", "content": f"Booked [doc{rng.randint(0, 2)}]: {_words(rng, 3, 12)}."},
    ]
    cited = rng.randint(0, 3)  # doc3 does not exist: about a quarter of the answers cite an unknown id
    return {
        "id": f"c{i:07d}",
        "response": conversation,
        "documents": docs,
        "answer": f"Your flight from {src} to {dst} is booked [doc{cited}].",
    }


def make_items(path: str, n: int, seed: int = 0) -> None:
    """N items into the JSONL file `path`, the same bytes for the same `n` and `seed`."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps(make_item(i, rng)) + "\n")


def _children_cpu() -> float:
    """CPU seconds of every finished child so far, and of the children they waited for."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _argv(command: str, d: str) -> list[str]:
    g, items, traces = f"{d}/graph.rbg", f"{d}/items.jsonl", f"{d}/traces.jsonl"
    return {"run": [RBG, "run", g, items, "--out", traces], "replay": [RBG, "replay", g, traces]}[command]


def _prepare(d: str, n: int, seed: int, structured: bool) -> None:
    os.makedirs(d)
    (make_items if structured else bench_memory.make_items)(f"{d}/items.jsonl", n, seed)
    with open(f"{d}/graph.rbg", "w", encoding="utf-8") as fh:
        fh.write(GRAPH if structured else bench_memory.GRAPH)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", action="store_true", help="keep the generated files (their folder is printed)")
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="bench_structured.")
    peaks: dict[tuple[str, str], dict[int, float]] = {}
    cpu: dict[tuple[str, str, int], float] = {}
    failed = False
    try:
        head = f"{'peak MB':>9} {'seconds':>8} {'CPU s':>7} {'CPU us/item':>11} {'KB/item':>8}"
        print(f"{'items':<12} {'command':<8} {'N':>9} {head}")
        for n in sorted(args.items):
            for kind in ("structured", "plain"):
                d = os.path.join(root, f"{kind}{n}")
                _prepare(d, n, args.seed, kind == "structured")
                size_kb = os.path.getsize(f"{d}/items.jsonl") / 1024 / n
                for c in COMMANDS:
                    before = _children_cpu()
                    status, mb, secs, err = bench_memory.measure(_argv(c, d), d)
                    spent = _children_cpu() - before
                    if status not in (0, 1):  # 1: some verdicts failed the contract, by design none do
                        print(f"{kind} {c} at {n:,}: exit {status}\n{err}", file=sys.stderr)
                        failed = True
                        continue
                    peaks.setdefault((kind, c), {})[n] = mb
                    cpu[kind, c, n] = spent
                    size = f"   (items {size_kb:.2f} KB each)" if c == "run" else ""
                    figures = f"{mb:>9.1f} {secs:>8.1f} {spent:>7.1f} {spent * 1e6 / n:>11.0f} {mb * 1024 / n:>8.2f}"
                    print(f"{kind:<12} {c:<8} {n:>9,} {figures}{size}", flush=True)
        lo, hi = min(args.items), max(args.items)
        if hi > lo:
            print(f"\npeak at {hi:,} items over peak at {lo:,} (target <= {RATIO_TARGET}x for sizes 10x apart):")
            for (kind, c), by in peaks.items():
                if lo in by and hi in by:
                    ratio = by[hi] / by[lo]
                    miss = hi >= 10 * lo and ratio > RATIO_TARGET
                    failed |= miss and kind == "structured"
                    slope = (by[hi] - by[lo]) * 1024 / (hi - lo)
                    verdict = ("MISSED" if miss else "met") if kind == "structured" else "(reference)"
                    print(f"  {kind:<12} {c:<8} {ratio:5.2f}x  {slope:6.2f} KB an item  {verdict}")
        print("\nCPU per item, conversation items over plain GSM8K-like items (same N, same run; no target):")
        for n in sorted(args.items):
            for c in COMMANDS:
                if ("structured", c, n) in cpu and ("plain", c, n) in cpu:
                    ratio = cpu["structured", c, n] / cpu["plain", c, n]
                    print(f"  {c:<8} {n:>9,}  {ratio:5.2f}x")
    finally:
        if args.keep:
            print(f"files kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
