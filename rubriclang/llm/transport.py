"""The LLM client's HTTP: per-origin pools of keep-alive HTTP/1.1
connections on asyncio, plain or over TLS.

Why not httpx's default transport: its pool (httpcore) rechecks every pooled
connection on each request, which costs milliseconds of CPU per call at
dozens of calls in flight and caps a judge run far below what a local server
allows. This transport does only what the LLM client needs, cheaply: one
bounded pool per origin, idle connections reused last-in first-out (the
warmest first), request bodies sent whole, response bodies read in full
before the response is returned (so a connection is back in its pool at
once and no stream is ever left open), up to a size cap past which the
connection is closed and `ReplyTooLarge` raised.

HTTP/1.1 is written and read here (`_read_answer`), not by h11: a client
that sends one request at a time and reads answers whole needs a small part
of it, and h11's general state machine cost more CPU per call than the rest
of the call path. What is read is what RFC 9112 allows a client to receive:
interim (1xx) answers skipped, bodies framed by `Transfer-Encoding: chunked`,
`Content-Length` or the connection's close, answers without a body (HEAD,
204, 304), keep-alive unless either side says `close` or the server speaks
HTTP/1.0; anything malformed is a `RemoteProtocolError`.

It serves every origin, http and https alike (benchmarks/README.md,
"Home-made parts and what they earn", has what it saves over httpx's pool);
TLS is asyncio's, with httpx's context (its CA bundle, or `SSL_CERT_FILE` /
`SSL_CERT_DIR`). Through an http:// proxy from the environment
(`proxy_for`), an https origin is reached through a `CONNECT` tunnel and an
http one by absolute-form requests. Under `RBG_PLAIN_LIBS=http` the client
sends every request through httpx's own client and transport instead.

Failures are httpx's exceptions, so callers handle them as with any httpx
transport: `ConnectError`/`ConnectTimeout`, `PoolTimeout`, `WriteError`/
`WriteTimeout`, `ReadError`/`ReadTimeout`, `RemoteProtocolError`,
`LocalProtocolError`; and `ReplyTooLarge`. No message ever quotes a header
(the API key travels in one).
"""

from __future__ import annotations

import asyncio
import base64
import collections
import functools
import re
import ssl
import time
import urllib.parse
import urllib.request
import zlib
from collections.abc import Iterable
from typing import NamedTuple

import httpx

_EXPIRED = object()  # what a waiter's future holds when its time ran out
_CLOCK_RESOLUTION = time.get_clock_info("monotonic").resolution  # the loop's clock
# Idle connections older than this are closed rather than reused. Below the
# 5 s after which vLLM (uvicorn) and llama.cpp close idle connections
# themselves, so a request never races a server's close; and a connection a
# middlebox dropped silently is never waited on until the read timeout.
KEEPALIVE_EXPIRY = 4.0


class ReplyTooLarge(httpx.TransportError):
    """An answer larger than the caller accepts; its body was not read in full."""


class UnreadableEncoding(httpx.DecodingError):
    """An answer in a content encoding this client does not read (anything
    but gzip, deflate or none, or several stacked), or compressed data that
    is corrupt or cut short."""


