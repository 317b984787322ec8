"""A scripted OpenAI-compatible server on 127.0.0.1, for fault tests.

Chat requests take the next scripted fault, if any, else get a normal
completion from `answer(body)` (a text, or `{"text", "logprobs",
"finish_reason"}`). Faults: an HTTP status (429 with
Retry-After, 500, 503, 404 "model not found", 401), a delay, a dropped
connection, a malformed body, a body trickled a byte at a time, a body sent
chunked, a reply or error message quoting the request's `Authorization`
header (`{authorization}` in the text). Every request is recorded, and the
most chat requests ever in flight at once (`max_in_flight`). The server is
bounded: it stops by itself after `lifetime` seconds, and answers 503 once
it has served `max_requests`.
"""

from __future__ import annotations

import collections
import json
import socket
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs


@attrs.frozen
class Fault:
    """What to do with one chat request instead of answering it normally.
    `status` None means a normal answer (after `delay`)."""

    status: int | None = None
    message: str = ""
    retry_after: str | None = None
    delay: float = 0.0
    drop: bool = False
    body: bytes | None = None
    reply: str | None = None  # a normal completion with this text
    trickle: float = 0.0  # seconds between the body's bytes
    chunked: bool = False  # the body without Content-Length, in chunks
    headers: dict | None = None  # more headers of an answer with `body` (e.g. Content-Encoding)


def status(code: int, message: str = "", retry_after: str | None = None) -> Fault:
    return Fault(status=code, message=message or f"error {code}", retry_after=retry_after)


def delay(seconds: float) -> Fault:
    return Fault(delay=seconds)


def drop() -> Fault:
    return Fault(drop=True)


def malformed() -> Fault:
    return Fault(status=200, body=b'{"choices": [{"message": {"content": "trunc')


def trickle(seconds: float) -> Fault:
    """A normal answer, its body sent one byte every `seconds`."""
    return Fault(trickle=seconds)


def reply(text: str) -> Fault:
    """A normal completion whose text is `text`."""
    return Fault(reply=text)


def unknown_model() -> Fault:
    return status(404, "The model `judge` does not exist or you do not have access to it.")


def auth_failure() -> Fault:
    return status(401, "Incorrect API key provided.")


@attrs.frozen
class Received:
    path: str
    body: dict | None
    authorization: str | None

    @property
    def json(self) -> dict[str, Any]:
        """The JSON body of a request that has one (every chat request a test reads)."""
        assert self.body is not None, f"{self.path} came with no JSON body"
        return self.body


def rate_answer(score=4) -> Callable[[dict], str]:
    """An answer function that always gives `score` as JSON."""
    return lambda body: json.dumps({"reason": "Looks fine.", "score": score})


