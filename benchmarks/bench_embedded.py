"""Speed of the embedded local model on this machine.

1. Raw server speed: one request to the embedded llama.cpp server, read from
   the server's own `timings` (prompt tokens/s, generated tokens/s), with and
   without a JSON-schema response format (constrained decoding has a cost).
2. Judgments per minute through the real judgment path, old and new built-in
   prompts side by side on one server: `--items` items (20) x 5 criteria
   (`llm.rate` x2, `llm.check` x2, `llm.choose`) = 100 judgments per prompt
   version, rendered, sent, parsed and composed by the interpreter with
   `LLMBackend` (no call cache, so every judgment is a call), at the reply
   limit `rbg run` uses by default (`--max-tokens` 512). Version 1 of the
   built-in templates asks for the reason first, unbounded; version 2 (the
   current one) for the answer first and a reason of at most 200 characters.
   The two versions take turns, a few items at a time and in alternating
   order, so machine load and the server's prompt cache favour neither. For
   each: judgments per minute, per CPU-minute (the process's CPU time, server
   threads included: on a busy machine they estimate what an idle core would
   do, which wall-clock figures cannot), unreadable replies (judgments that
   failed after every retry) and nudges (replies that needed a retry). The
   ratios v2/v1 are the figures; targets: zero unreadable, at least 2x the
   judgments per minute. One untimed judgment first warms the server.

Run: .venv/bin/python benchmarks/bench_embedded.py [--items 20] [--parallel 2] [--threads N] [--json]
Needs `pip install -e '.[local]'` and `rbg model pull`. Takes about ten
minutes on 2 cores. The figures depend on load: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import resource
import sys
import time
from unittest import mock

import httpx

from rubriclang.checker import check_source
from rubriclang.interp.engine import Interpreter
from rubriclang.interp.items import Item
from rubriclang.llm import prompting
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
criterion off_topic: bool = llm.check { question = "Does the response fail to answer the question that was asked?" }
criterion rude: bool = llm.check { question = "Is the response rude?" }
criterion length: label{short, right, long} = llm.choose {
  question = "How long is the response for the question?"
  descriptions = { short: "Too short to be useful.", right: "About right.", long: "Longer than it needs to be." }
}
node sized = transform.map(value: length) { values = { short: 2, right: 5, long: 3 } }
node rated = reduce.mean(inputs: [correct, clear, sized])
node capped = gate.cap(value: rated, when: off_topic) { max = 2 }
node quality = gate.cap(value: capped, when: rude) { max = 1 }
sink quality
readout pointwise { output = ordinal[1, 5] }
"""

QA = [
    ("What is the boiling point of water at sea level?", "Water boils at 100 degrees Celsius (212 F) at sea level."),
    ("Who wrote 'Pride and Prejudice'?", "It was written by Charlotte Bronte in 1813."),
    ("What is the capital of Australia?", "The capital of Australia is Canberra, not Sydney as many people think."),
    ("How many legs does a spider have?", "Spiders have six legs, like all insects."),
    (
        "Explain what photosynthesis is in one sentence.",
        "Photosynthesis is how plants use light, water and CO2 to make sugar and release oxygen.",
    ),
    ("What is 12 times 12?", "12 times 12 is 144."),
    ("Why is the sky blue?", "Because the ocean reflects onto it."),
    (
        "Name the largest planet in the Solar System.",
        "Jupiter is the largest planet; it is a gas giant more massive than all others combined.",
    ),
    ("What does HTTP stand for?", "HyperText Transfer Protocol, the protocol web browsers use to fetch pages."),
    ("Translate 'thank you' into French.", "Merci. You can also say 'merci beaucoup' for 'thank you very much'."),
    ("What is the chemical symbol for gold?", "Au, from the Latin word aurum."),
    ("How many continents are there?", "There are five continents: Asia, Africa, Europe, America and Antarctica."),
    ("Who painted the Mona Lisa?", "Leonardo da Vinci painted it in the early 16th century."),
    ("What is the square root of 81?", "The square root of 81 is 8."),
    ("What gas do humans exhale?", "Mostly nitrogen, plus carbon dioxide, which is the gas our bodies produce."),
    ("In which year did World War II end?", "World War II ended in 1945."),
    ("What is the longest river in the world?", "Honestly I would not know, you should look it up yourself."),
    (
        "How do I reverse a list in Python?",
        "Use my_list.reverse() to reverse in place, or my_list[::-1] for a reversed copy.",
    ),
    ("What is the freezing point of water in Fahrenheit?", "32 degrees Fahrenheit."),
    (
        "Give a synonym for 'happy'.",
        "Joyful. Other options are glad, cheerful and content, depending on the tone you want.",
    ),
]
# The built-in templates as they were before version 2: reason first, unbounded.
_V2 = prompting.builtin_prompt
V1 = {"builtin_prompt": lambda p: (_V2(p)[0].replace(".v2", ".v1"), _V2(p)[1]), "COMPARE_RATINGS": "compare_ratings.v1"}
VERSIONS = {"v1": V1, "v2": {}}
CHUNK = 4  # items per turn of one version
WARMUP = Item("warmup", "What colour is grass?", {"response": "Grass is green."})
SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer", "enum": [1, 2, 3, 4, 5]}},
    "required": ["score"],
}


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


