"""Speed of the embedded local model on this machine.

1. Raw server speed: one request to the embedded llama.cpp server, read from
   the server's own `timings` (prompt tokens/s, generated tokens/s), with and
   without a JSON-schema response format (constrained decoding has a cost).
2. Judgments per minute through the real judgment path: 10 items x 2
   `llm.rate` criteria = 20 judgments, rendered, sent, parsed and composed by
   the interpreter with `LLMBackend` (no call cache, so every judgment is a
   call), once per `--parallel` setting (server slots = criterion calls in
   flight). One untimed judgment first warms the server. Judgments per
   CPU-minute (the process's CPU time, server threads included) are shown
   too: on a busy machine they estimate what an idle core would do, which
   wall-clock figures cannot.

Run: .venv/bin/python benchmarks/bench_embedded.py [--parallel 1,2] [--threads N] [--json]
Needs `pip install -e '.[local]'` and `rbg model pull`. Takes about a minute
on 2 cores. The figures depend on load: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import sys
import time

import httpx

from rubriclang.checker import check_source
from rubriclang.interp.engine import Interpreter
from rubriclang.interp.items import Item
from rubriclang.llm.backend import LLMBackend
from rubriclang.llm.client import OpenAIClient, Sampling
from rubriclang.llm.embedded import EmbeddedError, default_threads, start_embedded

GRAPH = """rubric bench_embedded { version = 1 }
contract { scale = score[1, 5] }
criterion correct: ordinal[1, 5] = llm.rate {
  question = "How factually correct is the response?"
  anchors = { 1: "Mostly wrong.", 5: "Fully correct." }
}
criterion clear: ordinal[1, 5] = llm.rate {
  question = "How clear and well organised is the response?"
  anchors = { 1: "Confusing.", 5: "Clear and well organised." }
}
node quality = reduce.mean(inputs: [correct, clear])
sink quality
readout pointwise { output = ordinal[1, 5] }
"""

QA = [
    ("What is the boiling point of water at sea level?", "Water boils at 100 degrees Celsius (212 F) at sea level."),
    ("Who wrote 'Pride and Prejudice'?", "It was written by Charlotte Bronte in 1813."),
    ("What is the capital of Australia?", "The capital of Australia is Canberra, not Sydney as many people think."),
    ("How many legs does a spider have?", "Spiders have six legs, like all insects."),
    ("Explain what photosynthesis is in one sentence.", "Photosynthesis is how plants use light, water and CO2 to make sugar and release oxygen."),
    ("What is 12 times 12?", "12 times 12 is 144."),
    ("Why is the sky blue?", "Because the ocean reflects onto it."),
    ("Name the largest planet in the Solar System.", "Jupiter is the largest planet; it is a gas giant more massive than all others combined."),
    ("What does HTTP stand for?", "HyperText Transfer Protocol, the protocol web browsers use to fetch pages."),
    ("Translate 'thank you' into French.", "Merci. You can also say 'merci beaucoup' for 'thank you very much'."),
]
WARMUP = Item("warmup", "What colour is grass?", {"response": "Grass is green."})
SCHEMA = {"type": "object", "properties": {"score": {"type": "integer", "enum": [1, 2, 3, 4, 5]}}, "required": ["score"]}


def cpu_seconds() -> float:
    """CPU time of this whole process (server threads included)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def raw_speed(base_url: str, model: str, structured: bool) -> dict:
    """The server's own timings for one ~300-token prompt, 64 tokens out."""
    prompt = "Summarise the following notes.\n" + "\n".join(f"- {q} {a}" for q, a in QA)
    body = {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": 64,
        "temperature": 0,
        "seed": 0,
        # Every run of the benchmark measures prompt processing, not the
        # server's prompt cache.
        "cache_prompt": False,
    }
    if structured:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "s", "schema": SCHEMA}}
    with httpx.Client(timeout=120, trust_env=False) as http:
        t = http.post(base_url + "/v1/chat/completions", json=body).json()["timings"]
    return {
        "prompt_tokens": t["prompt_n"],
        "prompt_tok_s": round(t["prompt_per_second"], 1),
        "completion_tokens": t["predicted_n"],
        "completion_tok_s": round(t["predicted_per_second"], 1),
    }