class FaultServer:
    """The server; use as a context manager. `url` is its base URL."""

    def __init__(
        self,
        answer: Callable[[dict], str | dict] = rate_answer(),  # noqa: B008 (the answer function is stateless)
        models: tuple[str, ...] = ("judge",),
        api_key: str | None = None,
        reject_response_format: bool = False,
        lifetime: float = 60.0,
        max_requests: int = 5000,
        owned_by: str | None = None,
        props: dict | None = None,
    ):
        self.answer = answer
        self.owned_by = owned_by  # each model entry's `owned_by` (llama.cpp says "llamacpp")
        self.props = props  # what GET /props answers (llama.cpp's server properties); None: 404
        self.models = models
        self.api_key = api_key
        self.reject_response_format = reject_response_format
        self.max_requests = max_requests
        self.requests: list[Received] = []
        self._faults: collections.deque[Fault] = collections.deque()
        self._lock = threading.Lock()
        # Chat requests being answered now, and the most there ever were.
        self.in_flight = 0
        self.max_in_flight = 0
        self._httpd = _QuietServer(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._timer = threading.Timer(lifetime, self.stop)
        self._timer.daemon = True

    def __enter__(self) -> FaultServer:
        self._thread.start()
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        self._timer.cancel()
        if self._thread.is_alive():
            self._httpd.shutdown()
        self._httpd.server_close()

    def script(self, *faults: Fault) -> None:
        """Faults for the next chat requests, in order."""
        with self._lock:
            self._faults.extend(faults)

    @property
    def chats(self) -> list[Received]:
        with self._lock:
            return [r for r in self.requests if r.path.split("?", 1)[0].endswith("/chat/completions")]

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _next(self, received: Received) -> tuple[Fault | None, int]:
        with self._lock:
            self.requests.append(received)
            n = len(self.requests)
            if received.path.split("?", 1)[0].endswith("/chat/completions") and self._faults:
                return self._faults.popleft(), n
            return None, n


class _QuietServer(ThreadingHTTPServer):
    """Threads that never block exit; a client hanging up (a timeout, a
    killed run) is not worth a printed traceback."""

    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _handler(server: FaultServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet
            pass

        def _send(self, code: int, payload, headers: dict | None = None, fault: Fault | None = None) -> None:
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            chunked = fault is not None and fault.chunked
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                if chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                else:
                    self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                if fault is not None and fault.trickle:
                    for i in range(len(data)):
                        self.wfile.write(data[i : i + 1])
                        self.wfile.flush()
                        time.sleep(fault.trickle)
                elif chunked:
                    for i in range(0, len(data), 65536):
                        piece = data[i : i + 65536]
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.wfile.write(data)
            except OSError:  # the client gave up (a timeout): nothing to do
                pass

        def _authorised(self) -> bool:
            if server.api_key is None or self.headers.get("Authorization") == f"Bearer {server.api_key}":
                return True
            self._send(401, {"error": {"message": "Incorrect API key provided."}})
            return False

        @property
        def route(self) -> str:
            """The request's path without its query (`Received.path` keeps it)."""
            return self.path.split("?", 1)[0]

        def do_GET(self) -> None:
            server._next(Received(self.path, None, self.headers.get("Authorization")))
            if not self._authorised():
                return
            if self.route.rstrip("/") == "/v1/models":
                extra = {"owned_by": server.owned_by} if server.owned_by else {}
                self._send(
                    200, {"object": "list", "data": [{"id": m, "object": "model", **extra} for m in server.models]}
                )
            elif self.route == "/props" and server.props is not None:
                self._send(200, server.props)
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            server._enter()
            try:
                self._post()
            finally:
                server._leave()

        def _post(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"null")
            except json.JSONDecodeError:
                body = None
            fault, n = server._next(Received(self.path, body, self.headers.get("Authorization")))
            if n > server.max_requests:
                return self._send(503, {"error": {"message": "request budget of the test server spent"}})
            if not self._authorised():
                return
            if self.route != "/v1/chat/completions" or not isinstance(body, dict):
                return self._send(404, {"error": {"message": f"no route {self.path}"}})
            quoted = self.headers.get("Authorization") or ""
            if fault is not None:
                if fault.delay:
                    time.sleep(fault.delay)
                if fault.drop:
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                if fault.body is not None:
                    return self._send(fault.status or 200, fault.body, fault.headers, fault=fault)
                if fault.status is not None:
                    headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
                    message = fault.message.replace("{authorization}", quoted)
                    return self._send(fault.status, {"error": {"message": message}}, headers, fault=fault)
            if body.get("model") not in server.models:
                return self._send(404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}})
            if server.reject_response_format and "response_format" in body:
                return self._send(400, {"error": {"message": "response_format is not supported by this server"}})
            out = (
                server.answer(body)
                if fault is None or fault.reply is None
                else fault.reply.replace("{authorization}", quoted)
            )
            text, logprobs = (out["text"], out.get("logprobs")) if isinstance(out, dict) else (out, None)
            finish = out.get("finish_reason", "stop") if isinstance(out, dict) else "stop"
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
            if logprobs is not None:
                choice["logprobs"] = {"content": logprobs}
            prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
            self._send(
                200,
                {
                    "id": f"chat-{n}",
                    "object": "chat.completion",
                    "model": body["model"],
                    "choices": [choice],
                    "usage": {
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": len(text.split()),
                        "total_tokens": 0,
                    },
                },
                fault=fault,
            )

    return Handler
