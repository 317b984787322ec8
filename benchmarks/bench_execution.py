"""Execution benchmarks, measured in one run and printed against references.

1. Replay of 100,000 recorded items through a 12-node graph (6 criteria,
   6 operators), against a hand-written Python function computing the same
   composition. Target: at most 3x slower. Measured end to end (reading the
   trace file, as `rbg replay` does, against a hand-written loop reading the
   same file) and for the composition alone (both sides from the same
   in-memory judgments, both returning the decision: `Composer.decide`,
   as replays and verdict diffs use it), so the ratio is shown with and
   without I/O; beside it, for reference, `Composer.compose`, which also
   keeps every node's value of every item (for traces). Each
   side is timed --repeat times, taking turns, in CPU time of the process,
   and its fastest pass counts, so that a burst of load on a shared machine
   hits neither side alone.
2. Memory: peak RSS of `rbg run` over 100,000 items (streaming; target under
   150 MB), against the peak RSS of `rbg check` (the interpreter's floor).

Run: .venv/bin/python benchmarks/bench_execution.py [--items N] [--repeat R]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

import rubriclang
from rubriclang.interp.backend import Judgment
from rubriclang.interp.compose import Composer

GRAPH = """rubric bench { version = 1 }
contract { scale = score[1, 5] }
criterion correct: ordinal[1, 5] = recorded.value { key = "correct" }
criterion complete: ordinal[1, 5] = recorded.value { key = "complete" }
criterion clear: ordinal[1, 5] = recorded.value { key = "clear" }
criterion grounded: score[0, 1] = recorded.value { key = "grounded" }
criterion harmful: bool = recorded.value { key = "harmful" }
criterion rambling: bool = recorded.value { key = "rambling" }
node grounded5 = transform.rescale(value: grounded) { to = score[1, 5] }
node core = reduce.weighted_mean(inputs: [correct, complete, grounded5]) { weights = [3, 2, 1] }
node quality = reduce.mean(inputs: [core, clear])
node weakest = reduce.min(inputs: [quality, correct])
node concise = gate.cap(value: weakest, when: rambling) { max = 4 }
node safe = gate.veto(value: concise, when: harmful) { to = 1 }
sink safe
readout pointwise { output = ordinal[1, 5] }
"""


def by_hand(v: dict) -> tuple[str, int | None]:
    """The same composition, written directly."""
    grounded5 = 1 + v["grounded"] * 4
    core = (3 * v["correct"] + 2 * v["complete"] + grounded5) / 6
    quality = (core + v["clear"]) / 2
    weakest = min(quality, v["correct"])
    concise = min(weakest, 4) if v["rambling"] else weakest
    safe = 1 if v["harmful"] else concise
    return "ok", int(safe + 0.5)


def judgments(n: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        out.append(
            {
                "correct": rng.randint(1, 5),
                "complete": rng.randint(1, 5),
                "clear": rng.randint(1, 5),
                "grounded": round(rng.random(), 3),
                "harmful": rng.random() < 0.05,
                "rambling": rng.random() < 0.2,
            }
        )
    return out


def hand_replay(path: str) -> list[tuple[str, int | None]]:
    """A hand-written replay of the same trace file: parse, compose, read out."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            v = {k: j["response"]["value"] for k, j in rec["criteria"].items()}
            out.append(by_hand(v))
    return out


def _fastest(repeat: int, *fns):
    """Each function's fastest time over `repeat` passes (taking turns) and its last result."""
    times, results = [float("inf")] * len(fns), [None] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.process_time()
            results[i] = fn()
            times[i] = min(times[i], time.process_time() - t0)
    return times, results


