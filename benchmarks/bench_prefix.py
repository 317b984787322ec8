"""Prompt tokens a llama.cpp server really evaluates per judgment, when an
item's criteria share their prompt's prefix (issue 13, item 1).

The built-in prompts (version 2) put everything that does not depend on the
criterion first (system message, task, response, reference), so the six
criteria of one candidate share a long prefix. A llama.cpp server reuses the
prompt cached in a slot only up to where a new prompt differs from it, so the
prefix is evaluated once per item only if the item's calls reach one slot
one after another. `rbg` sends each call with its affinity (the item and
candidate): to a llama.cpp server (the embedded one) it sends `id_slot`, the
affinities taking the slots in turn, and `cache_prompt`.

One run of the embedded server (SmolLM2-135M, `--parallel` slots, as `rbg
run` starts it) judges `--items` items on a 6-criterion graph through the
real judgment path (`Interpreter` + `LLMBackend`, no call cache, `rbg run`'s
default of 8 calls in flight), a quarter of the items at a time, in turns:
with slot affinity (what `rbg` does) and without (the client as it was: the
server picks a slot by itself), each schedule on its own items. The figure, from the server's own `timings` of
every response (`prompt_n`, the prompt tokens it evaluated, after reusing its
cache): prompt tokens evaluated per item. The reference, in the same run, from
the server's own tokenizer (`/apply-template`, `/tokenize`) on each item's six
rendered prompts: the tokens one shared prefix plus each criterion's suffix
need (the longest common token prefix of the six, plus what follows it in
each). Target: at most 1.3x the reference. The full prompts' tokens (what a
server without a prompt cache evaluates) are shown beside them.

Run: .venv/bin/python benchmarks/bench_prefix.py [--items 12] [--parallel 2] [--json]
Needs `pip install -e '.[local]'` and `rbg model pull`; a few minutes on 2 cores.
Exit status 0 when the target is met.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys

import attrs
import bench_embedded  # this folder is on sys.path when the script runs
import httpx

from rubriclang.checker import check_source
from rubriclang.interp.engine import Interpreter
from rubriclang.interp.items import Item
from rubriclang.llm.backend import LLMBackend
from rubriclang.llm.client import OpenAIClient, Sampling
from rubriclang.llm.embedded import EmbeddedError, start_embedded
from rubriclang.llm.prompting import render

# bench_embedded's five criteria and a sixth, so six calls share each prefix.
GRAPH = bench_embedded.GRAPH.replace(
    "node sized",
    'criterion tone: label{formal, neutral, casual} = llm.choose { question = "What is the tone of the response?" }\n'
    "node sized",
    1,
)
ITEMS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "mt_bench", "items.jsonl")
CONCURRENCY = 8  # rbg run's default --concurrency
SCHEDULES = ("affinity", "server-picked")


def load_items(n: int) -> list[Item]:
    """The first `n` MT-Bench items with a response (question, answer, reference)."""
    out = []
    with open(ITEMS_FILE, encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            if d.get("response"):
                out.append(
                    Item(
                        id=d["id"],
                        input=d["input"],
                        candidates={"response": d["response"]},
                        reference=d.get("reference"),
                    )
                )
            if len(out) == n:
                break
    return out


def reference_tokens(http: httpx.Client, base: str, graph, item: Item) -> tuple[int, int, int]:
    """(shared prefix, sum of suffixes, sum of full prompts) in the server's
    own tokens, for the item's prompts of every criterion."""
    prompts = []
    for crit in graph.criteria:
        messages = list(render(crit, item, "response").request.messages)
        text = http.post(base + "/apply-template", json={"messages": messages}).json()["prompt"]
        prompts.append(http.post(base + "/tokenize", json={"content": text, "add_special": True}).json()["tokens"])
    prefix = 0
    while all(len(p) > prefix and p[prefix] == prompts[0][prefix] for p in prompts):
        prefix += 1
    return prefix, sum(len(p) - prefix for p in prompts), sum(len(p) for p in prompts)


async def judge(srv, graph, items: list[Item], affinity: bool, evaluated: list[int]) -> list:
    """Judge `items`, appending each response's `timings.prompt_n` to `evaluated`."""
    client = OpenAIClient(
        [srv.base_url], srv.model, identity=srv.identity, timeout=600, slots=srv.parallel if affinity else None
    )
    fetch = client._fetch

    async def spy(ep, method, path, body=None, **kw):  # the server's timings, which the client does not keep
        answer = await fetch(ep, method, path, body, **kw)
        if path == "/chat/completions" and answer.status_code == 200:
            evaluated.append(json.loads(answer.content)["timings"]["prompt_n"])
        return answer

    client._fetch = spy
    backend = LLMBackend(client, cache=None, sampling=Sampling(max_tokens=512))
    try:
        return [r async for r in Interpreter(graph, [backend], CONCURRENCY).run(items)]
    finally:
        await backend.aclose()