# The content encodings read (`Accept-Encoding` where compression is asked
# for): zlib's, which can be inflated a bounded step at a time.
ACCEPTED_ENCODINGS = "gzip, deflate"
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class BodyDecoder:
    """A body's bytes as sent (`feed`), its content as meant (`finish`),
    decoded as they come, a bounded step at a time: past `cap` decoded bytes
    (None: no cap) it raises ReplyTooLarge, before more than the cap is ever
    held, so a small compressed answer cannot swell into gigabytes. The cap
    counts the sent bytes too. `encoding` is the answer's `Content-Encoding`
    (None or `identity`: as sent); others raise UnreadableEncoding."""

    def __init__(self, encoding: str | None, cap: int | None):
        name = (encoding or "identity").strip().lower()
        if name != "identity" and name not in _WBITS:
            shown = name if len(name) <= 40 and name.isprintable() else "an unknown one"
            stacked = "several stacked encodings" if "," in name else "an encoding this client does not read"
            raise UnreadableEncoding(f"its content encoding `{shown}` is {stacked} (it reads {ACCEPTED_ENCODINGS})")
        self.cap = cap
        self.name = name
        self._inflate = None if name == "identity" else zlib.decompressobj(_WBITS[name])
        self._parts: list[bytes] = []
        self._sent = self._size = 0
        self._raw_deflate = name == "deflate"  # until the first bytes show a zlib header

    def feed(self, data: bytes) -> None:
        self._sent += len(data)
        if self.cap is not None and self._sent > self.cap:
            raise ReplyTooLarge(f"the answer passed {self.cap} bytes")
        if self._inflate is None:
            self._keep(data)
            return
        if self._raw_deflate and data:
            # `deflate` is zlib data by the standard, raw deflate data by some
            # servers' reading of it: the first byte tells them apart, as httpx does.
            self._raw_deflate = False
            if data[0] & 0x0F != 8:
                self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)
        inflate = self._inflate
        try:
            while data:
                room = 0 if self.cap is None else self.cap - self._size + 1  # 0: no bound
                self._keep(inflate.decompress(data, room))
                data = inflate.unconsumed_tail
        except zlib.error:
            raise UnreadableEncoding(f"its {self.name} data is corrupt") from None

    def finish(self) -> bytes:
        """The whole decoded content."""
        if self._inflate is not None:
            try:
                self._keep(self._inflate.flush())
            except zlib.error:
                raise UnreadableEncoding(f"its {self.name} data is corrupt") from None
            if self._sent and not self._inflate.eof:
                raise UnreadableEncoding(f"its {self.name} data is cut short")
        return b"".join(self._parts)

    def _keep(self, part: bytes) -> None:
        self._size += len(part)
        if self.cap is not None and self._size > self.cap:
            raise ReplyTooLarge(f"the answer passed {self.cap} bytes once decoded")
        if part:
            self._parts.append(part)


def decoded(encoding: str | None, body: bytes, cap: int | None) -> bytes:
    """`body`, sent in `encoding`, decoded within `cap` (see BodyDecoder)."""
    decoder = BodyDecoder(encoding, cap)
    decoder.feed(body)
    return decoder.finish()


