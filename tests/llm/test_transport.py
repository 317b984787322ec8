"""The lean HTTP/1.1 transport under the LLM client: keep-alive reuse, the
per-origin limit, response framing, servers that close connections, each
kind of timeout, TLS, what goes to httpx instead (proxied requests, and every
request under `RBG_PLAIN_LIBS=http`), and nothing left open after `aclose`.
Every server is on 127.0.0.1, in the test's own event loop, scripted by
request headers."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import ssl
import struct
import subprocess
import threading

import h11
import httpx
import pytest

from rubriclang.llm.client import ChatRequest, LLMError, OpenAIClient
from rubriclang.llm.transport import PoolTransport, Proxy, proxy_for

SECRET = "sk-SENTINEL-0123456789"
STRAY = b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n"


class Server:
    """An HTTP/1.1 server (h11) that counts TCP connections. A request's
    headers script the answer: `x-hold: NAME` (answer once the test calls
    `release(NAME)`), `x-mode`: `chunked` (the body in three chunks), `close` (answer with
    `Connection: close`), `then-close` (answer as keep-alive, then close the
    idle connection), `drop` (read the request, close without answering),
    `silent` (never answer; wait for the client to hang up), `stray-now` /
    `stray-later` (after the answer, bytes nobody asked for: in the same
    write, or 20 ms later, then wait for the client to hang up). Every answer
    says which connection served it (`x-conn`) and sets a cookie; its body
    is `answer`, or else the request's body echoed.

    Tests wait for what the server saw with `wait_until(condition)`, woken
    by each change, never by sleeping for a while."""

    def __init__(self, answer: bytes | None = None, tls: ssl.SSLContext | None = None):
        self.answer = answer
        self.tls = tls  # serve https with this context
        self.cookies: list[bytes | None] = []  # each request's Cookie header
        self.encodings: list[bytes | None] = []  # each request's Accept-Encoding header
        self.connections = 0  # accepted so far
        self.open = 0
        self.peak = 0  # the most open at once
        self.requests: list[bytes] = []  # request targets, in arrival order
        self.strays = 0  # stray answers written
        self._server: asyncio.AbstractServer | None = None
        self._changed = asyncio.Condition()
        self._holds: dict[bytes, asyncio.Event] = {}

    async def __aenter__(self) -> Server:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self.tls)
        scheme = "http" if self.tls is None else "https"
        self.url = f"{scheme}://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc) -> None:
        for event in self._holds.values():
            event.set()
        assert self._server is not None
        self._server.close()

    def release(self, name: str) -> None:
        """Answer the requests held with `x-hold: NAME` (and later ones)."""
        self._hold(name.encode()).set()

    def _hold(self, name: bytes) -> asyncio.Event:
        return self._holds.setdefault(name, asyncio.Event())

    async def wait_until(self, condition, timeout: float = 5.0) -> None:
        """Return once `condition()` holds; fail if it does not within `timeout`
        (a bound on a hang, not a timing the test depends on)."""
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(condition)

    async def all_closed(self) -> bool:
        """True once every connection was closed, by the client and by the server."""
        try:
            await self.wait_until(lambda: self.open == 0)
        except TimeoutError:
            return False
        return True

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        number = self.connections
        self.open += 1
        self.peak = max(self.peak, self.open)
        await self._notify()
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                request, body = await _read_request(conn, reader)
                if request is None:
                    return
                self.requests.append(request.target)
                headers = dict(request.headers)
                self.cookies.append(headers.get(b"cookie"))
                self.encodings.append(headers.get(b"accept-encoding"))
                await self._notify()
                if b"x-hold" in headers:
                    await self._hold(headers[b"x-hold"]).wait()
                mode = headers.get(b"x-mode", b"").decode()
                if mode == "silent":
                    await reader.read()
                if mode in ("silent", "drop"):
                    return
                if self.answer is not None:
                    body = self.answer
                out = [
                    (b"x-conn", str(number).encode()),
                    (b"content-type", b"application/json"),
                    (b"set-cookie", b"session=%d" % number),
                ]
                if mode == "close":
                    out.append((b"connection", b"close"))
                if mode == "chunked":
                    writer.write(
                        conn.send(h11.Response(status_code=200, headers=[*out, (b"transfer-encoding", b"chunked")]))
                    )
                    for part in (body[:5], body[5:10], body[10:]):
                        writer.write(conn.send(h11.Data(data=part)))
                        await writer.drain()
                        await asyncio.sleep(0.01)
                else:
                    writer.write(
                        conn.send(
                            h11.Response(status_code=200, headers=[*out, (b"content-length", str(len(body)).encode())])
                        )
                    )
                    writer.write(conn.send(h11.Data(data=body)))
                writer.write(conn.send(h11.EndOfMessage()) + (STRAY if mode == "stray-now" else b""))
                await writer.drain()
                if mode == "stray-later":
                    await asyncio.sleep(0.02)  # a separate segment, after the answer
                    writer.write(STRAY)
                    await writer.drain()
                if mode.startswith("stray"):
                    self.strays += 1
                    await self._notify()
                    await reader.read()
                if mode in ("then-close", "stray-now", "stray-later") or conn.our_state is h11.MUST_CLOSE:
                    return
                conn.start_next_cycle()
        except (ConnectionError, h11.ProtocolError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
            self.open -= 1
            await self._notify()


async def _read_request(conn: h11.Connection, reader: asyncio.StreamReader):
    """(request, body) of the next request; (None, b"") when the client hung up."""
    request, chunks = None, []
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await reader.read(65536))
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            chunks.append(event.data)
        elif isinstance(event, h11.EndOfMessage):
            return request, b"".join(chunks)
        else:  # ConnectionClosed
            return None, b""


async def client_reads_what_arrived() -> None:
    """Let the event loop hand the client what loopback already delivered (bytes
    or a close): one turn polls the socket, the next runs its callback."""
    for _ in range(2):
        await asyncio.sleep(0)


def run(coro):
    """Run a test coroutine, never for more than 20 s."""

    async def bounded():
        async with asyncio.timeout(20):
            return await coro

    return asyncio.run(bounded())


def post(http: httpx.AsyncClient, url: str, body: bytes = b'{"q": 1}', **headers):
    headers = {k.replace("_", "-"): str(v) for k, v in headers.items()}
    return http.post(url + "/v1/chat/completions", content=body, headers=headers)


@contextlib.asynccontextmanager
async def client(limit: int = 4, keepalive_expiry: float = 5.0, **timeouts):
    transport = PoolTransport(limit, keepalive_expiry)
    http = httpx.AsyncClient(
        transport=transport, timeout=httpx.Timeout(5.0, **timeouts), headers={"Authorization": f"Bearer {SECRET}"}
    )
    try:
        yield http
    finally:
        await http.aclose()


def test_sequential_requests_reuse_one_connection():
    async def go():
        async with Server() as server, client() as http:
            for i in range(5):
                r = await post(http, server.url, b'{"n": %d}' % i)
                assert (r.status_code, r.content) == (200, b'{"n": %d}' % i)
            return server.connections

    assert run(go()) == 1


def test_the_most_recently_used_idle_connection_is_reused_first():
    async def go():
        async with Server() as server, client() as http:
            # Two at once: two connections; the slower one goes idle last.
            fast = asyncio.ensure_future(post(http, server.url, x_hold="fast"))
            slow = asyncio.ensure_future(post(http, server.url, x_hold="slow"))
            await server.wait_until(lambda: len(server.requests) == 2)
            server.release("fast")
            fast = await fast
            server.release("slow")
            slow = await slow
            after = await post(http, server.url)
            return fast.headers["x-conn"], slow.headers["x-conn"], after.headers["x-conn"]

    fast, slow, after = run(go())
    assert fast != slow and after == slow


def test_never_more_connections_to_an_origin_than_the_limit():
    async def go():
        async with Server() as server, client(limit=3) as http:
            posts = [asyncio.ensure_future(post(http, server.url, b"%d" % i, x_hold="all")) for i in range(12)]
            await server.wait_until(lambda: len(server.requests) == 3)  # the others wait for a connection
            server.release("all")
            answers = await asyncio.gather(*posts)
            assert [r.content for r in answers] == [b"%d" % i for i in range(12)]
            return server.peak, server.connections

    assert run(go()) == (3, 3)


def test_a_connection_idle_for_longer_than_the_expiry_is_closed_not_reused():
    async def go():
        async with Server() as server, client(keepalive_expiry=0.05) as http:
            await post(http, server.url)
            await asyncio.sleep(0.1)  # longer than the expiry: the stimulus, not a wait for an event
            await post(http, server.url)
            await server.wait_until(lambda: server.open == 1)  # the expired one was closed
            return server.connections, server.open

    assert run(go()) == (2, 1)


def test_chunked_and_content_length_bodies_are_read_whole():
    body = b'{"reason": "fine", "score": 4}'

    async def go():
        async with Server() as server, client() as http:
            chunked = await post(http, server.url, body, x_mode="chunked")
            plain = await post(http, server.url, body)
            return chunked, plain, server.connections

    chunked, plain, connections = run(go())
    assert chunked.headers["transfer-encoding"] == "chunked" and chunked.json() == {"reason": "fine", "score": 4}
    assert plain.content == body
    assert connections == 1  # a chunked answer leaves the connection reusable


def test_a_streamed_request_body_arrives_whole():
    async def parts():
        for part in (b'{"a": ', b"1", b"}"):
            yield part

    async def go():
        async with Server() as server, client() as http:
            return await http.post(server.url + "/v1/x", content=parts())

    assert run(go()).content == b'{"a": 1}'


def test_connection_close_from_the_server_is_honoured():
    async def go():
        async with Server() as server, client() as http:
            first = await post(http, server.url, x_mode="close")
            second = await post(http, server.url)
            return first.status_code, second.status_code, server.connections

    assert run(go()) == (200, 200, 2)


def test_a_connection_the_server_closed_while_idle_is_replaced_without_an_error():
    async def go():
        async with Server() as server, client() as http:
            await post(http, server.url, x_mode="then-close")
            await server.wait_until(lambda: server.open == 0)  # the server closed the idle connection
            await client_reads_what_arrived()
            second = await post(http, server.url)
            return second.status_code, server.connections, len(server.requests)

    assert run(go()) == (200, 2, 2)


@pytest.mark.parametrize("mode", ["stray-now", "stray-later"])
def test_a_connection_with_bytes_nobody_asked_for_is_not_reused(mode):
    async def go():
        async with Server() as server, client() as http:
            await post(http, server.url, x_mode=mode)
            await server.wait_until(lambda: server.strays == 1)  # the stray bytes were sent
            await client_reads_what_arrived()
            second = await post(http, server.url)
            return second.status_code, server.connections

    assert run(go()) == (200, 2)


class ResettingServer:
    """A blocking server in a thread: it answers one request on its first
    connection, then, when told, resets that connection (RST), while the
    client's event loop is blocked and so cannot notice; later connections
    are answered normally."""

    ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.reset_now, self.reset_done = threading.Event(), threading.Event()
        self.requests = self.connections = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.listener.settimeout(10)
        with self.listener:
            for n in range(2):
                sock, _ = self.listener.accept()
                self.connections += 1
                with sock:
                    self._answer(sock)
                    if n == 0:
                        self.reset_now.wait(10)
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        sock.close()  # an RST: the client's next send fails at once
                        self.reset_done.set()

    def _answer(self, sock: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        while len(body) < length:
            body += sock.recv(65536)
        self.requests += 1
        sock.sendall(self.ANSWER)


def test_an_idle_connection_reset_unnoticed_is_retried_on_a_fresh_one_as_not_a_byte_went_out():
    server = ResettingServer()

    async def go():
        async with client() as http:
            first = await post(http, server.url)
            # Block the event loop (on purpose) while the server resets the
            # idle connection: the pool cannot notice before the next request.
            server.reset_now.set()
            assert server.reset_done.wait(5)  # the RST went out on loopback inside close()
            second = await post(http, server.url)
            return first.content, second.content

    assert run(go()) == (b"ok", b"ok")
    assert (server.connections, server.requests) == (2, 2)


def test_a_request_the_server_may_have_seen_is_never_sent_again():
    async def go():
        async with Server() as server, client() as http:
            with pytest.raises(httpx.RemoteProtocolError) as info:
                await post(http, server.url, x_mode="drop")
            return str(info.value), len(server.requests)

    message, requests = run(go())
    assert requests == 1 and "without answering" in message


def test_a_slow_answer_is_a_read_timeout():
    async def go():
        async with Server() as server, client(read=0.1) as http:
            with pytest.raises(httpx.ReadTimeout):
                await post(http, server.url, x_mode="silent")
            # The timed-out connection is closed, not reused; the next call works.
            assert (await post(http, server.url)).status_code == 200
            return server.connections

    assert run(go()) == 2


def test_each_wait_on_a_reused_connection_gets_its_whole_timeout_early_or_late():
    # A connection keeps one timer for its waits: set for one wait, it may
    # fire before a later wait's time is up (and is set again for the rest of
    # it), or be due after a later, shorter wait's (and is set sooner). The
    # timeouts are far apart, so no bound on how long a wait took depends on
    # the machine's speed: a wait left to the 60 s timer would hit `run`'s
    # 20 s bound, and no timer fires before it is due.
    async def go():
        async with Server() as server, client(limit=1) as http:
            loop = asyncio.get_running_loop()

            async def call(read: float, mode: str = "") -> float:
                started = loop.time()
                answer = await http.post(
                    server.url + "/v1/chat/completions",
                    content=b"{}",
                    headers={"x-mode": mode},
                    timeout=httpx.Timeout(5.0, read=read),
                )
                assert answer.status_code == 200
                return loop.time() - started

            async def silent(read: float) -> float:
                started = loop.time()
                with pytest.raises(httpx.ReadTimeout):
                    await call(read, "silent")
                return loop.time() - started

            await call(60.0)  # its timer is due in 60 s
            shorter = await silent(0.05)  # on the same connection
            await call(0.2)  # a fresh connection, its timer due in 0.2 s
            later = await silent(0.6)  # the timer fires about 0.2 s into this wait
            return shorter, later, server.connections

    shorter, later, connections = run(go())
    assert shorter < 15 and later >= 0.59 and connections == 2


def test_a_server_that_reads_nothing_is_a_write_timeout():
    chunk = b"x" * (1 << 20)

    async def endless():
        for _ in range(64):  # far more than the socket buffers hold
            yield chunk

    async def go():
        # Connections complete in the kernel's backlog, but nobody reads them.
        with socket.create_server(("127.0.0.1", 0)) as listener:
            url = f"http://127.0.0.1:{listener.getsockname()[1]}"
            async with client(write=0.2) as http:
                with pytest.raises(httpx.WriteTimeout):
                    await http.post(url + "/v1/x", content=endless())

    run(go())


def test_an_unanswered_connect_is_a_connect_timeout():
    async def go():
        # A listener that never accepts, its backlog full: further SYNs are dropped.
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(0)
            port = listener.getsockname()[1]
            fillers = []
            try:
                for _ in range(4):
                    s = socket.socket()
                    s.setblocking(False)
                    s.connect_ex(("127.0.0.1", port))
                    fillers.append(s)
                async with client(connect=0.2) as http:
                    with pytest.raises(httpx.ConnectTimeout):
                        await post(http, f"http://127.0.0.1:{port}")
            finally:
                for s in fillers:
                    s.close()

    run(go())


def test_waiting_longer_than_the_pool_timeout_for_a_connection_is_a_pool_timeout():
    async def go():
        async with Server() as server, client(limit=1, pool=0.05) as http:
            busy = asyncio.ensure_future(post(http, server.url, x_hold="busy"))
            await server.wait_until(lambda: len(server.requests) == 1)  # busy holds the only connection
            with pytest.raises(httpx.PoolTimeout):
                await post(http, server.url)
            server.release("busy")
            assert (await busy).status_code == 200
            return server.connections

    assert run(go()) == 1


def test_a_refused_connection_is_a_connect_error(unreachable_url):
    async def go():
        async with client() as http:
            with pytest.raises(httpx.ConnectError) as info:
                await post(http, unreachable_url)
            return str(info.value)

    assert unreachable_url.removeprefix("http://") in run(go())


def test_cancelled_requests_give_their_connection_or_slot_back():
    async def go():
        async with Server() as server, client(limit=1, pool=1.0) as http:
            for handed_over in (False, True):
                seen = len(server.requests)
                running = asyncio.ensure_future(post(http, server.url, x_hold="never"))
                waiting = asyncio.ensure_future(post(http, server.url))
                # Once the server has the running one, the waiting one waits for its slot.
                await server.wait_until(lambda seen=seen: len(server.requests) == seen + 1)
                running.cancel()
                if handed_over:
                    # The running one gives up its slot to the waiting one,
                    # which is cancelled before it can use it.
                    await asyncio.sleep(0)
                waiting.cancel()
                await asyncio.gather(running, waiting, return_exceptions=True)
                # The limit is 1: a slot not given back is a pool timeout here.
                assert (await post(http, server.url)).status_code == 200

    run(go())


def test_errors_never_quote_the_headers():
    async def go():
        messages = []
        async with Server() as server, client(read=0.1) as http:
            for mode in ("drop", "silent"):
                with pytest.raises(httpx.HTTPError) as info:
                    await post(http, server.url, x_mode=mode)
                messages.append(str(info.value))
            # A header value HTTP/1.1 forbids (a newline in a key): refused, not quoted.
            with pytest.raises(httpx.LocalProtocolError) as info:
                await http.post(server.url + "/v1/x", headers={"Authorization": f"Bearer {SECRET}\r\nX-Injected: 1"})
            messages.append(str(info.value))
        return messages

    for message in run(go()):
        assert SECRET not in message and "Bearer" not in message


def test_a_url_of_another_scheme_is_refused_in_words():
    async def go():
        async with client() as http:
            with pytest.raises(httpx.UnsupportedProtocol, match="http and https, not ftp"):
                await http._transport.handle_async_request(httpx.Request("GET", "ftp://example.invalid/v1"))

    run(go())


def _no_proxies(monkeypatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def test_the_environments_proxy_is_read_by_scheme_with_its_credentials_and_no_proxy(monkeypatch):
    _no_proxies(monkeypatch)
    assert proxy_for("https", "api.example.com") is None
    monkeypatch.setenv("HTTPS_PROXY", "http://ann:p%40ss@proxy.example:3128")
    assert proxy_for("https", "api.example.com") == Proxy("proxy.example", 3128, b"Basic YW5uOnBAc3M=")  # ann:p@ss
    assert proxy_for("http", "gpu-box") is None
    monkeypatch.setenv("ALL_PROXY", "proxy.example")  # no scheme, no port: http, 80
    assert proxy_for("http", "gpu-box") == Proxy("proxy.example", 80)
    monkeypatch.setenv("NO_PROXY", "gpu-box, .example.com")
    assert proxy_for("http", "gpu-box") is None and proxy_for("https", "api.example.com") is None
    assert proxy_for("http", "gpu-box2") == Proxy("proxy.example", 80)  # a name, not a prefix
    monkeypatch.setenv("NO_PROXY", "*")
    assert proxy_for("http", "gpu-box2") is None


def test_every_server_goes_through_the_pool_with_its_proxy_but_never_a_local_one(monkeypatch):
    _no_proxies(monkeypatch)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    llm = OpenAIClient(["http://gpu-box:8080/v1", "https://api.example.com/v1"], "m")
    assert [ep.direct is not None for ep in llm.endpoints] == [True, True] and llm._http is None
    assert [ep.proxy for ep in llm.endpoints] == [None, Proxy("proxy.example", 3128)]
    # A user's proxy never captures a call to a server on this machine, beside remote ones or not.
    llm = OpenAIClient(["https://127.0.0.1:8443/v1", "https://localhost/v1", "https://api.example.com/v1"], "m")
    assert [ep.proxy for ep in llm.endpoints] == [None, None, Proxy("proxy.example", 3128)]


@pytest.mark.parametrize("url", ["socks5://ann:hunter2@proxy.example:1080", "http://ann:hunter2@proxy.example:99999"])
def test_a_proxy_the_client_cannot_use_fails_each_call_in_words(monkeypatch, url):
    _no_proxies(monkeypatch)
    monkeypatch.setenv("ALL_PROXY", url)
    llm = OpenAIClient(["https://api.example.com/v1"], "m", max_retries=0)

    async def go():
        try:
            with pytest.raises(LLMError) as info:
                await llm.chat(ChatRequest(({"role": "user", "content": "Hi"},)))
        finally:
            await llm.aclose()
        return info.value

    err = run(go())
    assert err.kind == "unreachable" and "ALL_PROXY is not an http://host:port URL" in err.message
    assert "RBG_PLAIN_LIBS=http" in err.message and "hunter2" not in err.message


@pytest.mark.parametrize("value", ["1", "http", "parser,http"])
def test_rbg_plain_libs_sends_every_server_through_httpx(monkeypatch, value):
    _no_proxies(monkeypatch)
    monkeypatch.setenv("RBG_PLAIN_LIBS", value)
    llm = OpenAIClient(["http://127.0.0.1:8000/v1", "https://api.example.com/v1"], "m")
    assert [ep.direct for ep in llm.endpoints] == [None, None] and llm._http is not None


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """(a server's TLS context, the file of its self-signed certificate) for 127.0.0.1."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:judge.test", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context, str(cert)


COMPLETION = b'{"model": "judge", "choices": [{"message": {"content": "4"}, "finish_reason": "stop"}]}'


@pytest.mark.parametrize("library", [False, True], ids=["own-transport", "httpx"])
def test_an_https_server_is_called_over_tls_on_kept_connections(certificate, monkeypatch, library):
    server_tls, cert = certificate
    monkeypatch.setenv("SSL_CERT_FILE", cert)  # trusted as a user trusts a private CA
    if library:
        monkeypatch.setenv("RBG_PLAIN_LIBS", "http")

    async def go():
        async with Server(answer=COMPLETION, tls=server_tls) as server:
            llm = OpenAIClient([server.url + "/v1"], "judge", max_retries=0, timeout=5.0)
            try:
                texts = [(await llm.chat(ChatRequest(({"role": "user", "content": f"Q{i}"},)))).text for i in range(3)]
            finally:
                await llm.aclose()
            closed = await server.all_closed()
            return texts, server.connections, llm.endpoints[0].direct is None, closed, set(server.encodings)

    # Compressed answers asked for, as of any https server (tests/faults/test_compressed_replies.py reads them).
    assert run(go()) == (["4", "4", "4"], 1, library, True, {b"gzip, deflate"})


@pytest.mark.parametrize("library", [False, True], ids=["own-transport", "httpx"])
def test_an_https_server_whose_certificate_is_not_trusted_is_unreachable_in_words(certificate, monkeypatch, library):
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    if library:
        monkeypatch.setenv("RBG_PLAIN_LIBS", "http")

    async def go():
        async with Server(answer=COMPLETION, tls=certificate[0]) as server:
            llm = OpenAIClient([server.url + "/v1"], "judge", max_retries=0, timeout=5.0)
            try:
                with pytest.raises(LLMError) as info:
                    await llm.chat(ChatRequest(({"role": "user", "content": "Hi"},)))
            finally:
                await llm.aclose()
            return info.value

    err = run(go())
    assert err.kind == "unreachable" and "CERTIFICATE_VERIFY_FAILED" in err.message


def test_the_client_speaks_tls_to_an_https_url():
    """An https server URL gets a TLS handshake, not plain HTTP."""

    async def go():
        first_bytes = []

        async def handle(reader, writer):
            first_bytes.append(await reader.read(1))
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        llm = OpenAIClient([f"https://127.0.0.1:{port}"], "judge", max_retries=0, timeout=2.0)
        try:
            with pytest.raises(LLMError):
                await llm.chat(ChatRequest(({"role": "user", "content": "Hi"},)))
        finally:
            await llm.aclose()
            server.close()
        return first_bytes

    assert run(go()) == [b"\x16"]  # a TLS handshake record


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="lists sockets in /proc")
def test_aclose_closes_every_connection_and_leaves_no_task_or_socket():
    def open_sockets() -> set[str]:
        # Sockets by inode, not a count of descriptors: another test's leftover
        # socket that the garbage collector closes meanwhile must not count.
        out = set()
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:  # closed since it was listed
                continue
            if target.startswith("socket:"):
                out.add(target)
        return out

    async def go():
        async with Server() as server:
            before = open_sockets()
            http = httpx.AsyncClient(transport=PoolTransport(4))
            four = [asyncio.ensure_future(post(http, server.url, x_hold="four")) for _ in range(4)]
            await server.wait_until(lambda: len(server.requests) == 4)  # four connections at once
            server.release("four")
            await asyncio.gather(*four)
            in_flight = asyncio.ensure_future(post(http, server.url, x_mode="silent"))
            await server.wait_until(lambda: len(server.requests) == 5)
            assert server.open == 4
            await http.aclose()
            with pytest.raises(httpx.ReadError):
                await in_flight
            closed = await server.all_closed()  # every connection ended, its sockets closed on both sides
            return open_sockets() - before, asyncio.all_tasks() - {asyncio.current_task()}, closed

    assert run(go()) == (set(), set(), True)


