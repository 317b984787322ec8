"""An async client for OpenAI-compatible `/v1/chat/completions` servers
(vLLM, llama.cpp, hosted APIs), over the keep-alive pools of `transport`
(http and https alike, direct or through an environment's proxy); under
`RBG_PLAIN_LIBS=http` every request goes through httpx's client instead.

It spreads requests over several base URLs (least busy first), limits the
requests in flight per endpoint, reuses connections, and retries transient
failures (429, 5xx, timeouts, dropped connections, unparseable bodies) with
exponential backoff and full jitter, honouring `Retry-After`. The API key is
sent in a header and never appears in an error message, a log or a cache:
every error and every reply is redacted (`rubriclang.llm.redact`) before it
leaves the client.

Each request has two clocks: `timeout`, the longest wait for any one read
(or connect, or write), and `deadline`, the longest the whole request may
take, so a server trickling bytes cannot hold it forever; a request past its
deadline is retried like a timeout. An answer larger than `max_reply_bytes`
is not read further and fails the call (`reply_too_large`).
"""

from __future__ import annotations

import asyncio
import collections
import email.utils
import json
import random
import time
from collections.abc import Coroutine
from typing import Any, Protocol

import attrs
import httpx

from rubriclang.canonical import canonical_json
from rubriclang.llm.redact import Redactor
from rubriclang.llm.transport import (
    ACCEPTED_ENCODINGS,
    BodyDecoder,
    PoolTransport,
    Proxy,
    ReplyTooLarge,
    UnreadableEncoding,
    decoded,
    header_lines,
    proxy_for,
    request_head,
    tls_context,
)
from rubriclang.memo import IdentityMemo
from rubriclang.plainlibs import plain
from rubriclang.urls import BaseURL, api_key_problem, parse_base_url

# The largest answer read: replies are kilobytes, and even top-20 logprobs of
# thousands of tokens stay below this.
DEFAULT_MAX_REPLY_BYTES = 8 * 1024 * 1024
# The deadline of a request, when none is given, in multiples of the timeout.
DEADLINE_PER_TIMEOUT = 4


