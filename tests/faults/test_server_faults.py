"""Servers that would hold a run or its memory hostage: one trickling its
answer a byte at a time is cut at the request's deadline (and retried like a
timeout); one answering megabytes fails the call, and nothing of that answer
is stored."""

from __future__ import annotations

import json
import sqlite3
import time

import pytest
from click.testing import CliRunner
from conftest import GOOD
from llm.fault_server import Fault, FaultServer, trickle

from rubriclang.cli.main import cli
from rubriclang.llm.client import DEFAULT_MAX_REPLY_BYTES, LLMError, OpenAIClient

from .llm_fixtures import chat, client, fault_server, write_items  # noqa: F401 (fault_server: a fixture)

# Each byte comes well inside the read timeout: only an overall deadline ends it.
BYTE_EVERY = 0.25
READ_TIMEOUT = 2.0
DEADLINE = 0.6


def _client(server: FaultServer, **kw) -> OpenAIClient:
    return client(server, **{"timeout": READ_TIMEOUT, **kw})


def _big_reply(size: int) -> bytes:
    text = "x" * size
    return json.dumps(
        {
            "model": "judge",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        }
    ).encode()


# -- the deadline --------------------------------------------------------------------


def test_a_trickling_answer_is_cut_at_the_deadline_not_waited_for(fault_server):
    server = fault_server()
    server.script(trickle(BYTE_EVERY))
    started = time.monotonic()
    with pytest.raises(LLMError) as info:
        chat(_client(server, deadline=DEADLINE))
    # The whole answer (a few hundred bytes) would take over a minute.
    assert time.monotonic() - started < 30
    assert info.value.kind == "timeout"
    assert f"within the {DEADLINE:g} s deadline" in info.value.message


def test_a_request_past_its_deadline_is_retried_like_a_timeout(fault_server):
    server = fault_server()
    server.script(trickle(BYTE_EVERY))
    completion = chat(_client(server, deadline=DEADLINE, max_retries=2))
    assert completion.attempts == 2 and len(server.chats) == 2
    assert json.loads(completion.text)["score"] == 4


def test_giving_up_after_deadlines_says_so(fault_server):
    server = fault_server()
    server.script(trickle(BYTE_EVERY), trickle(BYTE_EVERY))
    with pytest.raises(LLMError) as info:
        chat(_client(server, deadline=DEADLINE, max_retries=1))
    assert info.value.kind == "timeout" and info.value.attempts == 2
    assert "deadline" in info.value.message and "gave up after 2 attempts" in info.value.message


def test_the_default_deadline_is_four_timeouts(fault_server):
    server = fault_server()
    assert _client(server, timeout=3.0).deadline == 12.0
    assert _client(server, timeout=3.0, deadline=1.5).deadline == 1.5


# -- the reply size cap ------------------------------------------------------------------


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_reply_over_the_cap_fails_the_call_without_a_retry(fault_server, chunked):
    server = fault_server()
    server.script(Fault(status=200, body=_big_reply(50_000), chunked=chunked))
    with pytest.raises(LLMError) as info:
        chat(_client(server, max_reply_bytes=10_000, max_retries=3))
    assert info.value.kind == "reply_too_large"
    assert "more than 10000 bytes" in info.value.message
    assert len(server.chats) == 1  # the same request would be answered at length again


def test_a_reply_under_the_cap_is_read_whole(fault_server):
    server = fault_server()
    server.script(Fault(status=200, body=_big_reply(9_000), chunked=True))
    assert len(chat(_client(server, max_reply_bytes=10_000)).text) == 9_000


def test_the_cap_holds_on_httpx_own_transport_too(fault_server, monkeypatch):
    # Every call under RBG_PLAIN_LIBS=http goes through
    # httpx's transport, which streams: the client stops reading at the cap itself.
    monkeypatch.setenv("RBG_PLAIN_LIBS", "http")
    server = fault_server()
    server.script(Fault(status=200, body=_big_reply(50_000), chunked=True))
    with pytest.raises(LLMError) as info:
        chat(_client(server, max_reply_bytes=10_000))
    assert info.value.kind == "reply_too_large"


def test_the_default_cap_is_8_mib(fault_server):
    assert _client(fault_server()).max_reply_bytes == DEFAULT_MAX_REPLY_BYTES == 8 * 1024 * 1024


# -- through `rbg run` -------------------------------------------------------------------


@pytest.fixture
def run_files(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    g = tmp_path / "g.rbg"
    g.write_text(GOOD)
    items = write_items(tmp_path, 3)
    return g, items


def _run(g, items, tmp_path, server, *flags):
    return CliRunner().invoke(
        cli,
        [
            "run",
            str(g),
            str(items),
            "--out",
            str(tmp_path / "t.jsonl"),
            "--base-url",
            server.url,
            "--cache",
            str(tmp_path / "c.sqlite"),
            "--concurrency",
            "1",
            *flags,
        ],
    )


def _records(tmp_path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]


def test_run_deadline_fails_the_judgment_of_a_trickled_answer(fault_server, run_files, tmp_path):
    g, items = run_files
    server = fault_server()
    server.script(trickle(BYTE_EVERY))
    r = _run(
        g, items, tmp_path, server, "--timeout", str(READ_TIMEOUT), "--deadline", str(DEADLINE), "--max-retries", "0"
    )
    assert r.exit_code == 1, r.output
    errors = [rec["readout"]["error"] for rec in _records(tmp_path) if rec["readout"]["status"] == "error"]
    assert len(errors) == 1 and "within the 0.6 s deadline" in errors[0]
    assert "error 1" in r.output


def test_run_stores_nothing_of_a_reply_over_the_cap(fault_server, run_files, tmp_path):
    g, items = run_files
    server = fault_server()
    server.script(Fault(status=200, body=_big_reply(200_000)))
    r = _run(g, items, tmp_path, server, "--max-reply-bytes", "50000")
    assert r.exit_code == 1, r.output
    traces = (tmp_path / "t.jsonl").read_text()
    assert "reply_too_large" in traces
    assert "x" * 1000 not in traces and len(traces) < 50_000
    rows = sqlite3.connect(tmp_path / "c.sqlite").execute("SELECT response FROM calls").fetchall()
    assert len(rows) == 2 and all("x" * 1000 not in row[0] for row in rows)


def test_the_deadline_and_the_cap_are_options_of_every_command_that_asks_a_server():
    for command in (["run"], ["eval"], ["compile"]):
        help_text = CliRunner().invoke(cli, [*command, "--help"]).output
        assert "--deadline" in help_text and "--max-reply-bytes" in help_text, command