def test_the_llm_client_reuses_its_connections_and_closes_them():
    completion = b'{"model": "judge", "choices": [{"message": {"content": "4"}, "finish_reason": "stop"}]}'

    async def go():
        async with Server(answer=completion) as server:
            llm = OpenAIClient([server.url], "judge", max_retries=0)
            try:
                ask = lambda i: llm.chat(ChatRequest(({"role": "user", "content": f"Q{i}"},)))  # noqa: E731
                first = await asyncio.gather(*(ask(i) for i in range(6)))
                then = [await ask(i) for i in range(6)]
            finally:
                await llm.aclose()
            return [c.text for c in first + then], server.connections, await server.all_closed()

    texts, connections, closed = run(go())
    assert texts == ["4"] * 12 and connections == 6 and closed


def test_the_llm_client_keeps_no_cookies():
    completion = b'{"model": "judge", "choices": [{"message": {"content": "4"}, "finish_reason": "stop"}]}'

    async def go():
        async with Server(answer=completion) as server:
            llm = OpenAIClient([server.url], "judge", max_retries=0)
            try:
                for i in range(2):
                    await llm.chat(ChatRequest(({"role": "user", "content": f"Q{i}"},)))
            finally:
                await llm.aclose()
            return server.cookies

    assert run(go()) == [None, None]  # each call stands alone, whatever the server set


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