def bench_replay(n: int, repeat: int) -> None:
    from rubriclang.interp.items import item_from_json
    from rubriclang.interp.replay import replay
    from rubriclang.interp.trace import Tracer, TraceWriter

    graph = rubriclang.loads(GRAPH).graph
    composer = Composer(graph)
    values = judgments(n)
    recorded = [{k: {"response": Judgment(x)} for k, x in v.items()} for v in values]
    cids = ("response",)

    # Composition alone: both sides start from the same in-memory judgments.
    # The hand-written function returns the decision, as `decide` does (what
    # `rbg replay` and `rbg diff` ask for); `compose` also keeps every node's
    # value of every item (what `rbg run` writes into traces).
    (t_ours, t_hand, t_kept), (ours, theirs, kept) = _fastest(
        repeat,
        lambda: [composer.decide("pointwise", cids, j) for j in recorded],
        lambda: [by_hand(v) for v in values],
        lambda: [composer.compose("pointwise", cids, j).decision for j in recorded],
    )
    assert [(d.status, d.decision) for d in ours] == theirs, "the interpreter and the hand-written function disagree"
    assert kept == ours, "compose and decide disagree"

    # End to end, as `rbg replay` runs: read the trace file, recompose, compare.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "traces.jsonl")
        writer = TraceWriter(path)
        tracer = Tracer(graph)
        for i, (_v, j) in enumerate(zip(values, recorded, strict=True)):
            item = item_from_json({"id": i, "input": "q", "response": "a"}, "bench")
            writer.write(tracer.record(item, "pointwise", j, composer.compose("pointwise", cids, j)))
        writer.close()
        (t_replay, t_hand_file), (replayed, by_hand_file) = _fastest(
            repeat, lambda: [r.new for r in replay(graph, path, values=False)], lambda: hand_replay(path)
        )
    assert [(d.status, d.decision) for d in replayed] == by_hand_file

    print(f"replay, {n:,} items, 12-node graph (6 criteria, 6 operators)")
    print(f"  {'':36}{'rubriclang':>12}{'by hand':>12}{'ratio':>8}   target <= 3x")
    for label, a, b, target in (
        ("end to end (read traces, replay)", t_replay, t_hand_file, True),
        ("composition + readout only", t_ours, t_hand, True),
        ("  the same, every node's value kept", t_kept, t_hand, False),
    ):
        ratio = a / b
        verdict = ("PASS" if ratio <= 3 else "FAIL") if target else "(rbg run's compose: no target)"
        print(f"  {label:<36}{a:>10.3f} s{b:>10.3f} s{ratio:>7.2f}x   {verdict}")
    print(f"  replay throughput: {n / t_replay:,.0f} items/s")


def _peak_rss_mb(cmd: list[str]) -> tuple[float, float]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)",
            *cmd,
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(proc.stdout.strip()) / 1024, time.perf_counter() - t0


def bench_memory(n: int) -> None:
    rbg = os.path.join(os.path.dirname(sys.executable), "rbg")
    with tempfile.TemporaryDirectory() as tmp:
        g = os.path.join(tmp, "g.rbg")
        with open(g, "w") as fh:
            fh.write(GRAPH)
        items = os.path.join(tmp, "items.jsonl")
        with open(items, "w") as fh:
            for i, v in enumerate(judgments(n, seed=3)):
                fh.write(json.dumps({"id": i, "input": "q", "response": "a", "recorded": v}) + "\n")
        floor, _ = _peak_rss_mb([rbg, "check", g])
        peak, secs = _peak_rss_mb([rbg, "run", g, items, "--out", os.path.join(tmp, "t.jsonl"), "--concurrency", "64"])
    print(f"rbg run, {n:,} items (streaming)")
    print(f"  peak RSS                         {peak:8.1f} MB   target < 150 MB: {'PASS' if peak < 150 else 'FAIL'}")
    print(f"  peak RSS of `rbg check` (floor)  {floor:8.1f} MB")
    print(f"  wall time                        {secs:8.1f} s    {n / secs:10,.0f} items/s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3, help="passes per side; the fastest counts")
    args = ap.parse_args()
    bench_replay(args.items, args.repeat)
    bench_memory(args.items)


if __name__ == "__main__":
    main()
