"""The host page's app (page, API, WebSocket), and the one app that serves it and the sandbox.

No protocol decisions here: requests are checked by the middleware, then handed to `host/`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.authentication import AuthenticationBackend
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from ..host.process.core import Host
from ..policy.csp import host_page_csp
from ..store.audit import AuditFilter
from . import admin, oauth
from .access import COOKIE, Access
from .health import PATHS as HEALTH_PATHS
from .health import health_app
from .middleware import CookieBackend, HostHeaderMiddleware, Person, SameOriginMiddleware
from .sandbox import sandbox_app
from .socket import run_tab
from .static import PAGE_HEADERS, STATIC, static_text
from .stopping import drain_on_signals

_PAGE = """<!doctype html><meta charset="utf-8"><title>mcp-apps-host</title>
<body style="font-family:system-ui;margin:3rem;max-width:40rem"><h1>{title}</h1><p>{text}</p></body>"""
CONSOLE_SIGN_IN = _PAGE.format(
    title="Open the link printed in the terminal",
    text="This console only opens through the access link <code>http://HOST:PORT/?token=…</code> that "
         "<code>mcp-apps-host serve</code> prints when it starts.")
APP_SIGN_IN = _PAGE.format(title="Not signed in", text="Sign in to the application this host is part of.")

_AUDIT_FIELDS = ("view", "server", "conversation", "direction", "decision", "method")


@dataclass(frozen=True)
class Gate:
    """Who may use the host page: its Host names, its own origin, how a person signs in."""

    host_ok: Callable[[str | None], bool]
    origin_ok: Callable[[str | None, str | None], bool]
    backend: AuthenticationBackend
    sign_in_page: str
    access: Access | None = None  # the console's token, traded for its cookie at /?token=


def console_gate(access: Access, origin: str | None = None) -> Gate:
    """The console's token and cookie; with ``origin`` (a public origin behind a proxy), only that one."""
    if origin is None:
        return Gate(access.host_ok, access.origin_ok, CookieBackend(access), CONSOLE_SIGN_IN, access)
    return Gate(*origin_checks(origin), CookieBackend(access), CONSOLE_SIGN_IN, access)


def origin_checks(origin: str) -> tuple[Callable[[str | None], bool], Callable[[str | None, str | None], bool]]:
    """The page answers on its configured origin only: that Host, that Origin."""
    netloc = urlsplit(origin).netloc.lower()

    def host_ok(host: str | None) -> bool:
        return host is not None and host.lower() == netloc

    def origin_ok(seen: str | None, _host: str | None) -> bool:
        return seen is not None and seen.lower() == origin

    return host_ok, origin_ok


def _person(request: HTTPConnection) -> Person | None:
    user = request.user
    return user if isinstance(user, Person) else None


def _host(request: HTTPConnection) -> Host:
    """The host as the signed-in person sees it."""
    host: Host = request.app.state.host
    person = _person(request)
    assert person is not None
    return host.for_person(person.who, request.scope.get("root_path", ""))


async def index(request: Request) -> Response:
    gate: Gate = request.app.state.gate
    root = request.scope.get("root_path", "")
    token = request.query_params.get("token")
    if gate.access is not None and token is not None:
        if not gate.access.token_ok(token):
            return HTMLResponse(gate.sign_in_page, status_code=401)
        # Trade the token for a cookie and drop it from the address bar and history.
        response = RedirectResponse(f"{root}/", status_code=303)
        response.set_cookie(COOKIE, gate.access.token, httponly=True, samesite="strict", path=f"{root}/")
        return response
    if _person(request) is None:
        return HTMLResponse(gate.sign_in_page, status_code=401)
    if not request.url.path.endswith("/"):
        return RedirectResponse(f"{root}/", status_code=307)  # the page's own addresses are relative to it
    return HTMLResponse(static_text("index.html"),
                        headers={**PAGE_HEADERS, "Content-Security-Policy": request.app.state.page_csp})


def _refused(request: HTTPConnection) -> Response | None:
    if _person(request) is not None:
        return None
    return PlainTextResponse("not signed in: open the access link printed in the terminal", status_code=401)


async def servers(request: Request) -> Response:
    return _refused(request) or JSONResponse({"servers": _host(request).servers.snapshot()})  # as this person has them


async def health(request: Request) -> Response:
    if (refused := _refused(request)) is not None:
        return refused
    host: Host = request.app.state.host
    return JSONResponse({"ok": True, "servers": {c.name: str(c.status) for c in host.servers.connections.values()}})