def _expire(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(_EXPIRED)


def _bounded(
    loop: asyncio.AbstractEventLoop, timeout: float | None, deadline: float | None
) -> tuple[float | None, bool]:
    """How long a wait may last: `timeout`, or less where the request's
    `deadline` (the loop's time) comes first; and whether the deadline is
    what bounds it (its expiry then raises TimeoutError, as `asyncio.timeout`
    would: one timer per wait instead of two)."""
    if deadline is None:
        return timeout, False
    left = deadline - loop.time()
    if timeout is not None and timeout <= left:
        return timeout, False
    return max(0.0, left), True


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection. Bytes from the socket are kept in `buffer`
    until a request reads them; a request waiting for them (or for the
    socket to drain) waits on a future that the socket's events resolve."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.buffer = bytearray()  # received, not yet read
        self.transport: asyncio.Transport | None = None
        self.busy = False  # a request is using it
        self.idle_since = 0.0  # the loop's time when it was last released
        # False once the server closed it, sent bytes nobody asked for, or the socket broke.
        self.reusable = True
        self.eof = False  # the server closed its side
        self.closed = loop.create_future()  # done when the socket is closed
        self._paused = False  # the socket's send buffer is full
        self.deadline: float | None = None  # the loop's time by which the current request must be done
        self._reader: asyncio.Future | None = None
        self._writer: asyncio.Future | None = None
        # The wait that may expire, and when; the one timer that checks it (see `_wait`).
        self._expiring: asyncio.Future | None = None
        self._expires = 0.0
        self._timer: asyncio.TimerHandle | None = None

    # asyncio.Protocol

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if not self.busy:
            self.reusable = False  # e.g. a 408 sent before closing an idle connection
        self.buffer += data
        self._wake_reader()

    def eof_received(self) -> None:
        self.reusable = False
        self.eof = True
        self._wake_reader()
        # Returning None closes the socket: nothing can be sent after the server's FIN anyway.

    def connection_lost(self, exc: Exception | None) -> None:
        self.reusable = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
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

    async def receive(self, timeout: float | None) -> bool:
        """Wait for more bytes in `buffer`; False when the server has closed
        its side instead (what it sent before is still in `buffer`)."""
        if self.eof:
            return False
        if self.closed.done():  # reset, or closed by us, without an EOF
            raise httpx.ReadError("the connection broke while waiting for the answer")
        if not await self._wait("_reader", timeout):
            raise httpx.ReadTimeout("the server did not answer in time")
        return True

    async def _wait(self, slot: str, timeout: float | None) -> bool:
        """Wait for the socket event that `slot` stands for; False on
        timeout, TimeoutError past the request's deadline."""
        loop = self.loop
        fut = loop.create_future()
        setattr(self, slot, fut)
        limit, by_deadline = _bounded(loop, timeout, self.deadline)
        if limit is not None:
            # One timer per connection, not one per wait (a wait is a few
            # milliseconds; a timeout, seconds): it is set again only when it
            # would fire late, and when it fires early, for a later wait,
            # `_check_expiry` sets it for that wait's time.
            self._expiring, self._expires = fut, loop.time() + limit
            if self._timer is None or self._timer.when() > self._expires:
                if self._timer is not None:
                    self._timer.cancel()
                self._timer = loop.call_at(self._expires, self._check_expiry)
        try:
            if await fut is not _EXPIRED:
                return True
        finally:
            setattr(self, slot, None)
            self._expiring = None
        if by_deadline:
            raise TimeoutError
        return False

    def _check_expiry(self) -> None:
        self._timer = None
        fut = self._expiring
        if fut is None or fut.done():
            return
        # The loop runs a timer up to its clock's resolution early, as it would `call_later`'s.
        if self.loop.time() + _CLOCK_RESOLUTION >= self._expires:
            _expire(fut)
        else:
            self._timer = self.loop.call_at(self._expires, self._check_expiry)

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

    def __init__(
        self,
        host: str,
        port: int,
        limit: int,
        keepalive_expiry: float,
        tls: ssl.SSLContext | None,
        proxy: Proxy | None = None,
    ):
        self.host, self.port, self.limit = host, port, limit
        self.tls = tls  # None: plain http
        self.proxy = proxy
        self.name = f"{host}:{port}" if proxy is None else f"{host}:{port} through the proxy {proxy.host}:{proxy.port}"
        self.keepalive_expiry = keepalive_expiry
        self.idle: list[_Connection] = []
        self.open: set[_Connection] = set()
        self.slots = 0  # connections open or opening, counted against the limit
        self.closed = False
        # Each waiter's future gets a connection, None (a free slot), or _EXPIRED.
        self.waiters: collections.deque[asyncio.Future] = collections.deque()

    async def acquire(self, timeouts: dict, deadline: float | None = None) -> _Connection:
        """A connection for one request: the most recently used idle one that
        is still good, else a new one once the limit allows; TimeoutError
        past `deadline` (the loop's time)."""
        while self.idle:
            conn = self.idle.pop()
            if conn.reusable and conn.loop.time() - conn.idle_since < self.keepalive_expiry:
                return conn
            self._discard(conn)
            self._free()
        if self.slots < self.limit:
            self.slots += 1
            return await self.connect(timeouts, deadline)
        waited = await self._wait(timeouts.get("pool"), deadline)
        if waited is not None and waited.reusable:
            return waited
        if waited is not None:  # went bad between its release and now: a fresh one in its slot
            self._discard(waited)
        return await self.connect(timeouts, deadline)

    async def connect(self, timeouts: dict, deadline: float | None = None) -> _Connection:
        """A new connection in a slot already counted; the slot is given up
        if connecting fails."""
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout_at(deadline):  # outside: its expiry is TimeoutError, not ConnectTimeout
                try:
                    async with asyncio.timeout(timeouts.get("connect")):
                        conn = await self._open(loop, timeouts.get("connect"))
                except TimeoutError:  # before OSError: TimeoutError is one
                    raise httpx.ConnectTimeout(f"connecting to {self.name} timed out") from None
                except OSError as exc:
                    raise httpx.ConnectError(f"cannot connect to {self.name}: {exc.strerror or exc}") from None
        except BaseException:
            self._free()
            raise
        if self.closed:  # the transport was closed while this one was opening
            conn.close()
            self._free()
            raise RuntimeError("the HTTP transport was closed")
        self.open.add(conn)
        return conn

    async def _open(self, loop: asyncio.AbstractEventLoop, timeout: float | None) -> _Connection:
        """A connection to the origin: straight to it, or to the proxy, and
        for https through a tunnel the proxy opens (`CONNECT`)."""
        proxy = self.proxy
        if proxy is None:
            server = self.host if self.tls is not None else None
            _, conn = await loop.create_connection(
                lambda: _Connection(loop), self.host, self.port, ssl=self.tls, server_hostname=server
            )
            return conn
        _, conn = await loop.create_connection(lambda: _Connection(loop), proxy.host, proxy.port)
        if self.tls is None:
            return conn
        try:
            await _tunnel(conn, self.host, self.port, proxy, timeout)
            assert conn.transport is not None
            tls = await loop.start_tls(conn.transport, conn, self.tls, server_hostname=self.host)
        except BaseException:
            conn.close()
            raise
        if tls is None:  # the connection closed during the handshake
            raise ConnectionResetError("the proxy's tunnel closed during the TLS handshake")
        conn.transport = tls
        return conn

    async def replace(self, conn: _Connection, timeouts: dict, deadline: float | None = None) -> _Connection:
        """A fresh connection in the slot of `conn`, which is closed."""
        self._discard(conn)
        return await self.connect(timeouts, deadline)

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

    async def _wait(self, timeout: float | None, deadline: float | None) -> _Connection | None:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self.waiters.append(fut)
        limit, by_deadline = _bounded(loop, timeout, deadline)
        timer = None if limit is None else loop.call_later(limit, _expire, fut)
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
        if got is _EXPIRED and by_deadline:
            raise TimeoutError
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
    """An `httpx.AsyncBaseTransport` for http and https URLs: keep-alive
    HTTP/1.1 connections, at most `max_per_origin` to each origin, each
    reused while idle for less than `keepalive_expiry` seconds. A response
    body larger than `max_body` bytes (None: no cap), as sent or once
    decoded (gzip, deflate), raises ReplyTooLarge."""

    def __init__(
        self, max_per_origin: int = 16, keepalive_expiry: float = KEEPALIVE_EXPIRY, max_body: int | None = None
    ):
        if max_per_origin < 1:
            raise ValueError("max_per_origin must be at least 1")
        self.max_per_origin = max_per_origin
        self.max_body = max_body
        self.keepalive_expiry = keepalive_expiry
        self._pools: dict[tuple[str, int, bool, Proxy | None], _Pool] = {}
        self._closed = False
        self._tls: ssl.SSLContext | None = None  # made for the first https origin (loading CAs takes milliseconds)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"this transport speaks http and https, not {url.scheme}")
        timeouts = request.extensions.get("timeout") or {}
        head = request_head(request.method.encode("ascii"), url.raw_path, header_lines(request.headers.raw))
        try:
            body = request.content  # JSON and other bytes bodies are read already
        except httpx.RequestNotRead:
            body = None  # a streamed body, sent as it comes
        tls = url.scheme == "https"
        port = url.port or (443 if tls else 80)
        answer, content = await self.exchange(url.host, port, head, body, timeouts, request.stream, tls=tls)
        headers = answer.headers
        encodings = [v.decode("latin-1") for k, v in headers if k.lower() == b"content-encoding"]
        if encodings:  # decoded here, within the cap on decoded bytes, not by httpx after it
            content = decoded(", ".join(encodings), content, self.max_body)
            headers = [(k, v) for k, v in headers if k.lower() not in (b"content-encoding", b"content-length")]
        return httpx.Response(
            answer.status_code,
            headers=headers,
            stream=httpx.ByteStream(content),
            request=request,
            extensions={"http_version": b"HTTP/" + answer.http_version, "reason_phrase": answer.reason},
        )

    async def exchange(
        self,
        host: str,
        port: int,
        head: RequestHead,
        body: bytes | None,
        timeouts: dict,
        stream=None,
        deadline: float | None = None,
        tls: bool = False,
        proxy: Proxy | None = None,
    ) -> tuple[Answer, bytes]:
        """One request to `host:port` (over TLS when `tls`; through `proxy`
        when given) and its whole answer: (the answer's head, its body).
        `body` None sends `stream` (an async iterable of bytes) instead.
        TimeoutError once the loop's time passes `deadline`, as inside
        `asyncio.timeout_at(deadline)`, but with no timer of its own. What
        `handle_async_request` does without httpx's request and response
        objects: the LLM client's calls come straight here, as httpx's client
        costs more CPU per call than this whole transport."""
        if self._closed:
            raise RuntimeError("the HTTP transport was closed")
        key = (host, port, tls, proxy)
        pool = self._pools.get(key)
        if pool is None:
            if tls and self._tls is None:
                self._tls = tls_context()
            context = self._tls if tls else None
            pool = self._pools[key] = _Pool(host, port, self.max_per_origin, self.keepalive_expiry, context, proxy)
        if proxy is not None and not tls:
            head = _absolute(head, host, port, proxy)
        conn: _Connection | None
        conn = await pool.acquire(timeouts, deadline)
        try:
            conn.deadline = deadline
            if not _begin(conn, head, body):
                # The server closed this idle connection and not a byte of
                # the request went out, so it cannot have seen it: once more,
                # on a fresh connection. (Once bytes went out, a failure is
                # raised as it is: a POST is never resent behind the caller's
                # back.)
                stale, conn = conn, None
                conn = await pool.replace(stale, timeouts, deadline)  # frees the slot if it fails
                conn.deadline = deadline
                if not _begin(conn, head, body):
                    raise httpx.WriteError(f"{host}:{port} closed the connection before the request could be sent")
            if body is None:
                await _send_stream(conn, stream, head.chunked, timeouts.get("write"))
            await conn.drain(timeouts.get("write"))
            answer, content, keep = await _read_answer(conn, head, timeouts.get("read"), self.max_body)
        except BaseException:
            if conn is not None:
                pool.release(conn, keep=False)
            raise
        # Kept when both sides allow keep-alive and nothing unasked-for followed the answer.
        pool.release(conn, keep=keep and not conn.buffer)
        return answer, content

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


class RequestHead(NamedTuple):
    """A request's head as sent (`data`), and what reading its answer needs
    to know of it: its method, whether a streamed body goes in chunks
    (`Transfer-Encoding: chunked`), and whether it asks to close the
    connection after the answer."""

    data: bytes
    method: bytes
    chunked: bool = False
    close: bool = False


class Answer(NamedTuple):
    """The head of a server's answer: its headers as received (name, value)."""

    status_code: int
    reason: bytes
    http_version: bytes  # b"1.1"
    headers: list[tuple[bytes, bytes]]


# RFC 9110's token (method, header name) and field value, and RFC 9112's lines.
_TOKEN = re.compile(rb"[-!#$%&'*+.^_`|~0-9A-Za-z]+")
_FIELD_VALUE = re.compile(rb"[\t\x20-\x7e\x80-\xff]*")
_TARGET = re.compile(rb"[\x21-\x7e\x80-\xff]+")
_STATUS_LINE = re.compile(rb"HTTP/(\d\.\d) ([0-9]{3})(?: ([\t\x20-\x7e\x80-\xff]*))?")
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})[\t ]*(?:;[^\r\n]*)?")
_MAX_HEAD = 64 * 1024  # the longest answer head (or chunk-size line) read before giving up on it


