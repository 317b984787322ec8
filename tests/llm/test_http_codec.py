"""The HTTP/1.1 the lean transport writes and reads itself: each way a
server may frame an answer (RFC 9112), interim answers, keep-alive and
close, and answers that are not HTTP/1.1, which fail clearly, quoting no
header. Each server is a scripted loopback socket in the test's event loop:
it reads one request, then writes the bytes the test gives, in pieces."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from rubriclang.llm.transport import PoolTransport, ReplyTooLarge, header_lines, request_head

SECRET = "sk-SENTINEL-0123456789"


class Scripted:
    """Answers the n-th request on any connection with `answers[n]`: a list
    of byte pieces written one by one (a separate segment each), then closes
    the connection when `close` says so. `requests` keeps each request's bytes."""

    def __init__(self, answers: list[list[bytes]], close: bool = False):
        self.answers, self.close = answers, close
        self.requests: list[bytes] = []
        self.connections = 0

    async def __aenter__(self) -> Scripted:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.host, self.port = self._server.sockets[0].getsockname()[:2]
        return self

    async def __aexit__(self, *exc) -> None:
        self._server.close()
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while len(self.requests) < len(self.answers):
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.lower() == b"content-length":
                        length = int(value)
                self.requests.append(head + await reader.readexactly(length))
                for piece in self.answers[len(self.requests) - 1]:
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(0.005)
                if self.close:
                    break
            else:
                await reader.read()  # wait for the client to hang up
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()


def run(coro):
    async def bounded():
        async with asyncio.timeout(20):
            return await coro

    return asyncio.run(bounded())


async def exchange(server: Scripted, transport: PoolTransport, method: bytes = b"POST", body: bytes = b"{}"):
    lines = header_lines([(b"Host", b"127.0.0.1"), (b"Authorization", f"Bearer {SECRET}".encode())])
    head = request_head(method, b"/v1/chat/completions", lines, len(body) if body else None)
    return await transport.exchange(server.host, server.port, head, body, {"read": 5.0, "write": 5.0})


def answers_of(*answers: list[bytes], close: bool = False, max_body: int | None = None):
    """(head, body) of each answer, over one transport, and how many connections it took."""

    async def go():
        async with Scripted(list(answers), close=close) as server:
            transport = PoolTransport(1, max_body=max_body)
            try:
                out = [await exchange(server, transport) for _ in answers]
            finally:
                await transport.aclose()
            return out, server.connections

    return run(go())


OK_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"


def test_a_content_length_body_split_anywhere_is_read_whole_and_the_connection_kept():
    answer = OK_HEAD + b"Content-Length: 11\r\n\r\n" + b'{"score":4}'
    pieces = [answer[:7], answer[7:30], answer[30:-3], answer[-3:]]
    (first, second), connections = answers_of(pieces, [answer])
    assert first[1] == second[1] == b'{"score":4}'
    assert (first[0].status_code, first[0].reason, first[0].http_version) == (200, b"OK", b"1.1")
    assert (b"Content-Type", b"application/json") in first[0].headers
    assert connections == 1


def test_a_chunked_body_with_extensions_and_trailers_is_decoded_and_the_connection_kept():
    chunked = OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
    pieces = [chunked, b'b;ext=1\r\n{"sco', b're"', b":4}\r\n4\r\nabcd\r\n0\r\nX-Trailer: 1\r\n\r\n"]
    (first, second), connections = answers_of(pieces, [chunked + b"3\r\nxyz\r\n0\r\n\r\n"])
    assert (first[1], second[1]) == (b'{"score":4}abcd', b"xyz")
    assert connections == 1


