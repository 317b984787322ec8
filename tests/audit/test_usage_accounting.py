"""One accounting of LLM calls, live or from the cache (issue 24, item 8):
every request is a call to the server, a cache hit, or shared with an
identical request of the run; the two candidates of an `llm.compare` share
each call whether it was made now or read from the cache."""

from __future__ import annotations

import json

from .test_position_bias import COMPARE, PAIRS


def _answer(role, body) -> str:
    return json.dumps({"reason": "The first one.", "preference": "A"})


def _run(rbg, tmp_path, url: str, out: str) -> dict:
    result = rbg(
        "run",
        tmp_path / "judge.rbg",
        tmp_path / "items.jsonl",
        "--out",
        tmp_path / out,
        "--mode",
        "pairwise",
        "--base-url",
        url,
        "--model",
        "scripted",
        "--cache",
        tmp_path / "calls.sqlite",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["llm"]


def test_compare_calls_are_counted_the_same_live_and_from_the_cache(rbg, scripted, tmp_path):
    server = scripted(_answer)
    (tmp_path / "judge.rbg").write_text(COMPARE.format(order="as_given"))
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PAIRS))
    live = _run(rbg, tmp_path, server.url, "a.jsonl")
    cached = _run(rbg, tmp_path, server.url, "b.jsonl")
    assert len(server.calls("judge")) == 8
    # 8 items x 2 candidates ask 16 times for 8 distinct calls: live, 8 sent and
    # 8 shared; from the cache, 8 hits and the same 8 shared (not 16 hits).
    assert (live["requests"], live["calls"], live["cache_hits"], live["shared"]) == (16, 8, 0, 8)
    assert (cached["requests"], cached["calls"], cached["cache_hits"], cached["shared"]) == (16, 0, 8, 8)


def test_the_run_summary_reads_every_request_as_one_of_three(rbg, scripted, tmp_path):
    server = scripted(_answer)
    (tmp_path / "judge.rbg").write_text(COMPARE.format(order="as_given"))
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PAIRS))
    args = ["--mode", "pairwise", "--base-url", server.url, "--model", "scripted", "--cache", tmp_path / "c.sqlite"]
    rbg("run", tmp_path / "judge.rbg", tmp_path / "items.jsonl", "--out", tmp_path / "a.jsonl", *args)
    again = rbg("run", tmp_path / "judge.rbg", tmp_path / "items.jsonl", "--out", tmp_path / "b.jsonl", *args)
    assert "16 requests: 0 calls to the server, 8 cache hits, 8 shared with an identical request" in again.output, (
        again.output
    )