def header_lines(headers: Iterable[tuple[bytes, bytes]]) -> bytes:
    """`Name: value` and CRLF for each header, ready for `request_head`; httpx's
    LocalProtocolError for a name or value that HTTP/1.1 does not allow."""
    out = []
    for name, value in headers:
        if not _TOKEN.fullmatch(name) or not _FIELD_VALUE.fullmatch(value):
            # Never quoted: the offending header may be the key.
            raise httpx.LocalProtocolError("the request has a header that HTTP/1.1 does not allow")
        out.append(b"%s: %s\r\n" % (name, value.strip(b" \t")))
    return b"".join(out)


def request_head(method: bytes, target: bytes, lines: bytes, length: int | None = None) -> RequestHead:
    """The head of a request: `lines` from `header_lines`, then a
    `Content-Length` of `length` bytes when given."""
    start, chunked, close = _request_start(method, target, lines)
    data = start + b"\r\n" if length is None else b"%sContent-Length: %d\r\n\r\n" % (start, length)
    return RequestHead(data, method, chunked, close)


@functools.lru_cache(maxsize=256)  # a client sends the same few request lines and headers again and again
def _request_start(method: bytes, target: bytes, lines: bytes) -> tuple[bytes, bool, bool]:
    """The request line and `lines`, and whether they say the body is
    chunked, and that the connection is to close after the answer."""
    if not _TOKEN.fullmatch(method) or not _TARGET.fullmatch(target):
        raise httpx.LocalProtocolError("the request line is not valid HTTP/1.1")
    names = lines.lower()
    start = b"%s %s HTTP/1.1\r\n%s" % (method, target, lines)
    return start, b"\ntransfer-encoding:" in b"\n" + names, _says_close(names, b"connection:")