class ProxyServer:
    """An http proxy on 127.0.0.1 that sends every connection to `origin`
    (host, port), whatever host it names: a tunnel for `CONNECT`, else the
    request as it came. Keeps each connection's first request line and its
    `Proxy-Authorization`."""

    def __init__(self, origin: str, refuse: bool = False):
        self.refuse = refuse  # answer 407 to every request
        host, port = origin.rsplit("//", 1)[1].rsplit(":", 1)
        self.origin = (host, int(port))
        self.lines: list[bytes] = []
        self.auths: list[bytes | None] = []

    async def __aenter__(self) -> ProxyServer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc) -> None:
        self._server.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            first, *fields = head.split(b"\r\n")
            self.lines.append(first)
            auth = [f.split(b":", 1)[1].strip() for f in fields if f.lower().startswith(b"proxy-authorization:")]
            self.auths.append(auth[0] if auth else None)
            if self.refuse:
                writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
                writer.close()
                return
            up_reader, up_writer = await asyncio.open_connection(*self.origin)
            if first.startswith(b"CONNECT "):
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                up_writer.write(head)
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


@pytest.mark.parametrize("scheme", ["http", "https"])
@pytest.mark.parametrize("library", [False, True], ids=["own-transport", "httpx"])
def test_a_server_behind_the_environments_proxy_is_called_through_it(certificate, monkeypatch, scheme, library):
    """http: absolute-form requests to the proxy; https: a CONNECT tunnel and
    TLS inside it, the certificate checked for the server's name. Kept
    connections either way, the proxy's credentials sent, on both paths."""
    server_tls, cert = certificate
    _no_proxies(monkeypatch)
    monkeypatch.setenv("SSL_CERT_FILE", cert)
    if library:
        monkeypatch.setenv("RBG_PLAIN_LIBS", "http")

    async def go():
        tls = server_tls if scheme == "https" else None
        async with Server(answer=COMPLETION, tls=tls) as server, ProxyServer(server.url) as proxy:
            monkeypatch.setenv(f"{scheme.upper()}_PROXY", f"http://ann:p%40ss@127.0.0.1:{proxy.port}")
            llm = OpenAIClient([f"{scheme}://judge.test:8443/v1"], "judge", max_retries=0, timeout=5.0)
            try:
                for i in range(3):
                    assert (await llm.chat(ChatRequest(({"role": "user", "content": f"Q{i}"},)))).text == "4"
            finally:
                await llm.aclose()
            return proxy.lines, proxy.auths, server.requests

    lines, auths, requests = run(go())
    assert auths == [b"Basic YW5uOnBAc3M="]  # one connection, kept, with the credentials
    if scheme == "https":
        assert lines == [b"CONNECT judge.test:8443 HTTP/1.1"]
        assert requests == [b"/v1/chat/completions"] * 3
    else:
        assert lines == [b"POST http://judge.test:8443/v1/chat/completions HTTP/1.1"]
        assert requests == [b"http://judge.test:8443/v1/chat/completions"] * 3


def test_a_proxy_that_refuses_the_tunnel_fails_the_call_naming_it_not_its_credentials(certificate, monkeypatch):
    _no_proxies(monkeypatch)
    monkeypatch.setenv("SSL_CERT_FILE", certificate[1])

    async def go():
        async with (
            Server(answer=COMPLETION, tls=certificate[0]) as server,
            ProxyServer(server.url, refuse=True) as proxy,
        ):
            monkeypatch.setenv("HTTPS_PROXY", f"http://ann:p%40ss@127.0.0.1:{proxy.port}")
            llm = OpenAIClient(["https://judge.test:8443/v1"], "judge", max_retries=0, timeout=5.0)
            try:
                with pytest.raises(LLMError) as info:
                    await llm.chat(ChatRequest(({"role": "user", "content": "Hi"},)))
            finally:
                await llm.aclose()
            return info.value, proxy.port

    err, port = run(go())
    assert err.kind == "unreachable"
    assert f"the proxy 127.0.0.1:{port} refused a tunnel to judge.test:8443 (HTTP 407)" in err.message
    assert "ann" not in err.message and "p@ss" not in err.message and "p%40ss" not in err.message
