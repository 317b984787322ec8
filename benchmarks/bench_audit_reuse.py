"""Calls of an audit of the MT-Bench rubric with the rubric and judge-prompt
operators, with and without reuse of the baseline's judgments (issue 28.3).

A deterministic loopback server (the reply is a function of the request's
messages: a judge at temperature 0 whose server repeats itself) answers
`rbg audit` over the first `--items` MT-Bench items, four times in one run:

- `--estimate`: the calls the audit will make, counting nothing it sends;
- `--no-cache --no-reuse`: every judgment asks the server (today's
  `--no-cache` audit: a variant's criterion whose prompt did not change
  was asked again);
- `--no-cache`: a variant's criterion whose rendered prompt is the
  baseline's reuses the baseline's judgment of the same repeat;
- with a fresh call cache (the default), which answers the same requests.

Printed: the judge's calls the server received in each, their ratio, the calls the
report counts as reused, whether the estimate equals the calls made, and
whether every figure of report.json but `usage` is byte-identical. Targets:
the reused audit's calls at most 0.5x the one without reuse (issue 28's
target), figures identical, estimate exact. Exit status 1 when one is
missed.

Run: .venv/bin/python benchmarks/bench_audit_reuse.py [--items 10] [--repeats 3] [--operators a,b] [--json]
No model needed; about 20 s on 2 busy cores.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from click.testing import CliRunner

from rubriclang.cli.main import cli

ROOT = Path(__file__).resolve().parent.parent
GRAPH = ROOT / "examples/mt_bench/rubric.rbg"
ITEMS = ROOT / "examples/mt_bench/items.jsonl"
# The judge-side operators of the two surfaces, `rubric` and `judge_prompt`:
# by rule, and written by the (scripted) generator.
OPERATORS = ("criterion_reorder", "instruction_ordering", "rubric_paraphrase", "prompt_paraphrase", "role_framing")
TARGET = 0.5


def shown(body: dict, tag: str) -> str:
    """The text a generator request shows between `<tag>` and `</tag>`."""
    user = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
    return user.split(f"<{tag}>\n", 1)[1].split(f"\n</{tag}>", 1)[0]


def reply(body: dict) -> str:
    """A readable answer that depends only on the request's messages: the
    judge's, a generator's rewrite (one sentence more), a validator's accept."""
    system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
    if system.startswith("You rewrite texts"):
        fields = body["response_format"]["json_schema"]["schema"]["properties"]
        if "anchors" in fields:
            return json.dumps({"anchors": {k: f"{v} Indeed." for k, v in json.loads(shown(body, "anchors")).items()}})
        if "template" in fields:
            return json.dumps({"template": shown(body, "template").rstrip() + " Be careful.\n"})
        return json.dumps({"system": "You are a careful, impartial judge."})
    if system.startswith("You check rewrites"):
        return json.dumps({"verdict": "accept", "reason": "the same instructions"})
    h = int(hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).hexdigest(), 16)
    fields = (body.get("response_format") or {}).get("json_schema", {}).get("schema", {}).get("properties", {})
    if "answer" in fields:
        return json.dumps({"reason": "scripted", "answer": h % 4 == 0})
    return json.dumps({"reason": "scripted", "score": 1 + h % 5})


class Server:
    """The deterministic server on loopback; `received` counts the judge's chat completions asked."""

    def __init__(self) -> None:
        self.received = 0
        lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, obj: dict) -> None:
                data = json.dumps(obj).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._send({"data": [{"id": "scripted"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
                with lock:
                    server.received += not system.startswith(("You rewrite texts", "You check rewrites"))
                choice = {"message": {"content": reply(body)}, "finish_reason": "stop"}
                self._send(
                    {"model": "scripted", "choices": [choice], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
                )

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        threading.Thread(target=self.http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


def audit(server: Server, suite: Path, *args: str) -> tuple[int, dict, str]:
    """(calls the server received, report.json or the estimate, the command's output)."""
    before = server.received
    result = CliRunner().invoke(cli, ["audit", str(suite), *args], catch_exceptions=False)
    if result.exit_code not in (0, 1):
        sys.exit(f"rbg audit {' '.join(args)} failed ({result.exit_code}): {result.output}")
    if "--estimate" in args:
        return server.received - before, json.loads(result.output), result.output
    out = Path(args[args.index("--out") + 1])
    return server.received - before, json.loads((out / "report.json").read_text("utf-8")), result.output


def figures(report: dict) -> str:
    """report.json without `usage` (what reuse is meant to change), as canonical text."""
    return json.dumps({k: v for k, v in report.items() if k != "usage"}, sort_keys=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--operators", default=",".join(OPERATORS))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    server = Server()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_CACHE_HOME"] = os.path.join(tmp, "xdg")  # never the user's cache
        suite = Path(tmp) / "suite.toml"
        ops = ", ".join(f'"{o}"' for o in args.operators.split(","))
        suite.write_text(
            f'items = "{ITEMS}"\nlimit = {args.items}\nrepeats = {args.repeats}\noperators = [{ops}]\n'
            f'[judge]\ngraph = "{GRAPH}"\nbase_url = "{server.url}"\nmodel = "scripted"\n'
            "temperature = 0\nseed = 0\nmax_retries = 0\n"
            f'[generator]\nbase_url = "{server.url}"\nmodel = "scripted"\n'
            f'[validator]\nbase_url = "{server.url}"\nmodel = "scripted"\n',
            encoding="utf-8",
        )
        sent, est, _ = audit(server, suite, "--estimate", "--format", "json")
        assert sent == 0, "an estimate sends nothing"
        without, fresh, _ = audit(server, suite, "--out", f"{tmp}/fresh", "--no-cache", "--no-reuse")
        with_reuse, reused, _ = audit(server, suite, "--out", f"{tmp}/reused", "--no-cache")
        cached, _, _ = audit(server, suite, "--out", f"{tmp}/cached")  # a fresh call cache, as by default
    server.close()
    estimated = est["phases"]["judge"]["calls"]
    ratio = with_reuse / without if without else 1.0
    result = {
        "items": args.items,
        "repeats": args.repeats,
        "operators": args.operators.split(","),
        "variants": reused["counts"]["variants"],
        "calls_without_reuse": without,
        "calls_with_reuse": with_reuse,
        "ratio": round(ratio, 3),
        "calls_with_a_fresh_call_cache": cached,
        "reused": reused["usage"]["judge"]["reused"],
        "estimated_calls": estimated,
        "estimate_exact": estimated == with_reuse == reused["usage"]["judge"]["calls"],
        "figures_identical": figures(fresh) == figures(reused),
    }
    missed = [
        name
        for name, ok in (
            (f"calls with reuse at most {TARGET}x without", ratio <= TARGET),
            ("figures identical", result["figures_identical"]),
            ("estimate exact", result["estimate_exact"]),
        )
        if not ok
    ]
    result["missed"] = missed
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"MT-Bench rubric, {args.items} items x {args.repeats} repeats, operators {args.operators} "
            f"({result['variants']} variants), deterministic loopback server"
        )
        print(f"  judge calls without reuse (--no-cache --no-reuse): {without}")
        print(f"  judge calls with reuse    (--no-cache):            {with_reuse}  ({ratio:.3f}x; target <= {TARGET}x)")
        print(f"  judge calls with a fresh call cache (the default): {cached}")
        print(f"  reused (report.json usage.judge.reused):           {result['reused']}")
        print(f"  estimate (--estimate):                              {estimated}  (exact: {result['estimate_exact']})")
        print(f"  every figure of report.json but usage identical:    {result['figures_identical']}")
        for name in missed:
            print(f"  MISSED: {name}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