async def measure(args) -> dict:
    graph = check_source(GRAPH, "bench_prefix.rbg").graph
    assert graph is not None
    items = load_items(args.items)
    with start_embedded(args.model_file, parallel=args.parallel) as srv:
        with httpx.Client(timeout=60, trust_env=False) as http:
            refs = [reference_tokens(http, srv.base_url, graph, item) for item in items]
        tally = {
            s: {"evaluated": [], "items": 0, "calls": 0, "failed": 0, "prefix": 0, "suffixes": 0, "full": 0}
            for s in SCHEDULES
        }
        await judge(srv, graph, [attrs.evolve(items[0], id="warmup")], True, [])  # untimed: loads the server
        # Quarters of the items, taking turns: each schedule judges its own
        # items, so neither finds the other's prompts in the server's cache.
        quarter = max(1, len(items) // 4)
        for turn, at in enumerate(range(0, len(items), quarter)):
            schedule = SCHEDULES[turn % 2]
            t = tally[schedule]
            before = len(t["evaluated"])
            results = await judge(srv, graph, items[at : at + quarter], schedule == "affinity", t["evaluated"])
            t["items"] += len(results)
            t["calls"] += len(t["evaluated"]) - before
            t["failed"] += sum(1 for r in results for per in r.judgments.values() for j in per.values() if j.error)
            for prefix, suffixes, full in refs[at : at + quarter]:
                t["prefix"] += prefix
                t["suffixes"] += suffixes
                t["full"] += full
    out = {
        "items": len(items),
        "criteria": len(graph.criteria),
        "parallel": args.parallel,
        "concurrency": CONCURRENCY,
        "load_average": os.getloadavg(),
    }
    for schedule, t in tally.items():
        ideal = t["prefix"] + t["suffixes"]
        out[schedule] = {
            "items": t["items"],
            "calls": t["calls"],
            "failed_judgments": t["failed"],
            "evaluated_per_item": sum(t["evaluated"]) / t["items"],
            "evaluated_per_judgment": sum(t["evaluated"]) / (t["items"] * len(graph.criteria)),
            "reference_per_item": ideal / t["items"],
            "prefix_per_item": t["prefix"] / t["items"],
            "full_prompts_per_item": t["full"] / t["items"],
            "ratio": sum(t["evaluated"]) / ideal,
        }
    return out


def report(m: dict) -> tuple[str, bool]:
    lines = [
        f"{m['items']} MT-Bench items x {m['criteria']} criteria, embedded SmolLM2 with {m['parallel']} slots,"
        f" {m['concurrency']} calls in flight; load average {m['load_average'][0]:.1f}",
        "",
        f"{'schedule':14s} {'evaluated/item':>15s} {'per judgment':>13s} {'reference/item':>15s} {'ratio':>7s} "
        f"{'full prompts/item':>18s} {'calls':>6s} {'failed':>7s}",
    ]
    for s in SCHEDULES:
        r = m[s]
        lines.append(
            f"{s:14s} {r['evaluated_per_item']:15.1f} {r['evaluated_per_judgment']:13.1f} "
            f"{r['reference_per_item']:15.1f}"
            f" {r['ratio']:6.2f}x {r['full_prompts_per_item']:18.1f} {r['calls']:6d} {r['failed_judgments']:7d}"
        )
    ok = m["affinity"]["ratio"] <= 1.3
    lines += [
        "",
        f"reference = shared prefix ({m['affinity']['prefix_per_item']:.1f} tokens per item) + each criterion's suffix;"
        " evaluated = sum of the server's timings.prompt_n (calls include any retries after an unreadable reply).",
        f"target: affinity ratio <= 1.3x: {'PASS' if ok else 'FAIL'}",
    ]
    return "\n".join(lines), ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-file", help="GGUF file (default: `rbg model path`)")
    ap.add_argument("--parallel", type=int, default=2, help="server slots (rbg run's default: 2)")
    ap.add_argument(
        "--items", type=int, default=12, help="items judged, half with each schedule (a quarter at a time, in turns)"
    )
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    try:
        m = asyncio.run(measure(args))
    except EmbeddedError as exc:
        print(f"bench_prefix: {exc}", file=sys.stderr)
        return 2
    text, ok = report(m)
    print(json.dumps(m, indent=2) if args.json else text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