async def judge_all(srv, graph, parallel: int, max_tokens: int) -> dict:
    client = OpenAIClient([srv.base_url], srv.model, identity=srv.identity, timeout=300)
    backend = LLMBackend(client, cache=None, sampling=Sampling(max_tokens=max_tokens))
    try:
        await Interpreter(graph, [backend], concurrency=parallel).evaluate_async(WARMUP)
        backend.usage.calls = backend.usage.prompt_tokens = backend.usage.completion_tokens = 0
        items = [Item(f"q{i}", q, {"response": a}) for i, (q, a) in enumerate(QA)]
        cpu0, started = cpu_seconds(), time.perf_counter()
        results = [r async for r in Interpreter(graph, [backend], concurrency=parallel).run(items)]
        wall, cpu = time.perf_counter() - started, cpu_seconds() - cpu0
    finally:
        await backend.aclose()
    judgments = [j for r in results for per in r.judgments.values() for j in per.values()]
    failed = [j.error for j in judgments if j.error]
    u = backend.usage
    return {
        "parallel": parallel,
        "judgments": len(judgments),
        "failed": len(failed),
        "first_failure": failed[0] if failed else None,
        "calls": u.calls,
        "wall_s": round(wall, 2),
        "judgments_per_min": round(len(judgments) / wall * 60, 1),
        "cpu_s": round(cpu, 2),
        "judgments_per_cpu_min": round(len(judgments) / cpu * 60, 1),
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "prompt_tok_s": round(u.prompt_tokens / wall, 1),
        "completion_tok_s": round(u.completion_tokens / wall, 1),
        "mean_prompt_tokens": round(u.prompt_tokens / max(1, u.calls)),
        "mean_completion_tokens": round(u.completion_tokens / max(1, u.calls)),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-file", help="GGUF file (default: `rbg model path`)")
    ap.add_argument("--threads", type=int, default=None, help=f"inference threads (default here: {default_threads()})")
    ap.add_argument("--parallel", default="1,2", help="comma-separated server slot counts to measure")
    ap.add_argument("--max-tokens", type=int, default=160, help="max tokens per judgment reply")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()

    graph = check_source(GRAPH, "bench_embedded.rbg").graph
    assert graph is not None, "the benchmark graph must check clean"
    report = {
        "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} usable cores, load {os.getloadavg()[0]:.2f}",
        "threads": args.threads or default_threads(),
        "raw": {},
        "judging": [],
    }
    try:
        for parallel in (int(p) for p in args.parallel.split(",")):
            started = time.perf_counter()
            with start_embedded(args.model_file, threads=args.threads, parallel=parallel) as srv:
                startup = time.perf_counter() - started
                report.setdefault("startup_s", round(startup, 2))
                report.setdefault("model", srv.model)
                if not report["raw"]:
                    report["raw"] = {
                        "free": raw_speed(srv.base_url, srv.model, False),
                        "json_schema": raw_speed(srv.base_url, srv.model, True),
                    }
                report["judging"].append(asyncio.run(judge_all(srv, graph, parallel, args.max_tokens)))
    except EmbeddedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    # ru_maxrss is in KiB on Linux: the whole process, model and KV cache included.
    report["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)

    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"model {report['model']} | {report['machine']} | {report['threads']} inference thread(s)")
    print(f"startup {report['startup_s']} s (load + first /health) | peak RSS {report['peak_rss_mb']} MB")
    for name, r in report["raw"].items():
        print(
            f"raw ({name:11}): prompt {r['prompt_tok_s']:7.1f} tok/s ({r['prompt_tokens']} tokens), "
            f"generation {r['completion_tok_s']:6.1f} tok/s ({r['completion_tokens']} tokens)"
        )
    for r in report["judging"]:
        print(
            f"judging, {r['parallel']} slot(s): {r['judgments_per_min']:6.1f} judgments/min "
            f"({r['judgments']} in {r['wall_s']} s, {r['failed']} failed; "
            f"{r['judgments_per_cpu_min']} per CPU-minute); "
            f"{r['prompt_tok_s']} prompt tok/s, {r['completion_tok_s']} completion tok/s; "
            f"mean {r['mean_prompt_tokens']} prompt + {r['mean_completion_tokens']} completion tokens per call"
        )
        if r["first_failure"]:
            print(f"  first failure: {r['first_failure'][:200]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