async def audit(request: Request) -> Response:
    """The audit trail: `?format=jsonl` (default) or `json`, filtered by view, server, conversation,
    direction, decision, method, since (epoch seconds); in json, `order=newest` gives the latest first.
    A person gets their own rows; an admin their tenant's (`user=` narrows it to one person)."""
    if (refused := _refused(request)) is not None:
        return refused
    person = _person(request)
    assert person is not None
    trail = request.app.state.host.audit
    if trail is None:
        return PlainTextResponse("the audit trail is off", status_code=404)
    q = request.query_params
    identity = person.who
    user = (q.get("user") or None) if identity.admin else identity.user
    try:
        fields: dict[str, Any] = {k: q[k] for k in _AUDIT_FIELDS if q.get(k)}
        where = AuditFilter(**fields, tenant=identity.tenant, user_id=user,
                            since=float(q["since"]) if q.get("since") else None)
        limit = min(int(q.get("limit", "1000")), 10000)
    except ValueError as exc:
        return PlainTextResponse(f"bad filter: {exc} (since must be a number and limit an integer)", status_code=400)
    await trail.drain()
    if q.get("format", "jsonl") == "json":
        where = replace(where, newest_first=q.get("order") == "newest")  # a search's latest rows first
        return JSONResponse({"events": await asyncio.to_thread(trail.query, where, limit=limit)})
    lines = await asyncio.to_thread(lambda: list(trail.export_jsonl(where)))
    return Response("".join(lines), media_type="application/x-ndjson")


async def audit_payload(request: Request) -> Response:
    """One whole payload of the audit trail, by the `payload_sha256` its events carry."""
    if (refused := _refused(request)) is not None:
        return refused
    trail = request.app.state.host.audit
    sha = request.path_params["sha256"]
    if trail is None or len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
        return PlainTextResponse("no such payload (a payload_sha256 is 64 lowercase hex digits)", status_code=404)
    who = _person(request).who  # type: ignore[union-attr]  # signed in: _refused said so
    seen_by = AuditFilter(tenant=who.tenant, user_id=None if who.admin else who.user)
    try:
        payload = await asyncio.to_thread(trail.payload, sha, seen_by)
    except KeyError:
        return PlainTextResponse("no such payload", status_code=404)
    return JSONResponse({"sha256": sha, "payload": payload})


async def ws(socket: WebSocket) -> None:
    if _person(socket) is None:
        await socket.close(code=1008)
        return
    if socket.app.state.host.lifecycle.stopping:  # a new tab goes to another process (the page retries)
        await socket.close(code=1013)
        return
    await socket.accept()
    await run_tab(_host(socket), socket)


ROUTES = [
    Route("/", index),
    Route("/api/servers", servers),
    Route("/api/health", health),
    Route("/api/audit", audit),
    Route("/api/audit/payload/{sha256}", audit_payload),
    WebSocketRoute("/ws", ws),
    *(Route(path, endpoint) for path, endpoint in oauth.ROUTES),
    *(Route(path, endpoint, methods=methods) for path, endpoint, methods in admin.ROUTES),
    Mount("/static", StaticFiles(directory=str(STATIC)), name="static"),
]


def host_app(host: Host, gate: Access | Gate, *, lifespan: Callable[[Any], Any] | None = None) -> Starlette:
    """The host page's app: the page, its API and its WebSocket, behind the access checks."""
    gate = console_gate(gate) if isinstance(gate, Access) else gate
    app = Starlette(
        routes=ROUTES,
        middleware=[
            Middleware(HostHeaderMiddleware, allowed=gate.host_ok),
            Middleware(SameOriginMiddleware, origin_ok=gate.origin_ok),
            Middleware(AuthenticationMiddleware, backend=gate.backend),
        ],
        lifespan=lifespan,
    )
    app.state.host = host
    app.state.gate = gate
    app.state.page_csp = host_page_csp(host.sandbox.page_sources)
    return app


def host_lifespan(host: Host, on_ready: Callable[[], None] | None = None) -> Callable[[Any], Any]:
    """Start the servers with the app, and stop them (and write the audit trail out) with it."""

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        await host.start()
        restore = drain_on_signals(host.lifecycle)  # SIGTERM: drain the tabs and calls before the server stops
        if on_ready is not None:
            on_ready()
        try:
            yield
        finally:
            restore()
            await host.stop()

    return lifespan


class HostOrSandbox:
    """One ASGI app for the host page and the sandbox, told apart by the Host header: a request
    naming a sandbox origin goes to the sandbox app, everything else (and the lifespan) to the page."""

    def __init__(self, host_page: ASGIApp, host: Host) -> None:
        self.host_page = host_page
        self.sandbox = HostHeaderMiddleware(sandbox_app(host), allowed=host.sandbox.host_allowed)
        self.is_sandbox = host.sandbox.host_allowed
        self.health = health_app(host)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] in HEALTH_PATHS:  # a load balancer's probe, by any Host name
            await self.health(scope, receive, send)
        elif scope["type"] != "lifespan" and self.is_sandbox(Headers(scope=scope).get("host")):
            await self.sandbox(scope, receive, send)
        else:
            await self.host_page(scope, receive, send)


def console_app(host: Host, access: Access, on_ready: Callable[[], None] | None = None) -> HostOrSandbox:
    """What `serve` runs: the host page and the sandbox, on their ports or one port."""
    return HostOrSandbox(host_app(host, access, lifespan=host_lifespan(host, on_ready)), host)
