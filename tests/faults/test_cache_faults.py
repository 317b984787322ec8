"""A call cache that cannot be written never costs a paid answer: on a real
full or read-only file system, `rbg run` (a real process, against a real
loopback server) keeps every answer, says once that the cache is not
written, and exits as if the cache were fine; `rbg batch import`, which
needs the cache, stops with one clear error; `rbg cache` reports instead of
crashing."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import GOOD

from rubriclang.llm.cache import CallCache
from rubriclang.llm.client import Completion

from .filesystems import fill, read_only, tmpfs
from .llm_fixtures import fault_server, write_items  # noqa: F401 (fault_server: a fixture)
from .run_fixtures import rbg_process

WARNING = "cannot be written"


def _run(tmp_path: Path, server, cache: Path, n: int, out: str = "t.jsonl"):
    g = tmp_path / "g.rbg"
    g.write_text(GOOD)
    items = write_items(tmp_path, n)
    return rbg_process(
        "run",
        g,
        items,
        "--out",
        tmp_path / out,
        "--base-url",
        server.url,
        "--cache",
        cache,
        "--concurrency",
        "2",
        "--format",
        "json",
    )


def _statuses(path: Path) -> list[str]:
    return [json.loads(line)["readout"]["status"] for line in path.read_text().splitlines()]


def test_a_cache_whose_disk_fills_mid_run_keeps_every_paid_answer_and_says_so_once(fault_server, tmp_path):
    server = fault_server()
    with tmpfs(tmp_path / "disk", "512k") as disk:
        cache = disk / "calls.sqlite"
        CallCache(str(cache)).close()
        fill(disk, leave=64 * 1024)  # room to open the cache and store a few calls, not 40
        r = _run(tmp_path, server, cache, 40)
        stored = CallCache(str(cache)).stats()["entries"]
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert _statuses(tmp_path / "t.jsonl") == ["ok"] * 40
    assert len(server.chats) == 40  # each paid for once, none thrown away
    assert 0 < stored < 40
    assert r.stderr.count(WARNING) == 1, r.stderr
    summary = json.loads(r.stdout)
    assert "full" in summary["llm"]["cache_error"]
    assert summary["llm"]["calls"] == 40


def test_a_cache_on_a_disk_full_before_the_run_stops_it_before_any_call(fault_server, tmp_path):
    server = fault_server()
    with tmpfs(tmp_path / "disk", "256k") as disk:
        cache = disk / "calls.sqlite"
        CallCache(str(cache)).close()
        fill(disk)
        r = _run(tmp_path, server, cache, 3)
    assert r.returncode == 2, r.stderr
    assert "cannot open the call cache" in r.stderr and "disk is full" in r.stderr
    assert "Traceback" not in r.stderr and server.chats == []


def test_a_cache_on_a_read_only_file_system_still_answers_what_it_holds(fault_server, tmp_path):
    server = fault_server()
    with tmpfs(tmp_path / "disk", "4m") as disk:
        cache = disk / "calls.sqlite"
        first = _run(tmp_path, server, cache, 4, out="first.jsonl")
        assert first.returncode == 0, first.stderr
        read_only(disk)
        r = _run(tmp_path, server, cache, 8)
        stats = rbg_process("cache", "stats", "--cache", cache, "--format", "json")
        cleared = rbg_process("cache", "clear", "--cache", cache)
    assert r.returncode == 0, r.stderr
    assert _statuses(tmp_path / "t.jsonl") == ["ok"] * 8
    summary = json.loads(r.stdout)["llm"]
    assert (summary["cache_hits"], summary["calls"]) == (4, 4)
    assert len(server.chats) == 8
    assert r.stderr.count(WARNING) == 1 and "read-only" in r.stderr, r.stderr
    assert stats.returncode == 0 and json.loads(stats.stdout)["entries"] == 4, stats.stderr
    assert cleared.returncode == 2, cleared.stdout + cleared.stderr
    assert "cannot be emptied" in cleared.stderr and "Traceback" not in cleared.stderr


def test_a_cache_that_fails_mid_run_is_reported_once_and_the_completion_returned(tmp_path):
    said: list[str] = []
    with tmpfs(tmp_path / "disk", "256k") as disk:
        cache = CallCache(str(disk / "calls.sqlite"), warn=said.append)
        fill(disk)
        for i in range(5):
            cache.put(f"k{i}", "server", Completion("x" * 2000, "judge"))
        cache.set_note("server", "no_response_format", "1")
        assert cache.get("k4") is None
        cache.close()
    assert len(said) == 1 and "full" in said[0]
    assert cache.write_error is not None


def test_batch_import_into_a_cache_on_a_full_disk_is_one_clear_error(tmp_path):
    g = tmp_path / "g.rbg"
    g.write_text(GOOD)
    items = write_items(tmp_path, 30)
    requests = tmp_path / "requests.jsonl"
    exported = rbg_process("batch", "export", g, items, "-o", requests, "--model", "judge")
    assert exported.returncode == 0, exported.stderr
    answer = json.dumps({"score": 4, "reason": "fine"})
    body = {"model": "judge", "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}}]}
    results = tmp_path / "results.jsonl"
    results.write_text(
        "".join(
            json.dumps({"custom_id": json.loads(line)["custom_id"], "response": {"status_code": 200, "body": body}})
            + "\n"
            for line in requests.read_text().splitlines()
        )
    )
    with tmpfs(tmp_path / "disk", "512k") as disk:
        cache = disk / "calls.sqlite"
        CallCache(str(cache)).close()
        fill(disk, leave=64 * 1024)  # the cache opens, and fills after a few results
        r = rbg_process(
            "batch",
            "import",
            g,
            items,
            results,
            "--out",
            tmp_path / "t.jsonl",
            "--model",
            "judge",
            "--base-url",
            "http://127.0.0.1:9",
            "--cache",
            cache,
        )
    assert r.returncode == 2, r.stdout + r.stderr
    assert "cannot be stored in the call cache" in r.stderr and "Traceback" not in r.stderr
    assert r.stderr.count("Error:") == 1 and WARNING not in r.stderr
