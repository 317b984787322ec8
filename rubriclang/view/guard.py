"""The viewer's defences, checked before any route runs (`server.make_app`).

`rbg view` can write into a project (notes, the workbench's suites), so a
page elsewhere on the web must not be able to drive it:

- Host: only `127.0.0.1:PORT` or `localhost:PORT` (a page that rebinds its
  own name to 127.0.0.1 sends its own name: DNS rebinding is refused).
- Token: the one-time token printed by `rbg view`, in the query or in the
  HttpOnly, SameSite=Strict cookie the first request sets.
- POST: the Origin (else the Referer) must be this server's own origin,
  and the form must carry the session's CSRF token, which the server
  keeps in a second cookie, set on the first response (double submit: a
  cross-site page can read neither cookie, so it cannot fill the field).
  While a request is answered, `CSRF` holds its session's token for the
  forms the page renders.
- Paths: `confine` refuses any path given in a request that leaves the
  project folder (absolute, `..`, or a link that points out).
"""

from __future__ import annotations

import hmac
import os
import secrets
from contextvars import ContextVar

import attrs
from starlette.requests import Request

TOKEN_COOKIE = "rbg_view_token"
CSRF_COOKIE = "rbg_view_csrf"
CSRF_FIELD = "csrf"
HOSTS = ("127.0.0.1", "localhost")
# The CSRF token of the session whose request is being answered.
CSRF: ContextVar[str] = ContextVar("rbg_view_csrf", default="")


class Refused(Exception):
    """A request the guard refuses: `status` is the HTTP status to answer."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class OutsideProject(ValueError):
    """A path given in a request that is not a file under the project folder."""


def _same(given: str, expected: str) -> bool:
    return bool(given) and hmac.compare_digest(given.encode(), expected.encode())


@attrs.frozen
class Guard:
    """The checks for one server: its token, and its port (None: any, for
    an app not bound to a socket yet)."""

    token: str
    port: int | None = None

    def host_ok(self, host: str) -> bool:
        name, _, port = host.rpartition(":")
        if not name:  # no port given: only acceptable when the server's port is not known
            name, port = host, ""
        return name in HOSTS and (self.port is None or port == str(self.port))

    def check(self, request: Request) -> None:
        """Raise Refused unless `request` may reach a route: the Host, the
        token, and for a POST the origin (`check_form` checks its field)."""
        if not self.host_ok(request.headers.get("host", "")):
            raise Refused(403, "this viewer answers only its own address (127.0.0.1 or localhost, its port)")
        given = request.query_params.get("token") or request.cookies.get(TOKEN_COOKIE) or ""
        if not _same(given, self.token):
            raise Refused(403, "open the URL printed by `rbg view` (it holds the token)")
        if request.method not in ("GET", "HEAD"):
            self._same_origin(request)

    def _same_origin(self, request: Request) -> None:
        # Browsers send Origin with every POST; a client that sends neither
        # header is not a browser a page elsewhere can drive, and it still
        # needs the token and the CSRF field.
        own = f"http://{request.headers.get('host', '')}"
        origin = request.headers.get("origin")
        if origin is not None:
            if origin != own:
                raise Refused(403, f"a request from another site ({origin[:100]}) is refused")
            return
        referer = request.headers.get("referer")
        if referer is not None and referer != own and not referer.startswith(own + "/"):
            raise Refused(403, "a request from another site is refused")

    @staticmethod
    def check_form(request: Request, form: dict[str, str]) -> None:
        """Raise Refused unless `form` carries the CSRF token of the
        request's session (its cookie)."""
        session = request.cookies.get(CSRF_COOKIE, "")
        if not session or not _same(form.get(CSRF_FIELD, ""), session):
            raise Refused(403, "the form's CSRF token is missing or stale: reload the page and send it again")


def session_csrf(request: Request) -> tuple[str, bool]:
    """(the CSRF token of the request's session, whether it is new and must
    be set as a cookie)."""
    have = request.cookies.get(CSRF_COOKIE, "")
    return (have, False) if len(have) >= 32 else (secrets.token_urlsafe(32), True)


def csrf_cookie(csrf: str) -> str:
    """The Set-Cookie value that gives a session its CSRF token."""
    return f"{CSRF_COOKIE}={csrf}; HttpOnly; Path=/; SameSite=strict"


def confine(root: str, given: str) -> str:
    """The real path of `given`, a path relative to the project folder
    `root`; raises OutsideProject for an empty or absolute path, a `..`
    part, or one that resolves (through links) outside `root`."""
    if not given or "\x00" in given:
        raise OutsideProject("no path given")
    if os.path.isabs(given) or given.startswith("~"):
        raise OutsideProject(f"`{given}` is not a path inside the project: give it relative to the project folder")
    parts = given.replace("\\", "/").split("/")
    if ".." in parts:
        raise OutsideProject(f"`{given}` climbs out of the project folder (`..`)")
    top = os.path.realpath(root)
    real = os.path.realpath(os.path.join(top, given))
    if os.path.commonpath([top, real]) != top:
        raise OutsideProject(f"`{given}` leads outside the project folder (a link pointing out?)")
    return real