def cpu_wall() -> tuple[float, float]:
    return cpu_seconds(), time.perf_counter()


def _patched(version: str):
    """The built-in templates of `version` in force (v2: as shipped)."""
    patches = VERSIONS[version]
    return mock.patch.multiple(prompting, **patches) if patches else contextlib.nullcontext()


async def judge_versions(srv, graph, n_items: int, parallel: int, max_tokens: int) -> dict:
    """Both prompt versions over the same items, taking turns CHUNK items at a time."""
    client = OpenAIClient([srv.base_url], srv.model, identity=srv.identity, timeout=600)
    sampling = Sampling(max_tokens=max_tokens)
    backends = {v: LLMBackend(client, cache=None, sampling=sampling) for v in VERSIONS}
    warmup = LLMBackend(client, cache=None, sampling=sampling)
    tally = {v: {"wall": 0.0, "cpu": 0.0, "results": []} for v in VERSIONS}
    qa = [QA[i % len(QA)] for i in range(n_items)]
    items = [Item(f"q{i}", q, {"response": a}) for i, (q, a) in enumerate(qa)]
    try:
        await Interpreter(graph, [warmup], concurrency=parallel).evaluate_async(WARMUP)
        for turn, at in enumerate(range(0, len(items), CHUNK)):
            order = list(VERSIONS) if turn % 2 == 0 else list(VERSIONS)[::-1]
            for version in order:
                with _patched(version):
                    cpu0, wall0 = cpu_wall()
                    chunk = [
                        r
                        async for r in Interpreter(graph, [backends[version]], concurrency=parallel).run(
                            items[at : at + CHUNK]
                        )
                    ]
                    cpu1, wall1 = cpu_wall()
                t = tally[version]
                t["wall"] += wall1 - wall0
                t["cpu"] += cpu1 - cpu0
                t["results"] += chunk
    finally:
        await warmup.aclose()  # the backends share one client
    out = {}
    for version, t in tally.items():
        judgments = [j for r in t["results"] for per in r.judgments.values() for j in per.values()]
        failed = [j.error for j in judgments if j.error]
        u = backends[version].usage
        out[version] = {
            "template": prompting.load_template((VERSIONS[version].get("builtin_prompt") or _V2)("llm.rate")[0]).id,
            "judgments": len(judgments),
            "unreadable": sum(1 for e in failed if e.startswith("unreadable")),
            "failed": len(failed),
            "first_failure": failed[0] if failed else None,
            "calls": u.calls,
            "nudges": u.calls - len(judgments),
            "wall_s": round(t["wall"], 2),
            "judgments_per_min": round(len(judgments) / t["wall"] * 60, 1),
            "cpu_s": round(t["cpu"], 2),
            "judgments_per_cpu_min": round(len(judgments) / t["cpu"] * 60, 1),
            "mean_prompt_tokens": round(u.prompt_tokens / max(1, u.calls)),
            "mean_completion_tokens": round(u.completion_tokens / max(1, u.calls)),
        }
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-file", help="GGUF file (default: `rbg model path`)")
    ap.add_argument("--threads", type=int, default=None, help=f"inference threads (default here: {default_threads()})")
    ap.add_argument(
        "--parallel", type=int, default=2, help="server slots = criterion calls in flight (rbg run's default: 2)"
    )
    ap.add_argument("--items", type=int, default=20, help="items judged by each prompt version (5 judgments each)")
    ap.add_argument(
        "--max-tokens", type=int, default=512, help="max tokens per judgment reply (rbg run's default: 512)"
    )
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()

    graph = check_source(GRAPH, "bench_embedded.rbg").graph
    assert graph is not None, "the benchmark graph must check clean"
    report = {
        "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} usable cores, load {os.getloadavg()[0]:.2f}",
        "threads": args.threads or default_threads(),
        "parallel": args.parallel,
        "max_tokens": args.max_tokens,
    }
    try:
        started = time.perf_counter()
        with start_embedded(args.model_file, threads=args.threads, parallel=args.parallel) as srv:
            report["startup_s"] = round(time.perf_counter() - started, 2)
            report["model"] = srv.model
            report["raw"] = {
                "free": raw_speed(srv.base_url, srv.model, False),
                "json_schema": raw_speed(srv.base_url, srv.model, True),
            }
            report["judging"] = asyncio.run(judge_versions(srv, graph, args.items, args.parallel, args.max_tokens))
    except EmbeddedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    # ru_maxrss is in KiB on Linux: the whole process, model and KV cache included.
    report["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    old, new = report["judging"]["v1"], report["judging"]["v2"]
    report["ratio"] = {
        "judgments_per_min": round(new["judgments_per_min"] / old["judgments_per_min"], 2),
        "judgments_per_cpu_min": round(new["judgments_per_cpu_min"] / old["judgments_per_cpu_min"], 2),
    }

    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"model {report['model']} | {report['machine']} | {report['threads']} inference thread(s), {args.parallel} "
        "slot(s)"
    )
    print(f"startup {report['startup_s']} s (load + first /health) | peak RSS {report['peak_rss_mb']} MB")
    for name, r in report["raw"].items():
        print(
            f"raw ({name:11}): prompt {r['prompt_tok_s']:7.1f} tok/s ({r['prompt_tokens']} tokens), "
            f"generation {r['completion_tok_s']:6.1f} tok/s ({r['completion_tokens']} tokens)"
        )
    print(f"judging at max_tokens {args.max_tokens}, the two prompt versions taking turns:")
    for version, r in report["judging"].items():
        print(
            f"  {version} ({r['template']}): {r['judgments_per_min']:6.1f} judgments/min, "
            f"{r['judgments_per_cpu_min']:6.1f} per CPU-minute ({r['judgments']} in {r['wall_s']} s); "
            f"{r['unreadable']} unreadable, {r['failed']} failed, {r['nudges']} nudges; "
            f"mean {r['mean_prompt_tokens']} prompt + {r['mean_completion_tokens']} completion tokens per call"
        )
        if r["first_failure"]:
            print(f"    first failure: {r['first_failure'][:200]}")
    ratio = report["ratio"]
    verdict = "PASS" if new["unreadable"] == 0 and ratio["judgments_per_min"] >= 2 else "FAIL"
    print(
        f"v2 / v1: {ratio['judgments_per_min']}x judgments/min, {ratio['judgments_per_cpu_min']}x per CPU-minute; "
        f"unreadable {new['unreadable']} vs {old['unreadable']} (targets: >= 2x, 0 unreadable): {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
