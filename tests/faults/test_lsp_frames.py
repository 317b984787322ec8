"""`rbg lsp` under bad frames (issue 25, item 12): a huge, missing, negative
or non-numeric `Content-Length`, or noise where a header should be, is
answered with a JSON-RPC parse error and skipped, and the server goes on
answering the next valid frame. End to end over stdio of a real
subprocess, and the frame reader alone on bytes."""

from __future__ import annotations

import io
import json
import queue
import subprocess
import sys
import threading

import pytest

pytest.importorskip("pygls")

from rubriclang.lsp.frames import FrameReader, Frames

TIMEOUT = 30


def frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "capabilities": {}}}
BODY = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {}}).encode()

BAD = {
    "huge Content-Length": b"Content-Length: 1099511627776\r\n\r\n" + BODY,
    "missing Content-Length": b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + BODY,
    "negative Content-Length": b"Content-Length: -12\r\n\r\n" + BODY,
    "non-numeric Content-Length": b"Content-Length: twelve\r\n\r\n" + BODY,
    "zero Content-Length": b"Content-Length: 0\r\n\r\n",
    "noise instead of headers": b"GET / HTTP/1.1 {garbage}\r\n" + BODY,
}


class Server:
    """`rbg lsp` in a subprocess, its answers read on a thread."""

    def __init__(self):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from rubriclang.cli.main import main; main()", "lsp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None and self.proc.stderr is not None
        self.stdin, self.stdout, self.stderr = self.proc.stdin, self.proc.stdout, self.proc.stderr
        self.answers: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        frames = FrameReader(self.stdout)
        while (body := frames.next()) is not None:
            self.answers.put(json.loads(body))

    def send(self, data: bytes) -> None:
        self.stdin.write(data)
        self.stdin.flush()

    def answer(self, want) -> dict:
        """The next answer that `want` accepts (skipping notifications)."""
        while True:
            msg = self.answers.get(timeout=TIMEOUT)
            if want(msg):
                return msg

    def close(self) -> str:
        if self.proc.poll() is None:
            self.send(frame({"jsonrpc": "2.0", "id": 99, "method": "shutdown"}))
            self.send(frame({"jsonrpc": "2.0", "method": "exit"}))
        try:
            self.proc.wait(timeout=TIMEOUT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        return self.stderr.read().decode("utf-8", "replace")


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


def test_the_server_answers_a_parse_error_for_each_bad_frame_then_the_next_valid_one(server):
    for name, data in BAD.items():
        server.send(data)
        error = server.answer(lambda m: "error" in m)
        assert error["id"] is None and error["error"]["code"] == -32700, name
    server.send(frame(INITIALIZE))
    reply = server.answer(lambda m: m.get("id") == 1)
    assert "capabilities" in reply["result"]
    stderr = server.close()
    assert server.proc.returncode == 0
    assert "MemoryError" not in stderr and "Traceback" not in stderr


@pytest.mark.parametrize("name", list(BAD))
def test_a_bad_frame_right_before_a_valid_one_costs_only_itself(server, name):
    server.send(BAD[name] + frame(INITIALIZE))
    reply = server.answer(lambda m: m.get("id") is not None)
    assert reply["id"] == 1 and "capabilities" in reply["result"], name


# --- the reader alone -------------------------------------------------------------


def bodies(data: bytes, max_body: int = 1 << 20) -> list:
    """What pygls is handed from `data`, in order: bodies, and `bad` where
    a parse error was answered."""
    out: list = []
    frames = Frames(io.BytesIO(data), lambda _: out.append("bad"), max_body)
    while header := frames.readline():
        length = int(header.partition(b":")[2])
        assert frames.readline() == b"\r\n"
        out.append(frames.read(length))
    return out


def test_good_frames_pass_through_whole_and_in_order():
    a, b = frame({"id": 1}), frame({"id": 2, "text": "é 漢字"})
    assert bodies(b"\r\n" + a + b) == [a.split(b"\r\n\r\n", 1)[1], b.split(b"\r\n\r\n", 1)[1]]


@pytest.mark.parametrize("name", list(BAD))
def test_each_bad_frame_is_one_error_and_the_following_frame_survives(name):
    good = frame({"id": 1})
    assert bodies(BAD[name] + good) == ["bad", good.split(b"\r\n\r\n", 1)[1]]


def test_a_body_over_the_limit_is_skipped_without_being_held():
    big = b"x" * 5000
    good = frame({"id": 1})
    assert bodies(b"Content-Length: 5000\r\n\r\n" + big + good, max_body=1000) == ["bad", b'{"id": 1}']


def test_a_header_name_in_any_case_is_read_and_a_truncated_body_ends_the_stream():
    assert bodies(b"content-length: 2\r\n\r\n{}") == [b"{}"]
    assert bodies(b"Content-Length: 10\r\n\r\n{}") == []