def _says_close(lines: bytes, field: bytes) -> bool:
    """Whether the (lower-case) header lines hold a `Connection: close`."""
    at = lines.find(field)
    while at != -1:
        if at == 0 or lines[at - 1 : at] == b"\n":
            value = lines[at + len(field) : lines.find(b"\n", at)]
            if b"close" in (v.strip(b" \t\r") for v in value.split(b",")):
                return True
        at = lines.find(field, at + 1)
    return False


def _begin(conn: _Connection, head: RequestHead, body: bytes | None) -> bool:
    """Start the request on `conn`: the head, and the whole body when it is
    bytes, in one write. False when not a byte could be sent."""
    conn.busy = True
    return conn.write(head.data + body if body else head.data)


async def _send_stream(conn: _Connection, stream, chunked: bool, timeout: float | None) -> None:
    """The rest of a request whose body is `stream`: its parts as they come,
    in chunks when the head says so."""
    async for part in stream:
        if part and not conn.write(b"%x\r\n%s\r\n" % (len(part), part) if chunked else part):
            raise httpx.WriteError("the connection closed while the request was being sent")
        await conn.drain(timeout)
    if chunked and not conn.write(b"0\r\n\r\n"):
        raise httpx.WriteError("the connection closed while the request was being sent")


def _bad(what: str) -> httpx.RemoteProtocolError:
    # `what` names the fault, never a header's text (a server may echo the key).
    return httpx.RemoteProtocolError(f"the server's answer is not valid HTTP/1.1: {what}")