def test_interim_answers_are_skipped():
    pieces = [b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"]
    pieces.append(OK_HEAD + b"Content-Length: 2\r\n\r\nok")
    [(answer, body)], _ = answers_of(pieces)
    assert (answer.status_code, body) == (200, b"ok")


def test_an_answer_without_length_is_read_to_the_close_and_its_connection_not_reused():
    old = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n"
    (first, second), connections = answers_of([old, b"all of ", b"it"], [old, b"again"], close=True)
    assert (first[1], second[1]) == (b"all of it", b"again")
    assert connections == 2


@pytest.mark.parametrize(
    "close", [b"Connection: close\r\n", b"connection: keep-alive, Close\r\n"], ids=["close", "a-list"]
)
def test_an_answer_that_says_close_leaves_its_connection_unused(close):
    answer = OK_HEAD + close + b"Content-Length: 2\r\n\r\nok"
    (first, second), connections = answers_of([answer], [answer], close=True)
    assert first[1] == second[1] == b"ok" and connections == 2


def test_answers_without_a_body_end_at_their_head():
    no_content = b"HTTP/1.1 204 No Content\r\n\r\n"
    (first, second), connections = answers_of([no_content], [OK_HEAD + b"Content-Length: 1\r\n\r\nx"])
    assert (first[0].status_code, first[1], second[1]) == (204, b"", b"x")
    assert connections == 1


def test_a_bare_newline_ends_lines_as_crlf_does():
    [(answer, body)], _ = answers_of([b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok"])
    assert (answer.status_code, body) == (200, b"ok")


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 OK\r\n\r\n",
        b"SPDY/3 200 OK\r\nContent-Length: 0\r\n\r\n",
        OK_HEAD + b"Content-Length: 2, 3\r\n\r\nok",
        OK_HEAD + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\nok",
        OK_HEAD + b"Content-Length: -1\r\n\r\n",
        OK_HEAD + b"Transfer-Encoding: gzip\r\n\r\n",
        OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n",
        OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n2\r\nokk0\r\n\r\n",
        OK_HEAD + b"Bad Header Name: " + SECRET.encode() + b"\r\nContent-Length: 0\r\n\r\n",
        OK_HEAD + b"X-Key: " + SECRET.encode() + b"\x00\r\nContent-Length: 0\r\n\r\n",
        OK_HEAD + b" folded: " + SECRET.encode() + b"\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
    ],
    ids=[
        "no-status-code",
        "not-http",
        "two-lengths-in-one",
        "two-lengths",
        "negative-length",
        "not-chunked",
        "bad-chunk-size",
        "chunk-overrun",
        "bad-name",
        "nul-in-value",
        "folded",
        "upgrade",
    ],
)
def test_an_answer_that_is_not_http_1_1_is_a_protocol_error_quoting_no_header(answer):
    with pytest.raises(httpx.RemoteProtocolError) as info:
        answers_of([answer])
    assert "not valid HTTP/1.1" in str(info.value) and SECRET not in str(info.value)


@pytest.mark.parametrize(
    "pieces",
    [
        [OK_HEAD + b"Content-Len"],
        [OK_HEAD + b"Content-Length: 10\r\n\r\nonly"],
        [OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n5\r\nab"],
    ],
    ids=["in-the-head", "in-a-sized-body", "in-a-chunked-body"],
)
def test_a_server_closing_before_its_answer_is_complete_is_a_protocol_error(pieces):
    with pytest.raises(httpx.RemoteProtocolError):
        answers_of(pieces, close=True)


def test_an_answer_past_the_size_cap_is_refused_whether_declared_chunked_or_read_to_the_close():
    declared = OK_HEAD + b"Content-Length: 100\r\n\r\n" + b"x" * 100
    chunked = OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + b"40\r\n" + b"x" * 64 + b"\r\n" * 2
    to_close = b"HTTP/1.0 200 OK\r\n\r\n" + b"x" * 100
    for answer in (declared, chunked, to_close):
        with pytest.raises(ReplyTooLarge):
            answers_of([answer], close=True, max_body=50)


def test_a_head_request_is_answered_by_a_head_alone():
    async def go():
        answer = OK_HEAD + b"Content-Length: 20\r\n\r\n"
        async with Scripted([[answer], [OK_HEAD + b"Content-Length: 2\r\n\r\nok"]]) as server:
            transport = PoolTransport(1)
            try:
                first = await exchange(server, transport, b"HEAD", b"")
                second = await exchange(server, transport)
            finally:
                await transport.aclose()
            return first[1], second[1], server.connections

    assert run(go()) == (b"", b"ok", 1)


def test_the_request_is_written_as_given_with_its_length():
    async def go():
        async with Scripted([[OK_HEAD + b"Content-Length: 0\r\n\r\n"]]) as server:
            transport = PoolTransport(1)
            try:
                await exchange(server, transport, body=b'{"a":1}')
            finally:
                await transport.aclose()
            return server.requests[0]

    assert run(go()) == (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Authorization: Bearer " + SECRET.encode() + b"\r\nContent-Length: 7\r\n\r\n" + b'{"a":1}'
    )


@pytest.mark.parametrize(
    "name, value",
    [(b"X-Key", SECRET.encode() + b"\r\nX-Injected: 1"), (b"X Key", SECRET.encode()), (b"", b"v")],
    ids=["newline-in-value", "space-in-name", "empty-name"],
)
def test_a_header_http_1_1_forbids_is_refused_without_quoting_it(name, value):
    with pytest.raises(httpx.LocalProtocolError) as info:
        header_lines([(name, value)])
    assert SECRET not in str(info.value)


@pytest.mark.parametrize("method, target", [(b"PO ST", b"/v1"), (b"POST", b"/v1 x"), (b"POST", b"")])
def test_a_request_line_http_1_1_forbids_is_refused(method, target):
    with pytest.raises(httpx.LocalProtocolError):
        request_head(method, target, b"")


def test_the_requests_deadline_ends_a_wait_its_read_timeout_would_not_end_yet():
    async def go():
        async with Scripted([[]]) as server:  # reads the request, never answers
            transport = PoolTransport(1)
            lines = header_lines([(b"Host", b"127.0.0.1")])
            head = request_head(b"POST", b"/v1/chat/completions", lines, 2)
            loop = asyncio.get_running_loop()
            try:
                with pytest.raises(TimeoutError):
                    await transport.exchange(
                        server.host, server.port, head, b"{}", {"read": 30.0}, deadline=loop.time() + 0.1
                    )
                # The pool's one connection went with the failed request: a
                # second request waits for the slot, and its deadline, not the
                # pool timeout, ends that wait too.
                blocker = asyncio.ensure_future(
                    transport.exchange(server.host, server.port, head, b"{}", {"read": 30.0})
                )
                await asyncio.sleep(0.05)
                with pytest.raises(TimeoutError):
                    await transport.exchange(
                        server.host, server.port, head, b"{}", {"pool": 30.0}, deadline=loop.time() + 0.1
                    )
                blocker.cancel()
            finally:
                await transport.aclose()

    run(go())  # within run's 20 s: the 30 s timeouts never applied
