"""The client's byte stream as pygls reads it: well-formed frames only.

pygls's read loop trusts every `Content-Length`: a huge one makes it
allocate the whole body (MemoryError, the server dies), and a frame with a
missing, negative or non-numeric one leaves the body to be read as the next
header, so the next valid frame is lost too. `Frames` stands in for stdin:
it reads the base protocol's frames itself, hands pygls each good frame
re-framed with its true length, and answers each bad one with a JSON-RPC
parse error (its id cannot be known), then skips to the next frame's
first header. Memory stays within `MAX_BODY` plus a line.

Public API: `Frames(stream, reply)`, `FrameReader(stream)`, `LockedStream`,
`parse_error(message)`, `MAX_BODY`, `BadFrame`.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable
from typing import IO

logger = logging.getLogger(__name__)

MAX_BODY = 64 * 1024 * 1024  # far above any real document, far below a MemoryError
_MAX_LINE = 64 * 1024  # a header line longer than this is not a header
_CHUNK = 64 * 1024
_HEADERS = (b"content-length:", b"content-type:")
_KEEP = max(map(len, _HEADERS)) - 1
PARSE_ERROR = -32700
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # a header's name (RFC 9110)


class BadFrame(Exception):
    """A frame that cannot be read; `message` says why."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def _shown(raw: bytes) -> str:
    text = raw.strip().decode("utf-8", "replace")
    return text if len(text) <= 40 else text[:40] + "..."


class FrameReader:
    """The frames of a byte stream: `next()` gives a body, None at the end,
    or raises `BadFrame`, after which the next call skips to the next
    frame's header. Memory is bounded by `max_body` plus a line."""

    def __init__(self, stream: IO[bytes], max_body: int = MAX_BODY):
        self._stream = stream
        self._max_body = max_body
        self._buf = b""
        self._eof = False
        self._resync = False

    def _fill(self) -> bool:
        if self._eof:
            return False
        read1 = getattr(self._stream, "read1", None)
        chunk = read1(_CHUNK) if read1 is not None else self._stream.read(_CHUNK)
        if not chunk:
            self._eof = True
            return False
        self._buf += chunk
        return True

    def _line(self) -> bytes:
        """One line with its newline, at most `_MAX_LINE` bytes, b"" at the end."""
        while (end := self._buf.find(b"\n", 0, _MAX_LINE)) < 0 and len(self._buf) < _MAX_LINE and self._fill():
            pass
        cut = end + 1 if end >= 0 else min(len(self._buf), _MAX_LINE)
        line, self._buf = self._buf[:cut], self._buf[cut:]
        return line

    def _read(self, n: int) -> bytes:
        parts, have = [self._buf[:n]], min(n, len(self._buf))
        self._buf = self._buf[n:]
        while have < n and (chunk := self._stream.read(n - have)):
            parts.append(chunk)
            have += len(chunk)
        return b"".join(parts)

    def _skip_to_header(self) -> None:
        """Drop bytes up to the next frame's first header (either of the
        two the base protocol defines, in any case)."""
        while True:
            low = self._buf.lower()
            found = [i for h in _HEADERS if (i := low.find(h)) >= 0]
            if found:
                self._buf = self._buf[min(found) :]
                return
            self._buf = self._buf[-_KEEP:]  # a header may straddle two chunks
            if not self._fill():
                self._buf = b""
                return

    def next(self) -> bytes | None:
        if self._resync:
            self._resync = False
            self._skip_to_header()
        length: int | None = None
        problem = None
        seen = False
        while True:
            line = self._line()
            if not line:
                return None
            if not line.strip():
                if seen:
                    break
                continue  # blank lines between frames
            seen = True
            name, colon, value = line.partition(b":")
            if not colon or not _TOKEN.fullmatch(name) or not line.endswith(b"\n"):
                # Not a header: a body left unread, or noise; the next frame may follow on this very line.
                self._buf = line[1:] + self._buf
                self._resync = True
                raise BadFrame(f"`{_shown(line)}` is not a header line")
            if name.strip().lower() == b"content-length":
                digits = value.strip()
                if not digits.isdigit():
                    problem = f"Content-Length `{_shown(digits)}` is not a whole number of bytes"
                elif len(digits) > 12 or int(digits) > self._max_body:
                    problem = f"Content-Length {_shown(digits)} is over the limit of {self._max_body} bytes"
                else:
                    length = int(digits)
        if problem is None and not length:
            problem = "no Content-Length header" if length is None else "an empty body (Content-Length 0)"
        if problem is not None:
            self._resync = length is None or length > 0  # a body of unknown length may follow
            raise BadFrame(problem)
        assert length is not None
        body = self._read(length)
        return body if len(body) == length else None


class LockedStream:
    """A binary output stream whose writes are atomic: pygls writes answers
    from the event loop, `Frames` its parse errors from a reader thread."""

    def __init__(self, stream: IO[bytes]):
        self._stream = stream
        self._lock = threading.Lock()

    def write(self, data: bytes) -> int:
        with self._lock:
            n = self._stream.write(data)
            self._stream.flush()
            return n

    def flush(self) -> None:
        with self._lock:
            self._stream.flush()

    def close(self) -> None:
        with self._lock:
            self._stream.close()


def parse_error(message: str) -> bytes:
    """A framed JSON-RPC parse error with a null id (the request's is unknown)."""
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": message}}).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


class Frames:
    """A stand-in for stdin with the two calls pygls's loop makes:
    `readline()` gives a good frame's header lines, `read(n)` its body."""

    def __init__(self, stream: IO[bytes], reply: Callable[[bytes], object], max_body: int = MAX_BODY):
        self._frames = FrameReader(stream, max_body)
        self._reply = reply
        self._lines: list[bytes] = []
        self._body = b""

    def readline(self) -> bytes:
        if self._lines:
            return self._lines.pop()
        while True:
            try:
                body = self._frames.next()
            except BadFrame as exc:
                logger.warning("bad frame skipped: %s", exc.message)
                self._reply(parse_error(f"bad frame skipped: {exc.message}"))
                continue
            if body is None:
                return b""
            self._body = body
            self._lines = [b"\r\n"]
            return b"Content-Length: %d\r\n" % len(body)

    def read(self, n: int) -> bytes:
        body, self._body = self._body, b""
        return body
