"""A lean httpx transport for plain-HTTP servers: per-origin pools of
keep-alive HTTP/1.1 connections on asyncio, parsed by h11.

Why not httpx's default transport: its pool (httpcore) rechecks every pooled
connection on each request, which costs milliseconds of CPU per call at
dozens of calls in flight and caps a judge run far below what a local server
allows. This transport does only what the LLM client needs, cheaply: one
bounded pool per origin, idle connections reused last-in first-out (the
warmest first), request bodies sent whole, response bodies read in full
before the response is returned (so a connection is back in its pool at
once and no stream is ever left open), up to a size cap past which the
connection is closed and `ReplyTooLarge` raised.

It speaks plain HTTP only. TLS, and any request an environment proxy may
capture, stay with httpx's default transport: `direct_mounts` gives an
`httpx.AsyncClient` this transport for exactly the plain-http origins that
go direct, and the client's default transport serves everything else
(hosted APIs over https).

Failures are httpx's exceptions, so callers handle them as with any httpx
transport: `ConnectError`/`ConnectTimeout`, `PoolTimeout`, `WriteError`/
`WriteTimeout`, `ReadError`/`ReadTimeout`, `RemoteProtocolError`; and
`ReplyTooLarge`. No message ever quotes a header (the API key travels in one).
"""

from __future__ import annotations

import asyncio
import collections
import urllib.request
from collections.abc import Iterable

import h11
import httpx

_EXPIRED = object()  # what a waiter's future holds when its time ran out
# Idle connections older than this are closed rather than reused. Below the
# 5 s after which vLLM (uvicorn) and llama.cpp close idle connections
# themselves, so a request never races a server's close; and a connection a
# middlebox dropped silently is never waited on until the read timeout.
KEEPALIVE_EXPIRY = 4.0


class ReplyTooLarge(httpx.TransportError):
    """An answer larger than the caller accepts; its body was not read in full."""