async def _read_answer(
    conn: _Connection, request: RequestHead, timeout: float | None, max_body: int | None
) -> tuple[Answer, bytes, bool]:
    """The answer to `request` (interim answers skipped), its whole body (at
    most `max_body` bytes), and whether the connection may be kept for the
    next request."""
    while True:
        status, lines = await _read_head(conn, timeout)
        code = int(status.group(2))
        if code >= 200:
            break
        if code == 101:
            raise _bad("it switches protocols, which was never asked for")
    version = status.group(1)
    headers, length, chunked, close = _fields(lines)
    keep = version == b"1.1" and not close and not request.close
    answer = Answer(code, status.group(3) or b"", version, headers)
    if request.method == b"HEAD" or code in (204, 304):
        return answer, b"", keep
    if chunked:
        return answer, await _read_chunked(conn, timeout, max_body), keep
    if length is None:  # the body ends where the server closes the connection
        return answer, await _read_to_close(conn, timeout, max_body), False
    if max_body is not None and length > max_body:
        raise ReplyTooLarge(f"the answer is {length} bytes, more than {max_body}")
    buf = conn.buffer
    while len(buf) < length:
        if not await conn.receive(timeout):
            raise _bad("the server closed the connection before the whole body came")
    content = bytes(buf[:length])
    del buf[:length]
    return answer, content, keep


