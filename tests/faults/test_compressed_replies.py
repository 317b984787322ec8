"""`--max-reply-bytes` counts decoded bytes, for every encoding read: a
small gzip or deflate answer that inflates past the cap fails its call
before more than the cap is ever held, on the client's own transport and on
httpx's alike; stacked, unknown and corrupt encodings are refused in plain
words; an answer within the cap reads as if it were sent plain."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import zlib

import httpx
import pytest
from conftest import GOOD
from llm.fault_server import Fault

from rubriclang.llm.client import LLMError
from rubriclang.llm.transport import PoolTransport, ReplyTooLarge

from .llm_fixtures import chat, client, fault_server, write_items  # noqa: F401 (fault_server: a fixture)

ANSWER = json.dumps({"score": 4, "reason": "fine"})
PREFIX = b'{"model": "judge", "choices": [{"index": 0, "message": {"role": "assistant", "content": "'
SUFFIX = b'"}, "finish_reason": "stop"}]}'


def _compressed(size: int, wbits: int = 16 + zlib.MAX_WBITS) -> bytes:
    """A completion whose content is `size` x's, compressed a megabyte at a
    time (the test never holds the inflated body)."""
    z = zlib.compressobj(9, zlib.DEFLATED, wbits)
    out = [z.compress(PREFIX)]
    block = b"x" * (1 << 20)
    for start in range(0, size, len(block)):
        out.append(z.compress(block[: size - start]))
    out.append(z.compress(SUFFIX))
    out.append(z.flush())
    return b"".join(out)


def _plain(text: str, wbits: int) -> bytes:
    z = zlib.compressobj(6, zlib.DEFLATED, wbits)
    body = json.dumps({"model": "judge", "choices": [{"message": {"content": text}}]}).encode()
    return z.compress(body) + z.flush()


GZIP, ZLIB, RAW = 16 + zlib.MAX_WBITS, zlib.MAX_WBITS, -zlib.MAX_WBITS
BOMB = 64 << 20  # 64 MiB of content in about 64 KB


@pytest.fixture(params=["own-transport", "httpx"])
def transport(request, monkeypatch):
    if request.param == "httpx":  # every server under RBG_PLAIN_LIBS=http
        monkeypatch.setenv("RBG_PLAIN_LIBS", "http")
    return request.param


def test_a_gzip_bomb_fails_its_call_at_the_cap_on_decoded_bytes(fault_server, transport):
    body = _compressed(BOMB)
    assert len(body) < 200_000
    server = fault_server()
    server.script(Fault(status=200, body=body, headers={"Content-Encoding": "gzip"}))
    with pytest.raises(LLMError) as info:
        chat(client(server, max_reply_bytes=1_000_000, max_retries=2))
    assert info.value.kind == "reply_too_large", info.value.message
    assert len(server.chats) == 1


@pytest.mark.parametrize("encoding,wbits", [("gzip", GZIP), ("x-gzip", GZIP), ("deflate", ZLIB), ("deflate", RAW)])
def test_an_answer_within_the_cap_reads_as_if_sent_plain(fault_server, transport, encoding, wbits):
    server = fault_server()
    server.script(Fault(status=200, body=_plain(ANSWER, wbits), headers={"Content-Encoding": encoding}))
    assert chat(client(server, max_reply_bytes=10_000)).text == ANSWER


def test_the_cap_counts_the_content_not_the_compressed_bytes(fault_server, transport):
    server = fault_server()
    body = _compressed(20_000)
    server.script(Fault(status=200, body=body, headers={"Content-Encoding": "gzip"}))
    assert len(body) < 10_000
    with pytest.raises(LLMError) as info:
        chat(client(server, max_reply_bytes=10_000))
    assert info.value.kind == "reply_too_large"


@pytest.mark.parametrize(
    "encoding,body,words",
    [
        (
            "gzip, gzip, gzip",
            _plain(ANSWER, GZIP),
            "its content encoding `gzip, gzip, gzip` is several stacked encodings",
        ),
        (
            "br",
            b"\x0b\x02\x80{}\x03",
            "`br` is an encoding this client does not read (it reads gzip, deflate)",
        ),
        ("gzip", b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xff\xff\xff", "its gzip data is corrupt"),
        ("gzip", _plain(ANSWER, GZIP)[:20], "its gzip data is cut short"),
    ],
    ids=["stacked", "brotli", "corrupt", "cut-short"],
)
def test_an_encoding_that_cannot_be_read_is_refused_in_plain_words(fault_server, transport, encoding, body, words):
    server = fault_server()
    server.script(Fault(status=200, body=body, headers={"Content-Encoding": encoding}), Fault(status=200, body=body))
    with pytest.raises(LLMError) as info:
        chat(client(server, max_retries=1))
    assert info.value.kind == "bad_response"
    assert "answered in a form this client cannot read: " in info.value.message
    assert words in info.value.message
    assert len(server.chats) == 1  # not retried: it would be sent so again


# A run in a process of its own, its peak memory measured there: the high-water
# mark of its own memory map (getrusage's ru_maxrss would count the memory of
# the test process it was forked from).
_MEASURED_RUN = """
import sys
from rubriclang.cli.main import cli
try:
    cli(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
with open("/proc/self/status") as fh:
    peak = next(line.split()[1] for line in fh if line.startswith("VmHWM:"))
print("maxrss_kb", peak, file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="peak memory is read from /proc (Linux)")
def test_a_run_against_a_gzip_bomb_stays_small_in_memory_and_in_its_trace(fault_server, tmp_path):
    g = tmp_path / "g.rbg"
    g.write_text(GOOD)
    items = write_items(tmp_path, 1)
    server = fault_server()
    bomb = Fault(status=200, body=_compressed(BOMB), headers={"Content-Encoding": "gzip"})
    server.script(bomb)
    out = tmp_path / "t.jsonl"
    args = ["run", g, items, "--out", out, "--base-url", server.url, "--no-cache", "--max-reply-bytes", "2000000"]
    r = subprocess.run(
        [sys.executable, "-c", _MEASURED_RUN, *map(str, args)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    trace = out.read_text()
    assert "reply_too_large" in trace and len(trace) < 10_000
    peak_mb = int(r.stderr.rsplit("maxrss_kb", 1)[1].split()[0]) / 1024
    # The inflated answer is 64 MiB: a run that held it would pass this at once.
    assert peak_mb < 60 + 2 * 2, peak_mb


def test_the_transport_used_as_httpx_transport_decodes_within_its_cap(fault_server):
    server = fault_server()
    server.script(
        Fault(status=200, body=_plain(ANSWER, GZIP), headers={"Content-Encoding": "gzip"}),
        Fault(status=200, body=_compressed(BOMB), headers={"Content-Encoding": "gzip"}),
    )

    async def go():
        async with httpx.AsyncClient(transport=PoolTransport(max_body=1_000_000)) as http:
            url, body = server.url + "/v1/chat/completions", {"model": "judge", "messages": []}
            first = await http.post(url, json=body)
            assert json.loads(first.content)["choices"][0]["message"]["content"] == ANSWER
            assert "content-encoding" not in first.headers  # decoded once, here, not again by httpx
            with pytest.raises(ReplyTooLarge):
                await http.post(url, json=body)

    asyncio.run(go())
