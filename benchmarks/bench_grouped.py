"""Grouped criteria on the embedded model: MT-Bench's rubric with its LLM
criteria asked one call each (examples/mt_bench/rubric.rbg) against the same
rubric with five of them answered by one call (rubric_grouped.rbg), on one
embedded llama.cpp server, over the first `--items` MT-Bench items.

Both graphs judge the same items through the real path (`Interpreter` and
`LLMBackend`, no call cache, so every request is a call), taking turns a few
items at a time in alternating order, so machine load and the server's
prompt cache favour neither. For each: calls per verdict, prompt tokens the
server evaluated per verdict (llama.cpp's `timings.prompt_n`: what its
prompt cache did not already hold), unreadable judgments (failed after every
re-ask) and verdicts per minute. Then per-criterion agreement of the two
(the share of (item, criterion) values that are equal) and verdict flips.

Targets, grouped against ungrouped in the same run: calls per verdict at
most the groups' (one per group, plus one per ungrouped LLM criterion that
can be asked: `matches_reference` on items with a reference); prompt tokens
evaluated per verdict at most 0.4x; no unreadable judgment; verdicts per
minute at least 3x. Exit status 1 when a target is missed.

`--breakdown` also prints where each graph's time went per verdict, from
llama.cpp's `timings` (prompt evaluation, generation) and the client's time
for each call (waiting: the rest, mostly queued for a slot).

Run: .venv/bin/python benchmarks/bench_grouped.py [--items 10] [--parallel 2] [--threads N] [--breakdown] [--json]
Needs `pip install -e '.[local]'` and `rbg model pull`. About a minute an
item on 2 busy cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from itertools import islice
from pathlib import Path
from unittest import mock

from rubriclang.checker import check_source
from rubriclang.evaluation.metrics import wilson
from rubriclang.interp.engine import Interpreter
from rubriclang.interp.items import read_items
from rubriclang.llm import client as client_module
from rubriclang.llm.backend import LLMBackend
from rubriclang.llm.client import OpenAIClient, Sampling
from rubriclang.llm.embedded import EmbeddedError, default_threads, start_embedded

ROOT = Path(__file__).resolve().parent.parent
GRAPHS = {
    "ungrouped": ROOT / "examples/mt_bench/rubric.rbg",
    "grouped": ROOT / "examples/mt_bench/rubric_grouped.rbg",
}
ITEMS = ROOT / "examples/mt_bench/items.jsonl"
CHUNK = 2  # items per turn of one graph
TARGET_TOKENS = 0.4
TARGET_SPEED = 3.0


# llama.cpp's `timings` fields summed per graph, and the client's own time.
TIMINGS = ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms")


class Evaluated:
    """Where the server's time went, from each reply's `timings` (llama.cpp's;
    a server without them counts none), for the graph judging now: prompt
    tokens evaluated (`prompt_n`, what its prompt cache did not hold) and
    their time, tokens generated and their time, and the client's time for
    the call (`latency_ms`), whose excess over the server's two is waiting
    (queued for a slot, HTTP and JSON)."""

    def __init__(self) -> None:
        self.now = ""
        self.sums: dict[str, dict[str, float]] = {}
        self._read = client_module.read_completion

    @property
    def tokens(self) -> dict[str, int]:
        return {name: int(s.get("prompt_n", 0)) for name, s in self.sums.items()}

    def read_completion(self, data, model, **extra):
        timings = data.get("timings") if isinstance(data, dict) else None
        if isinstance(timings, dict) and isinstance(timings.get("prompt_n"), int):
            sums = self.sums.setdefault(self.now, {})
            for key in TIMINGS:
                sums[key] = sums.get(key, 0) + float(timings.get(key) or 0)
            sums["client_ms"] = sums.get("client_ms", 0) + float(extra.get("latency_ms") or 0)
            sums["calls"] = sums.get("calls", 0) + 1
        return self._read(data, model, **extra)


def breakdown(sums: dict[str, float], verdicts: int, wall_s: float) -> dict:
    """Per verdict: prompt evaluation, generation and waiting, in tokens and
    milliseconds of call time (calls overlap on the slots, so the three add
    up to more than the wall-clock time a verdict took when slots > 1)."""
    prompt_ms, predicted_ms, client_ms = (sums.get(k, 0.0) for k in ("prompt_ms", "predicted_ms", "client_ms"))
    per = max(verdicts, 1)
    return {
        "calls": int(sums.get("calls", 0)),
        "prompt_tokens": round(sums.get("prompt_n", 0) / per, 1),
        "prompt_ms": round(prompt_ms / per),
        "prompt_tok_s": round(sums.get("prompt_n", 0) / prompt_ms * 1000, 1) if prompt_ms else None,
        "generated_tokens": round(sums.get("predicted_n", 0) / per, 1),
        "generation_ms": round(predicted_ms / per),
        "generation_tok_s": round(sums.get("predicted_n", 0) / predicted_ms * 1000, 1) if predicted_ms else None,
        "waiting_ms": round(max(client_ms - prompt_ms - predicted_ms, 0) / per),
        "call_ms": round(client_ms / per),
        "wall_ms": round(wall_s * 1000 / per),
    }


def load(path: Path):
    graph = check_source(path.read_text("utf-8"), str(path)).graph
    assert graph is not None, f"{path} must check clean"
    return graph


async def judge(srv, graphs: dict, items: list, parallel: int, max_tokens: int, evaluated: Evaluated) -> dict:
    client = OpenAIClient([srv.base_url], srv.model, identity=srv.identity, timeout=600)
    sampling = Sampling(max_tokens=max_tokens)
    backends = {name: LLMBackend(client, cache=None, sampling=sampling) for name in graphs}
    tally = {name: {"wall": 0.0, "results": []} for name in graphs}
    try:
        warm = LLMBackend(client, cache=None, sampling=sampling)
        await Interpreter(graphs["grouped"], [warm], concurrency=parallel).evaluate_async(items[0])
        for turn, at in enumerate(range(0, len(items), CHUNK)):
            order = list(graphs) if turn % 2 == 0 else list(graphs)[::-1]
            for name in order:
                evaluated.now = name
                started = time.perf_counter()
                interp = Interpreter(graphs[name], [backends[name]], concurrency=parallel)
                tally[name]["results"] += [r async for r in interp.run(items[at : at + CHUNK])]
                tally[name]["wall"] += time.perf_counter() - started
    finally:
        await client.aclose()
    out = {}
    for name, t in tally.items():
        results = t["results"]
        judgments = [j for r in results for per in r.judgments.values() for j in per.values()]
        usage = backends[name].usage
        verdicts = len(results)
        out[name] = {
            "verdicts": verdicts,
            "judgments": len(judgments),
            "unreadable": sum(1 for j in judgments if j.error and j.error.startswith("unreadable")),
            "calls": usage.calls,
            "calls_per_verdict": round(usage.calls / verdicts, 3),
            "prompt_tokens_sent_per_verdict": round(usage.prompt_tokens / verdicts, 1),
            "prompt_tokens_evaluated_per_verdict": round(evaluated.tokens.get(name, 0) / verdicts, 1),
            "completion_tokens_per_verdict": round(usage.completion_tokens / verdicts, 1),
            "wall_s": round(t["wall"], 2),
            "verdicts_per_min": round(verdicts / t["wall"] * 60, 2),
            "breakdown": breakdown(evaluated.sums.get(name, {}), verdicts, t["wall"]),
        }
    out["agreement"] = agreement(tally["ungrouped"]["results"], tally["grouped"]["results"])
    return out


def agreement(a: list, b: list) -> dict:
    """Per criterion, the share of items whose values are equal in both
    (over the items both judged with a value), and the verdicts that flip."""
    per: dict[str, list[int]] = {}
    flips = both = 0
    for ra, rb in zip(a, b, strict=True):
        for name, judged in ra.judgments.items():
            ja, jb = judged["response"], rb.judgments[name]["response"]
            if ja.error or jb.error:
                continue
            per.setdefault(name, []).append(int(ja.value == jb.value))
        da, db = ra.record["readout"], rb.record["readout"]
        if da["status"] == "ok" and db["status"] == "ok":
            both += 1
            flips += int(da["decision"] != db["decision"])
    return {
        "criteria": {
            name: {"agree": sum(v), "n": len(v), "rate": _rate(sum(v), len(v))} for name, v in sorted(per.items())
        },
        "verdict_flips": {"flipped": flips, "n": both, "rate": _rate(flips, both)},
    }


def _rate(k: int, n: int) -> dict | None:
    if n == 0:
        return None
    lo, hi = wilson(k, n)
    return {"value": round(k / n, 3), "low": round(lo, 3), "high": round(hi, 3)}


def expected_calls(graph, items: list) -> float:
    """Calls per verdict when every call is answered at once: one per group,
    one per other LLM criterion whose prompt the item can fill."""
    calls = 0
    for item in items:
        groups = set()
        for c in graph.criteria:
            if not c.procedure.startswith("llm."):
                continue
            if c.params.get("with_reference") and not item.reference:
                continue
            if c.group is not None:
                groups.add(c.group.name)
            else:
                calls += 1
        calls += len(groups)
    return calls / len(items)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-file", help="GGUF file (default: `rbg model path`)")
    ap.add_argument("--threads", type=int, default=None, help=f"inference threads (default here: {default_threads()})")
    ap.add_argument("--parallel", type=int, default=2, help="server slots = calls in flight (rbg run's default: 2)")
    ap.add_argument("--items", type=int, default=10, help="MT-Bench items judged by each graph")
    ap.add_argument("--max-tokens", type=int, default=512, help="max tokens per reply (rbg run's default: 512)")
    ap.add_argument(
        "--breakdown",
        action="store_true",
        help="also print where each graph's time went per verdict: prompt evaluation, generation, waiting",
    )
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()

    graphs = {name: load(path) for name, path in GRAPHS.items()}
    items = list(islice(read_items(str(ITEMS)), args.items))
    report: dict = {
        "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} usable cores, load {os.getloadavg()[0]:.2f}",
        "threads": args.threads or default_threads(),
        "parallel": args.parallel,
        "items": len(items),
    }
    evaluated = Evaluated()
    try:
        started = time.perf_counter()
        with start_embedded(args.model_file, threads=args.threads, parallel=args.parallel) as srv:
            report["startup_s"] = round(time.perf_counter() - started, 2)
            report["model"] = srv.model
            with mock.patch.object(client_module, "read_completion", evaluated.read_completion):
                report["judging"] = asyncio.run(judge(srv, graphs, items, args.parallel, args.max_tokens, evaluated))
    except EmbeddedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    old, new = report["judging"]["ungrouped"], report["judging"]["grouped"]
    expected = expected_calls(graphs["grouped"], items)
    report["ratio"] = {
        "calls_per_verdict": round(new["calls_per_verdict"] / old["calls_per_verdict"], 3),
        "prompt_tokens_evaluated_per_verdict": round(
            new["prompt_tokens_evaluated_per_verdict"] / max(old["prompt_tokens_evaluated_per_verdict"], 1e-9), 3
        ),
        "verdicts_per_min": round(new["verdicts_per_min"] / old["verdicts_per_min"], 2),
    }
    ratio = report["ratio"]
    report["targets"] = {
        "calls_per_verdict": new["calls_per_verdict"] <= expected + 1e-9,
        "prompt_tokens_evaluated": ratio["prompt_tokens_evaluated_per_verdict"] <= TARGET_TOKENS,
        "unreadable": new["unreadable"] == 0,
        "verdicts_per_min": ratio["verdicts_per_min"] >= TARGET_SPEED,
    }
    missed = [k for k, ok in report["targets"].items() if not ok]
    if args.json:
        print(json.dumps(report, indent=2))
        return 1 if missed else 0
    print(f"model {report['model']} | {report['machine']} | {report['threads']} thread(s), {args.parallel} slot(s)")
    print(f"{len(items)} MT-Bench items, each judged by both graphs, taking turns {CHUNK} items at a time:")
    for name in ("ungrouped", "grouped"):
        r = report["judging"][name]
        print(
            f"  {name:9}: {r['calls_per_verdict']:.2f} calls/verdict, "
            f"{r['prompt_tokens_evaluated_per_verdict']:.0f} prompt tokens evaluated/verdict "
            f"({r['prompt_tokens_sent_per_verdict']:.0f} sent), {r['completion_tokens_per_verdict']:.0f} generated, "
            f"{r['unreadable']} of {r['judgments']} judgments "
            f"unreadable, {r['verdicts_per_min']:.2f} verdicts/min ({r['verdicts']} in {r['wall_s']} s)"
        )
    print(
        f"grouped / ungrouped: calls {ratio['calls_per_verdict']}x (target: at most {expected:.2f} a verdict, one per "
        "group and per other criterion asked), prompt tokens evaluated "
        f"{ratio['prompt_tokens_evaluated_per_verdict']}x "
        f"(target <= {TARGET_TOKENS}x), verdicts/min {ratio['verdicts_per_min']}x (target >= {TARGET_SPEED}x), "
        f"unreadable {new['unreadable']} (target 0)"
    )
    if args.breakdown:
        print(f"where the time went, per verdict (model start {report['startup_s']} s, once):")
        for name in ("ungrouped", "grouped"):
            b = report["judging"][name]["breakdown"]
            print(
                f"  {name:9}: prompt evaluation {b['prompt_ms']} ms ({b['prompt_tokens']:.0f} tokens, "
                f"{b['prompt_tok_s']} tok/s), generation {b['generation_ms']} ms ({b['generated_tokens']:.0f} tokens, "
                f"{b['generation_tok_s']} tok/s), waiting {b['waiting_ms']} ms; call time {b['call_ms']} ms "
                f"in {b['calls']} calls, wall {b['wall_ms']} ms"
            )
    agree = report["judging"]["agreement"]
    for name, a in agree["criteria"].items():
        rate = a["rate"]
        shown = "n/a" if rate is None else f"{rate['value']:.3f} [{rate['low']:.3f}, {rate['high']:.3f}]"
        print(f"  agreement `{name}`: {a['agree']} of {a['n']} equal, {shown}")
    flips = agree["verdict_flips"]
    shown = "n/a" if flips["rate"] is None else f"{flips['rate']['value']:.3f}"
    print(f"  verdict flips: {flips['flipped']} of {flips['n']} ({shown})")
    print("PASS" if not missed else f"FAIL: {', '.join(missed)}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