async def _read_head(conn: _Connection, timeout: float | None) -> tuple[re.Match, list[bytes]]:
    """The next answer head: its status line's match, and its header lines."""
    buf = conn.buffer
    end = _HEAD_END.search(buf)
    while end is None:
        if len(buf) > _MAX_HEAD:
            raise _bad("its head is too long")
        searched = max(0, len(buf) - 3)  # the head's end may start in what came before
        if not await conn.receive(timeout):
            if buf:
                raise _bad("it ends inside its head")
            raise httpx.RemoteProtocolError("the server closed the connection without answering")
        end = _HEAD_END.search(buf, searched)
    lines = bytes(buf[: end.start()]).split(b"\n")
    del buf[: end.end()]
    status = _STATUS_LINE.fullmatch(lines[0].rstrip(b"\r"))
    if status is None:
        raise _bad("its status line is malformed")
    return status, lines[1:]


def _fields(lines: list[bytes]) -> tuple[list[tuple[bytes, bytes]], int | None, bool, bool]:
    """An answer's header fields (name, value), and what frames its body:
    its Content-Length, whether it is chunked, whether it says close."""
    headers = []
    length: int | None = None
    chunked = close = False
    for line in lines:
        name, colon, value = line.rstrip(b"\r").partition(b":")
        value = value.strip(b" \t")
        if not colon or not _TOKEN.fullmatch(name) or not _FIELD_VALUE.fullmatch(value):
            raise _bad("a header line is malformed")
        headers.append((name, value))
        lower = name.lower()
        if lower == b"content-length":
            values = {v.strip(b" \t") for v in value.split(b",")}
            declared = values.pop() if len(values) == 1 else b""
            if not declared.isdigit() or (length is not None and int(declared) != length):
                raise _bad("its Content-Length is not one number")
            length = int(declared)
        elif lower == b"transfer-encoding":
            if value.lower() != b"chunked" or chunked:
                raise _bad("its Transfer-Encoding is not chunked")
            chunked = True
        elif lower == b"connection":
            close = close or b"close" in (v.strip(b" \t").lower() for v in value.split(b","))
    return headers, length, chunked, close


async def _read_to_close(conn: _Connection, timeout: float | None, max_body: int | None) -> bytes:
    buf = conn.buffer
    while await conn.receive(timeout):
        if max_body is not None and len(buf) > max_body:
            raise ReplyTooLarge(f"the answer passed {max_body} bytes")
    if max_body is not None and len(buf) > max_body:
        raise ReplyTooLarge(f"the answer passed {max_body} bytes")
    content = bytes(buf)
    del buf[:]
    return content


async def _read_chunked(conn: _Connection, timeout: float | None, max_body: int | None) -> bytes:
    """A chunked body, decoded; the trailer section after it is read and dropped."""
    buf = conn.buffer
    chunks, size = [], 0

    async def line() -> bytes:
        at = buf.find(b"\n")
        while at == -1:
            if len(buf) > _MAX_HEAD:
                raise _bad("a chunk-size or trailer line is too long")
            if not await conn.receive(timeout):
                raise _bad("the server closed the connection before the whole body came")
            at = buf.find(b"\n")
        out = bytes(buf[:at]).rstrip(b"\r")
        del buf[: at + 1]
        return out

    while True:
        m = _CHUNK_SIZE.fullmatch(await line())
        if m is None:
            raise _bad("a chunk-size line is malformed")
        n = int(m.group(1), 16)
        if n == 0:
            break
        size += n
        if max_body is not None and size > max_body:
            raise ReplyTooLarge(f"the answer passed {max_body} bytes")
        while len(buf) < n + 2:
            if not await conn.receive(timeout):
                raise _bad("the server closed the connection before the whole body came")
        if buf[n : n + 2] != b"\r\n" and buf[n : n + 1] != b"\n":
            raise _bad("a chunk does not end where its size says")
        chunks.append(bytes(buf[:n]))
        del buf[: n + (2 if buf[n : n + 1] == b"\r" else 1)]
    while await line():  # trailer fields, up to the blank line that ends the body
        pass
    return b"".join(chunks)


def tls_context() -> ssl.SSLContext:
    """The TLS context of https origins, on either path: httpx's (certificate
    checks on, its CA bundle, or the one `SSL_CERT_FILE` or `SSL_CERT_DIR`
    names), offering HTTP/1.1 alone."""
    context = httpx.create_ssl_context(trust_env=True)
    context.set_alpn_protocols(["http/1.1"])
    return context