def _expire(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(_EXPIRED)


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection. Bytes from the socket go straight into h11;
    a request waiting for them (or for the socket to drain) waits on a future
    that the socket's events resolve."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.h11 = h11.Connection(h11.CLIENT)
        self.transport: asyncio.Transport | None = None
        self.busy = False  # a request is using it
        self.idle_since = 0.0  # the loop's time when it was last released
        # False once the server closed it, sent bytes nobody asked for, or the socket broke.
        self.reusable = True
        self.eof = False  # the server closed its side (fed to h11 only once a request needs it)
        self.closed = loop.create_future()  # done when the socket is closed
        self._paused = False  # the socket's send buffer is full
        self._reader: asyncio.Future | None = None
        self._writer: asyncio.Future | None = None

    # asyncio.Protocol

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if not self.busy:
            self.reusable = False  # e.g. a 408 sent before closing an idle connection
        self.h11.receive_data(data)
        self._wake_reader()

    def eof_received(self) -> None:
        self.reusable = False
        self.eof = True
        self._wake_reader()
        # Returning None closes the socket: nothing can be sent after the server's FIN anyway.

    def connection_lost(self, exc: Exception | None) -> None:
        self.reusable = False
        self._paused = False
        self._wake_reader()
        self._wake_writer()
        if not self.closed.done():
            self.closed.set_result(None)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake_writer()

    # used by a request

    def close(self) -> None:
        """Close the socket now, whatever is buffered (the connection is
        being discarded, so nothing buffered is wanted)."""
        self.reusable = False
        if self.transport is not None:
            self.transport.abort()

    def write(self, data: bytes) -> bool:
        """Send `data`; False when the socket was found dead and not a byte of
        it went out (asyncio's first send then fails synchronously, closing
        the transport; a partial send buffers the rest instead)."""
        transport = self.transport
        assert transport is not None  # set when the connection was made, before any request
        if transport.is_closing():
            return False
        transport.write(data)
        return not transport.is_closing()

    async def drain(self, timeout: float | None) -> None:
        """Wait until the send buffer is below its high-water mark."""
        while self._paused:
            if not await self._wait("_writer", timeout):
                raise httpx.WriteTimeout("sending the request timed out")
        if self.closed.done() or self.transport is None or self.transport.is_closing():
            raise httpx.WriteError("the connection closed while the request was being sent")

    async def next_event(self, timeout: float | None):
        """The server's next h11 event (`h11.RemoteProtocolError` on a
        malformed answer, or the server closing mid-answer)."""
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            if self.eof:
                if self.h11.their_state is h11.SEND_RESPONSE:
                    raise httpx.RemoteProtocolError("the server closed the connection without answering")
                self.h11.receive_data(b"")  # h11 ends a body read to the close, or raises
                continue
            if self.closed.done():  # reset, or closed by us, without an EOF that h11 saw
                raise httpx.ReadError("the connection broke while waiting for the answer")
            if not await self._wait("_reader", timeout):
                raise httpx.ReadTimeout("the server did not answer in time")

    async def _wait(self, slot: str, timeout: float | None) -> bool:
        """Wait for the socket event that `slot` stands for; False on timeout."""
        fut = self.loop.create_future()
        setattr(self, slot, fut)
        timer = None if timeout is None else self.loop.call_later(timeout, _expire, fut)
        try:
            return await fut is not _EXPIRED
        finally:
            setattr(self, slot, None)
            if timer is not None:
                timer.cancel()

    def _wake_reader(self) -> None:
        if self._reader is not None and not self._reader.done():
            self._reader.set_result(True)

    def _wake_writer(self) -> None:
        if self._writer is not None and not self._writer.done():
            self._writer.set_result(True)


class _Pool:
    """The connections to one origin: at most `limit` open (or opening) at
    once; idle ones reused last-in first-out; a request that finds the limit
    reached waits, first come first served, for a connection or a free slot."""

    def __init__(self, host: str, port: int, limit: int, keepalive_expiry: float):
        self.host, self.port, self.limit = host, port, limit
        self.keepalive_expiry = keepalive_expiry
        self.idle: list[_Connection] = []
        self.open: set[_Connection] = set()
        self.slots = 0  # connections open or opening, counted against the limit
        self.closed = False
        # Each waiter's future gets a connection, None (a free slot), or _EXPIRED.
        self.waiters: collections.deque[asyncio.Future] = collections.deque()

    async def acquire(self, timeouts: dict) -> _Connection:
        """A connection for one request: the most recently used idle one that
        is still good, else a new one once the limit allows."""
        while self.idle:
            conn = self.idle.pop()
            if conn.reusable and conn.loop.time() - conn.idle_since < self.keepalive_expiry:
                return conn
            self._discard(conn)
            self._free()
        if self.slots < self.limit:
            self.slots += 1
            return await self.connect(timeouts)
        waited = await self._wait(timeouts.get("pool"))
        if waited is not None and waited.reusable:
            return waited
        if waited is not None:  # went bad between its release and now: a fresh one in its slot
            self._discard(waited)
        return await self.connect(timeouts)

    async def connect(self, timeouts: dict) -> _Connection:
        """A new connection in a slot already counted; the slot is given up
        if connecting fails."""
        loop = asyncio.get_running_loop()
        try:
            try:
                async with asyncio.timeout(timeouts.get("connect")):
                    _, conn = await loop.create_connection(lambda: _Connection(loop), self.host, self.port)
            except TimeoutError:  # before OSError: TimeoutError is one
                raise httpx.ConnectTimeout(f"connecting to {self.host}:{self.port} timed out") from None
            except OSError as exc:
                raise httpx.ConnectError(f"cannot connect to {self.host}:{self.port}: {exc.strerror or exc}") from None
        except BaseException:
            self._free()
            raise
        if self.closed:  # the transport was closed while this one was opening
            conn.close()
            self._free()
            raise RuntimeError("the HTTP transport was closed")
        self.open.add(conn)
        return conn

    async def replace(self, conn: _Connection, timeouts: dict) -> _Connection:
        """A fresh connection in the slot of `conn`, which is closed."""
        self._discard(conn)
        return await self.connect(timeouts)

    def release(self, conn: _Connection, keep: bool) -> None:
        """Give back a connection after a request: kept for the next one
        (handed straight to a waiter, if any) or closed, freeing its slot."""
        conn.busy = False
        if not (keep and conn.reusable) or self.closed:
            self._discard(conn)
            self._free()
            return
        while self.waiters:
            fut = self.waiters.popleft()
            if not fut.done():
                fut.set_result(conn)
                return
        conn.idle_since = conn.loop.time()
        self.idle.append(conn)

    def close(self) -> None:
        """Close every connection; requests waiting for one fail."""
        self.closed = True
        for conn in self.open:
            conn.close()
        self.idle.clear()
        while self.waiters:
            fut = self.waiters.popleft()
            if not fut.done():
                fut.set_exception(RuntimeError("the HTTP transport was closed"))

    async def _wait(self, timeout: float | None) -> _Connection | None:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self.waiters.append(fut)
        timer = None if timeout is None else loop.call_later(timeout, _expire, fut)
        try:
            got = await fut
        except asyncio.CancelledError:
            # Cancelled just after being handed a connection or a slot: pass it on.
            if fut.done() and not fut.cancelled() and fut.exception() is None and fut.result() is not _EXPIRED:
                if fut.result() is None:
                    self._free()
                else:
                    self.release(fut.result(), keep=True)
            raise
        finally:
            if timer is not None:
                timer.cancel()
        if got is _EXPIRED:
            raise httpx.PoolTimeout(f"no connection to {self.host}:{self.port} came free in time")
        return got

    def _discard(self, conn: _Connection) -> None:
        conn.close()
        self.open.discard(conn)

    def _free(self) -> None:
        """A slot came free: it goes to the first waiter, if any."""
        while self.waiters:
            fut = self.waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                return
        self.slots -= 1


class PoolTransport(httpx.AsyncBaseTransport):
    """An `httpx.AsyncBaseTransport` for plain-http URLs: keep-alive
    HTTP/1.1 connections, at most `max_per_origin` to each origin, each
    reused while idle for less than `keepalive_expiry` seconds. A response
    body larger than `max_body` bytes (None: no cap) raises ReplyTooLarge."""

    def __init__(
        self, max_per_origin: int = 16, keepalive_expiry: float = KEEPALIVE_EXPIRY, max_body: int | None = None
    ):
        if max_per_origin < 1:
            raise ValueError("max_per_origin must be at least 1")
        self.max_per_origin = max_per_origin
        self.max_body = max_body
        self.keepalive_expiry = keepalive_expiry
        self._pools: dict[tuple[str, int], _Pool] = {}
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme != "http":
            raise httpx.UnsupportedProtocol(f"this transport speaks plain http, not {url.scheme}")
        timeouts = request.extensions.get("timeout") or {}
        head = _head(request)
        try:
            body = request.content  # JSON and other bytes bodies are read already
        except httpx.RequestNotRead:
            body = None  # a streamed body, sent as it comes
        answer, content = await self.exchange(url.host, url.port or 80, head, body, timeouts, request.stream)
        return httpx.Response(
            answer.status_code,
            headers=answer.headers.raw_items(),
            stream=httpx.ByteStream(content),
            request=request,
            extensions={"http_version": b"HTTP/" + answer.http_version, "reason_phrase": answer.reason},
        )

    async def exchange(
        self, host: str, port: int, head: h11.Request, body: bytes | None, timeouts: dict, stream=None
    ) -> tuple[h11.Response, bytes]:
        """One request to `host:port` and its whole answer: (the answer's
        head, its body). `body` None sends `stream` (an async iterable of
        bytes) instead. What `handle_async_request` does without httpx's
        request and response objects: the LLM client's plain-http calls
        come straight here, as httpx's client costs more CPU per call than
        this whole transport."""
        if self._closed:
            raise RuntimeError("the HTTP transport was closed")
        key = (host, port)
        pool = self._pools.get(key)
        if pool is None:
            pool = self._pools[key] = _Pool(host, port, self.max_per_origin, self.keepalive_expiry)
        conn: _Connection | None
        conn = await pool.acquire(timeouts)
        try:
            if not _begin(conn, head, body):
                # The server closed this idle connection and not a byte of
                # the request went out, so it cannot have seen it: once more,
                # on a fresh connection. (Once bytes went out, a failure is
                # raised as it is: a POST is never resent behind the caller's
                # back.)
                stale, conn = conn, None
                conn = await pool.replace(stale, timeouts)  # frees the slot if it fails
                if not _begin(conn, head, body):
                    raise httpx.WriteError(f"{host}:{port} closed the connection before the request could be sent")
            answer = await _exchange(conn, stream if body is None else None, timeouts, self.max_body)
        except BaseException as exc:
            if conn is not None:
                pool.release(conn, keep=False)
            if isinstance(exc, h11.RemoteProtocolError):
                raise httpx.RemoteProtocolError(f"the server's answer is not valid HTTP/1.1: {exc}") from None
            if isinstance(exc, h11.LocalProtocolError):
                raise httpx.LocalProtocolError("the request is not valid HTTP/1.1") from None
            raise
        # Kept when both sides allow keep-alive and nothing unasked-for followed the answer.
        pool.release(conn, keep=conn.h11.our_state is h11.IDLE and not conn.h11.trailing_data[0])
        return answer

    async def aclose(self) -> None:
        """Close every connection, and wait until their sockets are closed."""
        self._closed = True
        waiting: list[asyncio.Future[None]] = []
        for pool in self._pools.values():
            waiting.extend(conn.closed for conn in pool.open)
            pool.close()
        self._pools.clear()
        if waiting:
            await asyncio.gather(*waiting)


def _head(request: httpx.Request) -> h11.Request:
    return request_head(request.method, request.url.raw_path, request.headers.raw)


def request_head(method: str | bytes, target: bytes, headers) -> h11.Request:
    """An h11 request head; httpx's LocalProtocolError for a header that
    HTTP/1.1 does not allow."""
    try:
        return h11.Request(method=method, target=target, headers=headers)
    except h11.LocalProtocolError:
        # h11's message would quote the offending header, which may be the key.
        raise httpx.LocalProtocolError("the request has a header that HTTP/1.1 does not allow") from None


def _begin(conn: _Connection, head: h11.Request, body: bytes | None) -> bool:
    """Start the request on `conn`: the head, and the whole body when it is
    bytes, in one write. False when not a byte could be sent."""
    conn.busy = True
    data = conn.h11.send(head)
    if body is not None:
        if body:
            data += conn.h11.send(h11.Data(data=body))
        data += conn.h11.send(h11.EndOfMessage())
    return conn.write(data)


async def _exchange(conn: _Connection, stream, timeouts: dict, max_body: int | None) -> tuple[h11.Response, bytes]:
    """Finish sending the request (the rest of its body is `stream`, if
    not None), then read the whole answer (at most `max_body` bytes of
    body). The connection is left ready for the next request (h11 in state
    IDLE) when both sides allow keep-alive."""
    write_timeout, read_timeout = timeouts.get("write"), timeouts.get("read")
    if stream is not None:
        async for chunk in stream:
            if chunk and not conn.write(conn.h11.send(h11.Data(data=chunk))):
                raise httpx.WriteError("the connection closed while the request was being sent")
            await conn.drain(write_timeout)
        if not conn.write(conn.h11.send(h11.EndOfMessage())):
            raise httpx.WriteError("the connection closed while the request was being sent")
    await conn.drain(write_timeout)
    event = await conn.next_event(read_timeout)
    while isinstance(event, h11.InformationalResponse):  # 100 Continue and the like
        event = await conn.next_event(read_timeout)
    if isinstance(event, h11.ConnectionClosed):
        raise httpx.RemoteProtocolError("the server closed the connection without answering")
    head = event
    if max_body is not None:
        declared = dict(head.headers).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > max_body:
            raise ReplyTooLarge(f"the answer is {int(declared)} bytes, more than {max_body}")
    chunks, size = [], 0
    while True:
        event = await conn.next_event(read_timeout)
        if isinstance(event, h11.Data):
            size += len(event.data)
            if max_body is not None and size > max_body:
                raise ReplyTooLarge(f"the answer passed {max_body} bytes")
            chunks.append(event.data)
        elif isinstance(event, h11.EndOfMessage):
            break
    if conn.h11.our_state is h11.DONE and conn.h11.their_state is h11.DONE:
        conn.h11.start_next_cycle()
    return head, b"".join(chunks)


def direct_mounts(
    urls: Iterable[str], transport: httpx.AsyncBaseTransport, trust_env: bool
) -> dict[str, httpx.AsyncBaseTransport]:
    """`httpx.AsyncClient(mounts=...)` that route the plain-http origins of
    `urls` through `transport`. An origin stays with the client's default
    transport when it is https (TLS is httpx's job) or when, trusting the
    environment, an HTTP_PROXY or ALL_PROXY may capture it (proxies are httpx's
    job too). Mounts keyed by origin outrank any pattern from the
    environment, NO_PROXY's included."""
    if trust_env and {"http", "all"} & urllib.request.getproxies().keys():
        return {}
    out: dict[str, httpx.AsyncBaseTransport] = {}
    for url in map(httpx.URL, urls):
        if url.scheme == "http":
            out[f"http://{url.netloc.decode('ascii')}"] = transport
    return out


__all__ = ["PoolTransport", "ReplyTooLarge", "direct_mounts", "request_head"]
