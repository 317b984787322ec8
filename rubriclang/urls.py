"""Server URLs, read in one place: every server URL, from the command line,
the project config, a suite or the Python API, is parsed by `parse_base_url`,
which refuses what cannot be used as it stands and shows a refused URL
without its credentials (`shown_url`); `api_key_problem` says why a key
cannot be sent. Below the LLM layer, so that the project config
(`rubriclang.config`) checks its profiles' URLs without importing it.
"""

from __future__ import annotations

import re

import attrs


class URLError(ValueError):
    """A server URL that cannot be used: `message` says why (quoting the URL
    without its credentials), `hint` what would fix it."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.message = message
        self.hint = hint


@attrs.frozen
class BaseURL:
    """A server's base URL, parsed: `url` is where its API lives (scheme,
    host, port and path, which ends in `/v1`), and what messages, the call
    cache and the traces name it by; `query` (`x=1`, or empty) goes with
    every request to it, and is named nowhere (a query may hold a token)."""

    scheme: str
    host: str
    port: int
    path: str  # `/v1`, or `/some/prefix/v1`
    query: str
    origin: str  # `scheme://host[:port]`, as written

    @property
    def url(self) -> str:
        return self.origin + self.path


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def shown_url(url: str) -> str:
    """`url` as a message may quote it: a user name and password in it are
    `***`, and so is its query."""
    m = _SCHEME.match(url)
    start = m.end() if m else 0
    end = min((i for i in (url.find(c, start) for c in "/?#") if i != -1), default=len(url))
    at = url.rfind("@", start, end)
    if at != -1:
        url = url[:start] + "***" + url[at:]
    query = url.find("?")
    return url if query == -1 else url[: query + 1] + "***"


def api_key_problem(key: str) -> str | None:
    """Why `key` cannot be sent as `Authorization: Bearer KEY` (None: it
    can). A key is printable ASCII without spaces; anything else (a curly
    quote, a non-breaking space, a newline from the file it was read from)
    is a mistake that HTTP/1.1 could not even carry. The key is never quoted,
    only the place of its first bad character."""
    for i, ch in enumerate(key, 1):
        if not "\x21" <= ch <= "\x7e":
            what = "a space or control character" if ch.isspace() or ch < " " or ch == "\x7f" else "not ASCII"
            return f"its character {i} of {len(key)} is {what}: an API key is printable ASCII without spaces"
    return None


def parse_base_url(url: str) -> BaseURL:
    """A server's base URL (`http://host:8000`, `.../v1`, `https://.../v1?api-version=1`),
    or URLError. The path gets `/v1` unless it ends so. Refused: another
    scheme than http(s), no host, a port outside 1-65535, a fragment, and a
    user name or password in the URL, which would be sent in clear to the
    server and written wherever the URL is (the key goes in the environment
    variable that `--api-key-env` names, sent as `Authorization: Bearer`)."""
    import httpx

    shown = shown_url(url)
    example = "e.g. http://localhost:8000/v1"
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        reason = str(exc) if "@" not in url else "it is malformed"  # httpx may quote the credentials
        raise URLError(f"`{shown}` is not a URL: {reason}", example) from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise URLError(f"`{shown}` is not an http(s) URL with a host", example)
    if parsed.userinfo:
        raise URLError(
            f"`{shown}` holds a user name or password, which rubriclang does not send: it would go in clear to "
            "every log and file that names the server",
            "drop it from the URL; the server's key goes in the environment variable that --api-key-env names "
            "(a profile's `api_key_env`), sent as `Authorization: Bearer`",
        )
    default = 443 if parsed.scheme == "https" else 80
    port = parsed.port if parsed.port is not None else default
    if not 1 <= port <= 65535:
        raise URLError(f"`{shown}` has port {port}, outside 1-65535", example)
    if parsed.fragment:
        raise URLError(f"`{shown}` has a #fragment, which a server never receives", "drop the `#...` part")
    raw = parsed.raw_path.split(b"?", 1)[0].decode("ascii").rstrip("/")  # as written (percent-escapes kept)
    path = raw if raw.endswith("/v1") else raw + "/v1"
    start = url.index("://") + 3
    origin = url[: min((i for i in (url.find(c, start) for c in "/?") if i != -1), default=len(url))]  # as written
    return BaseURL(parsed.scheme, parsed.host, port, path, parsed.query.decode("ascii"), origin)