class Proxy(NamedTuple):
    """An http:// proxy: where it listens, and the `Proxy-Authorization`
    value its URL's credentials make (never shown in a message)."""

    host: str
    port: int
    authorization: bytes | None = None


def proxy_for(scheme: str, host: str) -> Proxy | None:
    """The proxy the environment names for requests to `scheme://host`
    (`HTTP_PROXY` or `HTTPS_PROXY` by the scheme, else `ALL_PROXY`, any
    case), as httpx reads them; None when there is none or `NO_PROXY`
    exempts the host. ValueError, in words that never quote the URL (it may
    hold a password), for one that is not an http:// proxy."""
    proxies = urllib.request.getproxies_environment()  # the environment only, as httpx reads it
    url = proxies.get(scheme) or proxies.get("all")
    if not url or _exempt(host, proxies.get("no", "")):
        return None
    parts = urllib.parse.urlsplit(url if "://" in url else f"http://{url}")
    try:
        port = parts.port or 80
    except ValueError:
        port = 0
    if parts.scheme != "http" or not parts.hostname or not port:
        variable = f"{scheme.upper()}_PROXY" if scheme in proxies else "ALL_PROXY"
        raise ValueError(
            f"the proxy in {variable} is not an http://host:port URL, the only kind rubriclang's client speaks; "
            "fix or unset it, or set RBG_PLAIN_LIBS=http to send requests through httpx"
        )
    authorization = None
    if parts.username is not None:
        user = urllib.parse.unquote(parts.username) + ":" + urllib.parse.unquote(parts.password or "")
        authorization = b"Basic " + base64.b64encode(user.encode("utf-8"))
    return Proxy(parts.hostname, port, authorization)


def _exempt(host: str, no_proxy: str) -> bool:
    """Whether `NO_PROXY` (hosts or domains, comma-separated; `*`: every host) exempts `host`."""
    host = host.lower()
    entries = [e.strip() for e in no_proxy.lower().split(",")]
    if "*" in entries:
        return True
    domains = [e.lstrip("*").lstrip(".") for e in entries]
    return any(d and (host == d or host.endswith("." + d)) for d in domains)


def _authority(host: str, port: int) -> bytes:
    return (f"[{host}]:{port}" if ":" in host else f"{host}:{port}").encode("idna")


async def _tunnel(conn: _Connection, host: str, port: int, proxy: Proxy, timeout: float | None) -> None:
    """Ask `proxy` (connected on `conn`) for a tunnel to `host:port`."""
    target = _authority(host, port)
    auth = b"" if proxy.authorization is None else b"Proxy-Authorization: %s\r\n" % proxy.authorization
    conn.busy = True
    if not conn.write(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (target, target, auth)):
        raise ConnectionResetError("the proxy closed the connection")
    status, _ = await _read_head(conn, timeout)
    code = int(status.group(2))
    if not 200 <= code < 300:
        raise httpx.ProxyError(f"the proxy {proxy.host}:{proxy.port} refused a tunnel to {host}:{port} (HTTP {code})")
    if conn.buffer:
        raise _bad("the proxy sent bytes after opening the tunnel")
    conn.busy = False


def _absolute(head: RequestHead, host: str, port: int, proxy: Proxy) -> RequestHead:
    """`head` for an http proxy: its target in absolute form, and the proxy's credentials."""
    end = head.data.index(b"\r\n")
    method, target, version = head.data[:end].split(b" ")
    start = b"%s http://%s%s %s\r\n" % (method, _authority(host, port), target, version)
    auth = b"" if proxy.authorization is None else b"Proxy-Authorization: %s\r\n" % proxy.authorization
    return head._replace(data=start + auth + head.data[end + 2 :])


__all__ = [
    "ACCEPTED_ENCODINGS",
    "Answer",
    "BodyDecoder",
    "PoolTransport",
    "Proxy",
    "ReplyTooLarge",
    "RequestHead",
    "UnreadableEncoding",
    "decoded",
    "header_lines",
    "proxy_for",
    "request_head",
    "tls_context",
]
