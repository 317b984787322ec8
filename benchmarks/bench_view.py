"""`rbg view` over a large trace, measured in one run against a reference.

A trace of N items (default 100,000) is made by copying one real record with
new ids, decisions and gold labels. Measured:
1. loading the table (`TraceTable`: `read_traces` checks every record, and
   one summary row per item is kept), against the reference: reading the same
   file with `json.loads` per line and nothing else;
2. one page of the items view for typical queries (first page; a filter;
   a sort, first time and cached; a text search; the last page), each
   against the reference read. Target: every query under 5% of the
   reference, except a sort's first use (it is then kept): under 25%.

Run: .venv/bin/python benchmarks/bench_view.py [--items N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time

from rubriclang.canonical import canonical_json
from rubriclang.view.table import Query, TraceTable

RECORD = {
    "schema": "rubriclang.trace/1",
    "item": "x",
    "graph": {"name": "bench", "hash": "sha256:" + "0" * 64, "criteria": {"a": "0" * 16, "b": "1" * 16}},
    "mode": "pointwise",
    "contract": {"scale": "score[1, 5]"},
    "candidates": ["response"],
    "criteria": {
        name: {
            "response": {
                "value": 3,
                "raw": "Some reply text from a model. " * 4,
                "error": None,
                "procedure": "llm.rate",
                "backend": "openai",
                "model": "m",
                "prompt_hash": "h",
                "attempts": 1,
                "latency_ms": 10.0,
            }
        }
        for name in ("a", "b")
    },
    "criterion_errors": {},
    "operators": {"mean": {"response": 3.0}},
    "sink": {"response": 3.0},
    "readout": {"status": "ok", "decision": 3, "raw": 3.0, "margin": None, "error": None},
    "gold": 3,
}


def make(path: str, n: int) -> None:
    rng = random.Random(7)
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            rec = json.loads(json.dumps(RECORD))
            rec["item"] = f"item-{i:06d}"
            d = rng.randint(1, 5)
            rec["readout"].update(decision=d, raw=float(d))
            rec["gold"] = rng.randint(1, 5)
            if i % 97 == 0:
                rec["readout"] = {
                    "status": "error",
                    "decision": None,
                    "raw": None,
                    "margin": None,
                    "error": "criterion `a` failed",
                }
            fh.write(canonical_json(rec) + "\n")


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=100_000)
    n = ap.parse_args().items
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "traces.jsonl")
        make(path, n)

        def reference():
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    json.loads(line)

        ref = min(timed(reference) for _ in range(3))
        holder = {}
        load = timed(lambda: holder.setdefault("t", TraceTable(path)))
        table = holder["t"]
        print(f"{n} items; reference (json.loads of every line): {ref * 1000:.0f} ms")
        print(f"load the table: {load * 1000:.0f} ms ({load / ref:.2f}x the reference)")
        queries = [
            ("first page", Query()),
            ("errors", Query(status="error")),
            ("disagree with gold", Query(disagree=True)),
            ("sort by gold (first time)", Query(sort="gold")),
            ("sort by gold (again)", Query(sort="gold", desc=True, page=7)),
            ("decision in [2, 3]", Query(low=2, high=3)),
            ("text search", Query(text="item-0999")),
            ("last page", Query(page=10**9)),
        ]
        worst = first = 0.0
        for name, q in queries:
            t = timed(lambda q=q: table.query(q))
            if "first time" in name:
                first = t / ref
            else:
                worst = max(worst, t / ref)
            print(f"  {name:28s} {t * 1000:8.1f} ms ({100 * t / ref:5.1f}% of the reference)")
        record = timed(lambda: table.record(f"item-{n - 1:06d}"))
        print(f"  one item's full record       {record * 1000:8.2f} ms")
        out = os.path.join(tmp, "export")
        from rubriclang.view.export import export
        from rubriclang.view.sources import Sources, TraceSource

        pages = {}
        took = timed(lambda: pages.setdefault("n", export(Sources(traces=[TraceSource("traces.jsonl", table)]), out)))
        files = [os.path.join(d, f) for d, _, fs in os.walk(out) for f in fs]
        rows = max((f for f in files if "/data/" in f), key=os.path.getsize)
        print(
            f"export: {took:.1f} s ({took / ref:.1f}x the reference), {pages['n']} pages, {len(files)} files, "
            f"{sum(map(os.path.getsize, files)) / 1e6:.1f} MB; rows file {os.path.getsize(rows) / 1e6:.1f} MB"
        )
        ok = worst < 0.05 and first < 0.25
        print(
            f"target: queries under 5% of the reference, a first sort under 25%: {'met' if ok else 'MISSED'} "
            f"(worst {100 * worst:.1f}%, first sort {100 * first:.1f}%)"
        )
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