@attrs.frozen(cache_hash=True)  # a key of the call key's and the fingerprint's memos, per call
class Sampling:
    """Sampling parameters. None means "not sent" (the server's default),
    which is different from sending the same value, so it is part of the
    cache key too."""

    temperature: float | None = 0.0
    top_p: float | None = None
    max_tokens: int | None = 512
    seed: int | None = 0
    logprobs: bool = False
    top_logprobs: int | None = None

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in ("temperature", "top_p", "max_tokens", "seed"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.logprobs:
            out["logprobs"] = True
            if self.top_logprobs is not None:
                out["top_logprobs"] = self.top_logprobs
        return out


@attrs.frozen
class ChatRequest:
    """One chat completion to ask for. `affinity` names the calls that
    share a prompt prefix (an item's criteria for one candidate): a
    llama.cpp server with slots gets them on one slot, whose prompt cache
    then holds that prefix. It is how a call is sent, not what is asked, so
    it is not in the body (nor the cache key).

    `prompt_digest` and `prompt_hash` are how the judge's calls are cached
    (`prompting.Prompt.render` sets them): the digest of the template and
    values the messages were rendered from, which the cache keys the call by
    instead of the messages (`cache.call_key`), and the judge's hash of the
    messages, kept beside the answer. A request whose messages are changed
    must clear both (`prompting.nudge` does). Neither is sent, nor compared:
    requests that ask the same are equal."""

    messages: tuple[dict, ...]
    sampling: Sampling = Sampling()
    response_format: dict | None = None
    affinity: str | None = None
    prompt_digest: str | None = attrs.field(default=None, eq=False)
    prompt_hash: str | None = attrs.field(default=None, eq=False)

    def body(self, model: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "messages": list(self.messages), **self.sampling.body()}
        if self.response_format is not None:
            body["response_format"] = self.response_format
        return body


# The JSON a request body is sent as (what httpx's `json=` sends), and a
# string as a JSON literal the way both encoders write it (non-ASCII as is).
_BODY_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_STRING_JSON = json.JSONEncoder(ensure_ascii=False).encode  # a str's own fast path, through the public API

# A message tuple's (canonical JSON, JSON as in a body). A judgment serialises
# its prompt for its prompt hash (or its call key), then, without awaiting
# anything between, for the body it sends; the second is free.
_MESSAGES_JSON: IdentityMemo[tuple[str, str]] = IdentityMemo(64)


def _messages_texts(messages: tuple[dict, ...]) -> tuple[str, str]:
    """(`canonical_json(list(messages))`, `_BODY_JSON(list(messages))`),
    remembered for the last calls' message tuples (rendered messages are
    never changed in place). Messages of exactly a `role` and a `content`,
    in that order, as templates fill them, are assembled from their two
    strings' JSON, which gives the same text."""
    hit = _MESSAGES_JSON.get(id(messages), messages)
    if hit is not None:
        return hit
    canonicals, sents = [], []
    for m in messages:
        if type(m) is not dict or len(m) != 2:
            break
        role, content = m.get("role"), m.get("content")
        if type(role) is not str or type(content) is not str or next(iter(m)) != "role":
            break
        r, c = _STRING_JSON(role), _STRING_JSON(content)
        canonicals.append('{"content":' + c + ',"role":' + r + "}")
        sents.append('{"role":' + r + ',"content":' + c + "}")
    if len(sents) == len(messages):
        canonical, sent = "[" + ",".join(canonicals) + "]", "[" + ",".join(sents) + "]"
    else:
        canonical, sent = canonical_json(list(messages)), _BODY_JSON(list(messages))
    return _MESSAGES_JSON.put(id(messages), messages, (canonical, sent))


def messages_json(messages: tuple[dict, ...]) -> str:
    """`canonical_json(list(messages))`, remembered for the last calls'
    message tuples."""
    return _messages_texts(messages)[0]


# The body's JSON before and after its messages, by the body's other entries
# (their type and value; its one dict, the response format, by identity).
_BODY_FRAMES: IdentityMemo[tuple[str, str]] = IdentityMemo(256)
_MARKER = "\x00messages\x00"  # a placeholder no other entry's JSON holds unescaped


def body_json(body: dict[str, Any], messages: tuple[dict, ...] | None) -> bytes:
    """`_BODY_JSON(body)` as bytes. For a body whose `messages` are
    `list(messages)`, the messages' JSON (`_messages_texts`) between the
    JSON of the rest, which is the same for every call of a criterion and
    so remembered (a response format by identity, kept alive beside it: a
    request's format is never changed in place, as `cache.call_key` assumes too)."""
    if messages is None:
        return _BODY_JSON(body).encode()
    memo: list = []
    kept = None
    for k, v in body.items():
        if k != "messages":
            kind = type(v)
            if kind is dict:
                if kept is not None:  # a second dict: not a body `ChatRequest.body` makes
                    return _BODY_JSON(body).encode()
                kept, v = v, id(v)
            memo += (k, kind, v)
    key = tuple(memo)
    try:
        hit = _BODY_FRAMES.get(key, kept)
    except TypeError:  # an entry that cannot be remembered (a list): the whole body, then
        return _BODY_JSON(body).encode()
    if hit is None:
        text = _BODY_JSON({**body, "messages": _MARKER})
        quoted = _BODY_JSON(_MARKER)
        if text.count(quoted) != 1:
            return _BODY_JSON(body).encode()
        at = text.index(quoted)
        hit = _BODY_FRAMES.put(key, kept, (text[:at], text[at + len(quoted) :]))
    return (hit[0] + _messages_texts(messages)[1] + hit[1]).encode()


@attrs.frozen
class Completion:
    """A model's answer, with what it cost."""

    text: str
    model: str
    logprobs: list | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    latency_ms: float | None = None
    attempts: int = 1
    cached: bool = False
    # The judge's prompt hash of the request, kept with a call cached under
    # a prompt digest (`cache.call_key`'s `prompt`): a hit then needs no
    # rendering to report it. None otherwise.
    prompt_hash: str | None = None

    def to_json(self) -> dict:
        # Latency and attempts are kept so that a judgment served from the
        # cache reports the call that produced it, and a resumed run writes
        # the same traces as an uninterrupted one.
        out = {
            "text": self.text,
            "model": self.model,
            "logprobs": self.logprobs,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "finish_reason": self.finish_reason,
            "latency_ms": self.latency_ms,
            "attempts": self.attempts,
        }
        if self.prompt_hash is not None:
            out["prompt_hash"] = self.prompt_hash
        return out

    @classmethod
    def from_json(cls, d: dict, **extra) -> Completion:
        return cls(
            d["text"],
            d["model"],
            d.get("logprobs"),
            d.get("prompt_tokens", 0),
            d.get("completion_tokens", 0),
            d.get("finish_reason"),
            d.get("latency_ms"),
            d.get("attempts", 1),
            prompt_hash=d.get("prompt_hash"),
            **extra,
        )


class LLMError(Exception):
    """A call that failed for good. `kind`: unreachable, timeout (a read
    timeout or the request's deadline), http, bad_response, unknown_model,
    auth, unsupported (the server rejected the request's `response_format`),
    reply_too_large, refused (the model declined to answer)."""

    def __init__(self, kind: str, message: str, status: int | None = None, attempts: int = 1):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.attempts = attempts


class _Retry(Exception):
    def __init__(self, error: LLMError, after: float | None = None):
        self.error = error
        self.after = after


def retry_after_seconds(value: str | None) -> float | None:
    """`Retry-After` as seconds: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class _Endpoint:
    def __init__(self, base: BaseURL, limit: int):
        self.url = base.url  # named in messages and the cache: no query (it may hold a token)
        self.sem = asyncio.Semaphore(limit)
        self.in_flight = 0
        self.host, self.port = base.host, base.port
        self.path = base.path
        self.origin = base.origin  # the URL without its path (`/v1`)
        self.query = f"?{base.query}" if base.query else ""  # sent with every request
        self.tls = base.scheme == "https"
        self.proxy: Proxy | None = None  # the environment's proxy for this server, if any
        self.unusable: str | None = None  # why the environment's proxy cannot be used, if so
        # Set but under RBG_PLAIN_LIBS=http: calls go straight to the pool, with these headers.
        self.direct: PoolTransport | None = None
        self.headers: list[tuple[bytes, bytes]] = []
        self.lines: bytes | None = None  # `header_lines(headers)`, once they proved valid


class ChatClient(Protocol):
    """What a judge needs of a client: OpenAIClient, or a stand-in that sends
    nothing (an estimate's DryClient, a batch's NoCallClient)."""

    @property
    def model(self) -> str | None: ...

    @property
    def identity(self) -> str: ...

    async def chat(self, request: ChatRequest) -> Completion: ...

    async def aclose(self) -> None: ...


class OpenAIClient:
    """Chat completions against one or more OpenAI-compatible servers."""

    def __init__(
        self,
        base_urls: list[str],
        model: str | None,
        api_key: str | None = None,
        *,
        timeout: float = 120.0,
        max_retries: int = 5,
        per_endpoint: int = 16,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        seed: int | None = None,
        identity: str | None = None,
        deadline: float | None = None,
        max_reply_bytes: int | None = None,
        slots: int | None = None,
    ):
        if not base_urls:
            raise ValueError("at least one base URL is needed")
        self.deadline = deadline if deadline is not None else DEADLINE_PER_TIMEOUT * timeout
        self.max_reply_bytes = max_reply_bytes or DEFAULT_MAX_REPLY_BYTES
        # URLError (a ValueError) for a URL that cannot be used as it stands.
        self.endpoints = [_Endpoint(parse_base_url(u), per_endpoint) for u in base_urls]
        # None: the servers' only model, found by `check_model`.
        self.model = model
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self._rng = random.Random(seed)
        problem = api_key_problem(api_key) if api_key else None
        if problem is not None:
            raise ValueError(f"the API key cannot be sent: {problem}")
        self._redactor = Redactor(api_key)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # Every server goes through one lean keep-alive pool, http or https,
        # proxied or not: httpx's own costs milliseconds of CPU per call at
        # dozens in flight (benchmarks/README.md). RBG_PLAIN_LIBS=http sends
        # them all through httpx's client instead.
        self._pool = PoolTransport(per_endpoint, max_body=self.max_reply_bytes)
        library = plain("http")
        self._timeouts = httpx.Timeout(timeout).as_dict()
        for ep in self.endpoints:
            if not library:
                try:  # a user's HTTP(S)_PROXY must not capture calls to a server on this machine
                    ep.proxy = None if _is_loopback(ep.url) else proxy_for("https" if ep.tls else "http", ep.host)
                except ValueError as exc:  # every call to this server fails, saying why
                    ep.unusable = str(exc)
                ep.direct = self._pool
                ep.headers = [
                    (b"Host", httpx.URL(ep.url).netloc),
                    (b"Accept", b"application/json"),
                    (b"Content-Type", b"application/json"),
                    (b"User-Agent", b"rubriclang"),
                ]
                if ep.tls:  # a remote API: compressed answers asked for, as httpx's client asks
                    ep.headers.append((b"Accept-Encoding", ACCEPTED_ENCODINGS.encode("ascii")))
                ep.headers += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
        self._http = None if not library else _httpx_client(self.endpoints, per_endpoint, headers, timeout)
        self._turn = 0
        # llama.cpp servers with this many slots each (None: not llama.cpp,
        # which would refuse or ignore the fields): calls of one affinity go
        # to one slot, affinities taking the slots in turn as they first come.
        self.slots = slots
        self._slot_of: collections.OrderedDict[str, int] = collections.OrderedDict()
        self._next_slot = 0
        # What the cache keys calls by: by default the set of servers (they
        # serve the same model); an embedded server, whose port changes every
        # run, names its model file instead.
        self.identity = identity or " ".join(sorted(e.url for e in self.endpoints))

    async def aclose(self) -> None:
        await self._pool.aclose()
        if self._http is not None:
            await self._http.aclose()

    async def __aenter__(self) -> OpenAIClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    def _pick(self) -> _Endpoint:
        # Least busy first; ties by rotation, so load spreads evenly.
        n = len(self.endpoints)
        if n == 1:
            return self.endpoints[0]
        self._turn += 1
        order = [self.endpoints[(self._turn + i) % n] for i in range(n)]
        return min(order, key=lambda e: e.in_flight)

    def _slot(self, affinity: str, slots: int) -> int:
        slot = self._slot_of.get(affinity)
        if slot is None:
            slot = self._slot_of[affinity] = self._next_slot % slots
            self._next_slot += 1
            if len(self._slot_of) > _AFFINITIES_KEPT:  # items long done
                self._slot_of.popitem(last=False)
        return slot

    def _delay(self, attempt: int, after: float | None) -> float:
        if after is not None:
            return min(after, self.backoff_max)
        cap = min(self.backoff_max, self.backoff_base * (2**attempt))
        return self._rng.uniform(0, cap)  # full jitter

    def _redact(self, err: LLMError) -> LLMError:
        # A server may echo what it was sent (some quote the key they refused):
        # the key never leaves this object, not even inside an error message.
        message = self._redactor.text(err.message)
        return err if message == err.message else LLMError(err.kind, message, err.status, err.attempts)

    def _fetch(
        self,
        ep: _Endpoint,
        method: str,
        path: str,
        body: dict | None = None,
        root: bool = False,
        messages: tuple[dict, ...] | None = None,
    ) -> Coroutine[Any, Any, _Answer]:
        """One request to `ep` (`path` under its base URL, or under its
        origin when `root`) and its whole answer, within the deadline;
        raises TimeoutError past it, ReplyTooLarge past the size cap, and
        httpx's errors. `messages`: the tuple the body's `messages` list
        was made of (`body_json`), if any. Not a coroutine itself: it gives
        the one that makes the request (one frame fewer per call)."""
        if ep.direct is not None:  # the pool keeps the deadline itself
            target = (path if root else ep.path + path) + ep.query
            return self._fetch_direct(ep, method.encode("ascii"), target.encode("ascii"), body, messages)
        return self._fetch_httpx(ep, method, path, body, root)

    async def _fetch_httpx(self, ep: _Endpoint, method: str, path: str, body: dict | None, root: bool) -> _Answer:
        async with asyncio.timeout(self.deadline):
            cap = self.max_reply_bytes
            url = (ep.origin if root else ep.url) + path + ep.query
            assert self._http is not None  # made under RBG_PLAIN_LIBS=http, where no server is direct
            async with self._http.stream(method, url, json=body) as r:
                # Read as sent and decoded here, within the cap on decoded
                # bytes (httpx would inflate a whole chunk at once, and
                # stacked encodings too).
                decoder = BodyDecoder(", ".join(r.headers.get_list("content-encoding")) or None, cap)
                async for chunk in r.aiter_raw():
                    decoder.feed(chunk)
                return _Answer(r.status_code, dict(r.headers), decoder.finish())

    async def _fetch_direct(
        self, ep: _Endpoint, method: bytes, target: bytes, body: dict | None, messages: tuple[dict, ...] | None
    ) -> _Answer:
        if ep.unusable is not None:
            raise LLMError("unreachable", f"cannot reach {ep.url}: {ep.unusable}")
        # The body as httpx's `json=` would send it.
        data = b"" if body is None else body_json(body, messages)
        lines = ep.lines
        if lines is None:  # raises (each time) for a header HTTP/1.1 does not allow
            lines = ep.lines = header_lines(ep.headers)
        head = request_head(method, target, lines, None if body is None else len(data))
        assert ep.direct is not None  # the caller's test
        deadline = asyncio.get_running_loop().time() + self.deadline
        answer, content = await ep.direct.exchange(
            ep.host, ep.port, head, data, self._timeouts, deadline=deadline, tls=ep.tls, proxy=ep.proxy
        )
        found = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in answer.headers}
        if "content-encoding" in found:  # not asked for, but read if it is one this client reads
            encoding = ", ".join(v.decode("latin-1") for k, v in answer.headers if k.lower() == b"content-encoding")
            content = decoded(encoding, content, self.max_reply_bytes)
        return _Answer(answer.status_code, found, content)

    def _too_large(self, ep: _Endpoint, attempt: int = 1) -> LLMError:
        return LLMError(
            "reply_too_large",
            f"{ep.url} answered more than {self.max_reply_bytes} bytes (the reply size cap)",
            None,
            attempt,
        )

    def _unreadable(self, ep: _Endpoint, exc: UnreadableEncoding, attempt: int = 1) -> LLMError:
        return LLMError("bad_response", f"{ep.url} answered in a form this client cannot read: {exc}", None, attempt)

    def _past_deadline(self, ep: _Endpoint) -> LLMError:
        return LLMError("timeout", f"{ep.url} did not finish answering within the {self.deadline:g} s deadline")

    def _error_detail(self, r: _Answer) -> str:
        """The message of an error answer, redacted, then cut to 300 characters
        (cutting first could leave a piece of the key too short to recognise)."""
        try:
            err = r.json().get("error")
            detail = str(err.get("message", "")) if isinstance(err, dict) else str(err) if err else r.text
        except (ValueError, AttributeError):
            detail = r.text
        return self._redactor.text(detail)[:_DETAIL_CHARS]

    async def list_models(self, endpoint: int = 0) -> list[str]:
        """The model ids one server offers (GET /models)."""
        try:
            return [self._redactor.text(m["id"]) for m in await self._list_models(self.endpoints[endpoint])]
        except LLMError as err:
            raise self._redact(err) from None

    async def _list_models(self, ep: _Endpoint) -> list[dict]:
        """The entries of a server's model list, each with its `id`."""
        try:
            r = await self._fetch(ep, "GET", "/models")
        except TimeoutError:
            raise self._past_deadline(ep) from None
        except ReplyTooLarge:
            raise self._too_large(ep) from None
        except UnreadableEncoding as exc:
            raise self._unreadable(ep, exc) from None
        except httpx.TimeoutException:
            raise LLMError("timeout", f"{ep.url} did not answer in time") from None
        except httpx.HTTPError as exc:
            raise LLMError("unreachable", f"cannot reach {ep.url}: {_describe(exc)}") from None
        if r.status_code in (401, 403):
            raise LLMError("auth", f"{ep.url} refused the API key (HTTP {r.status_code})", r.status_code)
        if r.status_code != 200:
            raise LLMError(
                "http", f"{ep.url}/models answered HTTP {r.status_code}: {self._error_detail(r)}", r.status_code
            )
        try:
            entries = r.json().get("data", [])
            if all(isinstance(m["id"], str) for m in entries):
                return entries
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
        raise LLMError("bad_response", f"{ep.url}/models answered something that is not a model list")

    async def _llama_slots(self, ep: _Endpoint) -> int | None:
        """The slots of a llama.cpp server, from its `/props` (None when it
        does not say): a speed-up only, so any failure just leaves it off."""
        try:
            r = await self._fetch(ep, "GET", "/props", root=True)
            slots = r.json().get("total_slots") if r.status_code == 200 else None
        except (TimeoutError, ReplyTooLarge, httpx.HTTPError, ValueError, AttributeError):
            return None
        return slots if isinstance(slots, int) and not isinstance(slots, bool) and slots > 0 else None

    async def check_model(self) -> None:
        """Fail early, clearly, when a server is unreachable, refuses the key
        or lacks the model. With no model named, the servers' only model is
        chosen (several to choose from is an error that lists them). A
        single llama.cpp server (its model list says `owned_by: llamacpp`)
        also tells its slots, for slot affinity."""
        for ep in self.endpoints:
            try:
                entries = await self._list_models(ep)
            except LLMError as err:
                raise self._redact(err) from None
            models = [self._redactor.text(m["id"]) for m in entries]
            if self.model is None:
                if len(models) != 1:
                    offered = ", ".join(models[:10]) or "none listed"
                    raise LLMError(
                        "unknown_model", f"{ep.url} offers {len(models)} models ({offered}); choose one with --model"
                    )
                self.model = models[0]
            elif models and self.model not in models:
                raise LLMError(
                    "unknown_model",
                    f"the server at {ep.url} has no model `{self.model}` (it has: {', '.join(models[:10])})",
                )
            if (
                self.slots is None
                and len(self.endpoints) == 1
                and entries
                and all(isinstance(m, dict) and m.get("owned_by") == "llamacpp" for m in entries)
            ):
                self.slots = await self._llama_slots(ep)

    async def chat(self, request: ChatRequest) -> Completion:
        """One completion, retried on transient failures; raises LLMError."""
        if self.model is None:
            raise LLMError("unknown_model", "no model chosen: call check_model() first, or name one")
        body = request.body(self.model)
        if self.slots and request.affinity is not None:
            body["id_slot"] = self._slot(request.affinity, self.slots)
            body["cache_prompt"] = True
        attempt = 0
        while True:
            attempt += 1
            ep = self._pick()
            try:
                async with ep.sem:
                    ep.in_flight += 1
                    try:
                        return await self._once(ep, body, request.messages, attempt)
                    finally:
                        ep.in_flight -= 1
            except _Retry as r:
                if attempt > self.max_retries:
                    err = r.error
                    raise self._redact(
                        LLMError(err.kind, f"{err.message} (gave up after {attempt} attempts)", err.status, attempt)
                    ) from None
                await asyncio.sleep(self._delay(attempt - 1, r.after))
            except LLMError as err:
                raise self._redact(err) from None

    async def _once(self, ep: _Endpoint, body: dict, messages: tuple[dict, ...], attempt: int) -> Completion:
        started = time.perf_counter()
        try:
            r = await self._fetch(ep, "POST", "/chat/completions", body, messages=messages)
        except TimeoutError:
            raise _Retry(self._past_deadline(ep)) from None
        except ReplyTooLarge:
            # Not retried: the same request would be answered at length again.
            raise self._too_large(ep, attempt) from None
        except UnreadableEncoding as exc:  # nor this: the server would encode it so again
            raise self._unreadable(ep, exc, attempt) from None
        except httpx.TimeoutException:
            raise _Retry(LLMError("timeout", f"{ep.url} did not answer in time")) from None
        except httpx.ConnectError as exc:
            raise _Retry(LLMError("unreachable", f"cannot reach {ep.url}: {_describe(exc)}")) from None
        except httpx.HTTPError as exc:
            raise _Retry(LLMError("unreachable", f"the connection to {ep.url} broke: {_describe(exc)}")) from None
        latency = (time.perf_counter() - started) * 1000
        status = r.status_code
        if status == 429 or status >= 500:
            detail = self._error_detail(r)
            raise _Retry(
                LLMError("http", f"{ep.url} answered HTTP {status}" + (f": {detail}" if detail else ""), status),
                retry_after_seconds(r.headers.get("retry-after")),
            )
        if status in (401, 403):
            raise LLMError("auth", f"{ep.url} refused the API key (HTTP {status})", status, attempt)
        if status != 200:
            detail = self._error_detail(r)
            raise LLMError(
                _error_kind(status, detail, body), f"{ep.url} answered HTTP {status}: {detail}", status, attempt
            )
        try:
            completion = read_completion(r.json(), body["model"], latency_ms=round(latency, 1), attempts=attempt)
        except ReplyShapeError as exc:  # not JSON, or not a chat completion
            reason = exc.reason
            if exc.refusal:  # asked again, it would refuse again
                reason = self._redactor.text(reason)[:_DETAIL_CHARS]
                raise LLMError(
                    "refused", f"the model at {ep.url} declined to answer: {reason}", None, attempt
                ) from None
            raise _Retry(
                LLMError("bad_response", f"{ep.url} answered something that is not a chat completion: {reason}")
            ) from None
        return self._redactor.completion(completion)


class ReplyShapeError(ValueError):
    """A body that is not a chat completion this client can read: `reason`
    says what is wrong in the words of the format; `refusal` when the model
    declined to answer (its `message.refusal`)."""

    def __init__(self, reason: str, refusal: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.refusal = refusal


# The text parts of a `content` list (OpenAI's `text`; the Responses API's `output_text`).
_TEXT_PARTS = ("text", "output_text")


def read_completion(data: Any, model: str, **extra) -> Completion:
    """A chat completion body (`{"choices": [{"message": {...}}], "model",
    "usage"}`) as a Completion, the one reader of a reply's shape (the live
    client's and a batch import's). The message's `content` is text, or a
    list of parts whose text parts are joined (other parts, e.g. images,
    carry no answer); null content is an empty reply. `model` stands in for
    a body that names none; `extra` are the Completion's other fields
    (latency, attempts). Token counts and logprobs of an unexpected shape
    are left out rather than trusted. ReplyShapeError otherwise."""
    if not isinstance(data, dict):
        raise ReplyShapeError("the body is not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ReplyShapeError("it has no `choices`")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise ReplyShapeError("its first choice has no `message` object")
    content = message.get("content")
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise ReplyShapeError("a part of `message.content` is not an object with a `type`")
            if part["type"] in _TEXT_PARTS:
                if not isinstance(part.get("text"), str):
                    raise ReplyShapeError(f"a `{part['type']}` part of `message.content` has no `text` string")
                texts.append(part["text"])
            elif part["type"] == "refusal" and isinstance(part.get("refusal"), str):
                raise ReplyShapeError(part["refusal"] or "no reason given", refusal=True)
        content = "".join(texts)
    elif content is None:
        refusal = message.get("refusal")
        if isinstance(refusal, str):
            raise ReplyShapeError(refusal or "no reason given", refusal=True)
        content = ""
    elif not isinstance(content, str):
        raise ReplyShapeError(f"its `message.content` is {_json_kind(content)}, not text or a list of text parts")
    usage = data.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    logprobs = choice.get("logprobs")
    logprobs = logprobs.get("content") if isinstance(logprobs, dict) else None
    finish = choice.get("finish_reason")
    served = data.get("model")
    return Completion(
        text=content,
        model=served if isinstance(served, str) and served else model,
        logprobs=logprobs if isinstance(logprobs, list) else None,
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
        finish_reason=finish if isinstance(finish, str) else None,
        **extra,
    )


def _count(value: Any) -> int:
    """A token count as reported, or 0 when it is not a whole number of at least 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _json_kind(value: Any) -> str:
    for kind, name in ((bool, "a boolean"), ((int, float), "a number"), (dict, "an object")):
        if isinstance(value, kind):
            return name
    return "a value of another kind"


_DETAIL_CHARS = 300  # how much of an error answer a message quotes
_AFFINITIES_KEPT = 4096  # far more items than are ever in flight at once


@attrs.frozen
class _Answer:
    """A server's answer, read whole."""

    status_code: int
    headers: dict[str, str]  # lower-case names
    content: bytes

    def json(self) -> Any:
        """The body's JSON value; ReplyShapeError (a ValueError) when it is
        not JSON, or nests too deeply for the decoder to recurse through."""
        try:
            return json.loads(self.content)
        except RecursionError:
            raise ReplyShapeError("its JSON nests too deeply") from None
        except ValueError:
            raise ReplyShapeError("its body is not JSON") from None

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


def _httpx_client(endpoints: list[_Endpoint], per_endpoint: int, headers: dict, timeout: float) -> httpx.AsyncClient:
    """httpx's client for `endpoints` (RBG_PLAIN_LIBS=http): the same bound
    per server, TLS context and proxies (none for a server on this machine)."""
    limit = per_endpoint * len(endpoints)
    return _CookielessClient(
        # Only the encodings read within the cap (`BodyDecoder`), whatever decoders httpx has.
        headers={**headers, "Accept-Encoding": ACCEPTED_ENCODINGS},
        timeout=httpx.Timeout(timeout),
        limits=httpx.Limits(max_connections=limit, max_keepalive_connections=limit),
        trust_env=not all(_is_loopback(e.url) for e in endpoints),
        verify=tls_context(),
    )


class _CookielessClient(httpx.AsyncClient):
    """httpx's client without cookies: an API call stands alone (and the
    call cache assumes so). Also saves the ~30 us per call that httpx spends
    offering each response to even an empty cookie jar."""

    @property  # type: ignore[misc]  # read-only on purpose: there is no jar to set
    def cookies(self) -> httpx.Cookies:
        return _NO_COOKIES


class _NoCookies(httpx.Cookies):
    def extract_cookies(self, response: httpx.Response) -> None:
        pass

    def __bool__(self) -> bool:
        return False


_NO_COOKIES = _NoCookies()


def _error_kind(status: int, detail: str, body: dict) -> str:
    """What a non-retryable error answer means, from its status and message."""
    text = detail.lower()
    # A server without structured output names the field it refuses; the
    # caller can then ask again in plain text.
    if (
        status in (400, 422)
        and "response_format" in body
        and any(w in text for w in ("response_format", "json_schema", "schema"))
    ):
        return "unsupported"
    if status == 404 or ("model" in text and ("not" in text or "unknown" in text)):
        return "unknown_model"
    return "http"


def _is_loopback(url: str) -> bool:
    host = httpx.URL(url).host
    return host in ("localhost", "::1") or host.startswith("127.")


def _describe(exc: Exception) -> str:
    return type(exc).__name__ + (f": {exc}" if str(exc) else "")


__all__ = [
    "ChatRequest",
    "Completion",
    "LLMError",
    "OpenAIClient",
    "ReplyShapeError",
    "Sampling",
    "read_completion",
    "retry_after_seconds",
]
