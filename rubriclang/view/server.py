"""The viewer's HTTP server: Starlette on uvicorn, bound to 127.0.0.1.

Every request needs the one-time token printed in the URL (`?token=`),
as notebook servers do; the first one sets it as a cookie (HttpOnly,
SameSite=Strict), so the pages' own links need not carry it. A request
without either is refused (403), and so is one whose Host is not the
loopback address and port (a page elsewhere cannot rebind a name to it);
a POST must come from the viewer's own origin and carry the session's
CSRF token, which the first answer sets as a cookie (`guard`). Saving a
note also needs the token in the form. Every response carries the Content-Security-Policy
of `pages.CSP`.
"""

from __future__ import annotations

import hmac
import secrets
import socket
from collections.abc import Callable
from importlib import resources
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from rubriclang.audit.html.page import CSP as REPORT_CSP
from rubriclang.audit.notes import MAX_NOTE, NotesError, save_note
from rubriclang.view.guard import CSRF, Guard, Refused, csrf_cookie, session_csrf
from rubriclang.view.guard import TOKEN_COOKIE as COOKIE
from rubriclang.view.pages import CSP, NotFound, Site
from rubriclang.view.sources import Sources
from rubriclang.view.workbench import Workbench

HOST = "127.0.0.1"
STATIC = {"view.css": "text/css; charset=utf-8", "view.js": "text/javascript; charset=utf-8"}


def static_file(name: str) -> bytes:
    return resources.files("rubriclang.view").joinpath("static", name).read_bytes()


def _headers(csp: str = CSP) -> dict[str, str]:
    return {
        "Content-Security-Policy": csp,
        "X-Content-Type-Options": "nosniff",
        # Same-origin: a form's POST then carries the viewer's own Origin
        # (under no-referrer it is `null`), and no other site sees a URL.
        "Referrer-Policy": "same-origin",
        "X-Frame-Options": "DENY",
        "Cache-Control": "no-store",
    }


def _bench(site: Site, checks: Guard, workbench: Workbench | None):
    """The /workbench route: the page (GET), an action of its form (POST,
    with the session's CSRF token)."""

    async def bench(request: Request) -> Response:
        if workbench is None:
            return PlainTextResponse("the workbench needs a project: run `rbg view` with no path", 404, _headers())
        if "token" in request.query_params:  # as every page: the token into a cookie, out of the address
            response: Response = RedirectResponse(site.link("workbench"), status_code=303, headers=_headers())
            response.set_cookie(COOKIE, request.query_params["token"], httponly=True, samesite="strict", path="/")
            return response
        form = None
        if request.method == "POST":
            body = await request.body()
            if len(body) > 64 * 1024:
                return PlainTextResponse("the form is too large", status_code=413, headers=_headers())
            form = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
            try:
                checks.check_form(request, {k: v[0] for k, v in form.items()})
            except Refused as exc:
                return PlainTextResponse(exc.message, status_code=exc.status, headers=_headers())
        # Loading a judge and its items takes a while: off the event loop.
        page = await run_in_threadpool(workbench.page, site, CSRF.get(), form)
        return HTMLResponse(page, headers=_headers())

    return bench


def make_app(
    sources: Sources,
    token: str,
    landing: Callable[[Site], str] | None = None,
    port: int | None = None,
    workbench: Workbench | None = None,
) -> ASGIApp:
    """The viewer over `sources`, answering only requests with `token` on
    `port` (None: any); `landing` renders its index instead (a project's,
    `view.landing`); `workbench` serves /workbench (a project's)."""
    site = Site(sources, form_token=token)
    site.env.globals["csrf"] = CSRF.get  # a form's hidden field: the session's token
    checks = Guard(token, port)

    async def page(request: Request) -> Response:
        route = request.path_params.get("route") or "index"
        params = {k: v for k, v in request.query_params.items() if k != "token"}
        try:
            html = landing(site) if route == "index" and landing is not None else site.render(route, params)
        except NotFound as exc:
            return PlainTextResponse(str(exc), status_code=404, headers=_headers())
        except NotesError as exc:
            return PlainTextResponse(str(exc), status_code=500, headers=_headers())
        response: Response = HTMLResponse(html, headers=_headers(REPORT_CSP if route == "report" else CSP))
        if "token" in request.query_params:
            # Once the cookie is set, drop the token from the address bar
            # (and from the history) by redirecting to the same page.
            response = RedirectResponse(site.link(route, **params), status_code=303, headers=_headers())
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
        return response

    bench = _bench(site, checks, workbench)

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return PlainTextResponse("not found", status_code=404, headers=_headers())
        return Response(static_file(name), media_type=STATIC[name], headers=_headers())

    async def notes(request: Request) -> Response:
        # The note form is URL-encoded: parsed here, so no multipart parser is needed.
        body = await request.body()
        if len(body) > 4 * MAX_NOTE:
            return PlainTextResponse("the note is too long", status_code=413, headers=_headers())
        form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()}
        if not hmac.compare_digest(str(form.get("token", "")).encode(), token.encode()):
            return PlainTextResponse("a note needs the form's token", status_code=403, headers=_headers())
        try:
            checks.check_form(request, form)
        except Refused as exc:
            return PlainTextResponse(exc.message, status_code=exc.status, headers=_headers())
        n = request.query_params.get("n", "0")
        try:
            audit = sources.audits[int(n)]
        except (ValueError, IndexError):
            return PlainTextResponse("no such audit", status_code=404, headers=_headers())
        try:
            save_note(audit.folder, str(form.get("item", "")), str(form.get("text", "")))
        except (NotesError, OSError) as exc:
            return PlainTextResponse(f"the note was not saved: {exc}", status_code=500, headers=_headers())
        return RedirectResponse(site.link("audit", n=n), status_code=303, headers=_headers())

    app = Starlette(
        routes=[
            Route("/static/{name}", static),
            Route("/notes", notes, methods=["POST"]),
            Route("/workbench", bench, methods=["GET", "POST"]),
            Route("/", page),
            Route("/{route}", page),
        ]
    )

    async def guard(scope, receive, send):
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        request = Request(scope)
        try:
            checks.check(request)
        except Refused as exc:
            await PlainTextResponse(exc.message, status_code=exc.status, headers=_headers())(scope, receive, send)
            return
        csrf, new = session_csrf(request)
        CSRF.set(csrf)

        async def send_with_session(message):
            # A session's first answer gives it its CSRF token (the cookie).
            if new and message["type"] == "http.response.start":
                MutableHeaders(scope=message).append("set-cookie", csrf_cookie(csrf))
            await send(message)

        await app(scope, receive, send_with_session)

    return guard


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def new_token() -> str:
    return secrets.token_urlsafe(24)


def serve(sources: Sources, port: int, token: str, on_ready=None, landing=None, workbench=None) -> None:
    """Serve until interrupted (`landing`, `workbench`: as `make_app`'s)."""
    import uvicorn

    config = uvicorn.Config(
        make_app(sources, token, landing, port, workbench),
        host=HOST,
        port=port,
        log_level="warning",
        lifespan="off",
        server_header=False,
    )
    server = uvicorn.Server(config)
    if on_ready is not None:
        original = server.startup

        async def startup(sockets=None):
            await original(sockets=sockets)
            on_ready()

        server.startup = startup  # type: ignore[method-assign]  # uvicorn has no startup hook: wrap its method
    server.run()
