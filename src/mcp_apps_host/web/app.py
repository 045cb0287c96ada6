"""The host page's app (page, API, WebSocket), and the one app the console serves on both ports.

No protocol decisions here: requests are checked by the middleware, then handed to `host/`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from ..host.core import Host
from ..policy.csp import host_page_csp
from ..store.audit import AuditFilter
from .access import COOKIE, Access
from .middleware import CookieBackend, HostHeaderMiddleware, SameOriginMiddleware
from .sandbox import sandbox_app
from .socket import run_tab
from .static import PAGE_HEADERS, STATIC, static_text

NOT_SIGNED_IN = """<!doctype html><meta charset="utf-8"><title>mcp-apps-host</title>
<body style="font-family:system-ui;margin:3rem;max-width:40rem">
<h1>Open the link printed in the terminal</h1>
<p>This console only opens through the access link <code>http://HOST:PORT/?token=…</code>
that <code>mcp-apps-host serve</code> prints when it starts.</p></body>"""

_AUDIT_FIELDS = ("view", "server", "conversation", "direction", "decision", "method")


async def index(request: Request) -> Response:
    access: Access = request.app.state.access
    token = request.query_params.get("token")
    if token is not None:
        if not access.token_ok(token):
            return HTMLResponse(NOT_SIGNED_IN, status_code=401)
        # Trade the token for a cookie and drop it from the address bar and history.
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(COOKIE, access.token, httponly=True, samesite="strict", path="/")
        return response
    if not request.user.is_authenticated:
        return HTMLResponse(NOT_SIGNED_IN, status_code=401)
    return HTMLResponse(static_text("index.html"),
                        headers={**PAGE_HEADERS, "Content-Security-Policy": request.app.state.page_csp})


def _refused(request: HTTPConnection) -> Response | None:
    if request.user.is_authenticated:
        return None
    return PlainTextResponse("not signed in: open the access link printed in the terminal", status_code=401)


async def servers(request: Request) -> Response:
    host: Host = request.app.state.host
    return _refused(request) or JSONResponse({"servers": host.servers.snapshot()})


async def health(request: Request) -> Response:
    host: Host = request.app.state.host
    return _refused(request) or JSONResponse({"ok": True, "servers": {
        c.name: str(c.status) for c in host.servers.connections.values()}})


async def audit(request: Request) -> Response:
    """The audit trail: `?format=jsonl` (default) or `json`, filtered by view, server, conversation,
    direction, decision, method, since (epoch seconds)."""
    if (refused := _refused(request)) is not None:
        return refused
    trail = request.app.state.host.audit
    if trail is None:
        return PlainTextResponse("the audit trail is off", status_code=404)
    q = request.query_params
    try:
        fields: dict[str, Any] = {k: q[k] for k in _AUDIT_FIELDS if q.get(k)}
        where = AuditFilter(**fields, since=float(q["since"]) if q.get("since") else None)
        limit = min(int(q.get("limit", "1000")), 10000)
    except ValueError as exc:
        return PlainTextResponse(f"bad filter: {exc} (since must be a number and limit an integer)", status_code=400)
    await trail.drain()
    if q.get("format", "jsonl") == "json":
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
    try:
        payload = await asyncio.to_thread(trail.payload, sha)
    except KeyError:
        return PlainTextResponse("no such payload", status_code=404)
    return JSONResponse({"sha256": sha, "payload": payload})


async def ws(socket: WebSocket) -> None:
    if not socket.user.is_authenticated:
        await socket.close(code=1008)
        return
    await socket.accept()
    await run_tab(socket.app.state.host, socket)


ROUTES = [
    Route("/", index),
    Route("/api/servers", servers),
    Route("/api/health", health),
    Route("/api/audit", audit),
    Route("/api/audit/payload/{sha256}", audit_payload),
    WebSocketRoute("/ws", ws),
    Mount("/static", StaticFiles(directory=str(STATIC)), name="static"),
]


def host_app(host: Host, access: Access, *, lifespan: Callable[[Any], Any] | None = None) -> Starlette:
    """The host page's app: the page, its API and its WebSocket, behind the access checks."""
    app = Starlette(
        routes=ROUTES,
        middleware=[
            Middleware(HostHeaderMiddleware, allowed=access.host_ok),
            Middleware(SameOriginMiddleware, access=access),
            Middleware(AuthenticationMiddleware, backend=CookieBackend(access)),
        ],
        lifespan=lifespan,
    )
    app.state.host = host
    app.state.access = access
    app.state.page_csp = host_page_csp(host.sandbox.page_sources)
    return app


def host_lifespan(host: Host, on_ready: Callable[[], None] | None = None) -> Callable[[Any], Any]:
    """Start the servers with the app, and stop them (and write the audit trail out) with it."""

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        host.start()
        if on_ready is not None:
            on_ready()
        try:
            yield
        finally:
            await host.stop()

    return lifespan


class ByPort:
    """One ASGI app for both of the console's ports: the sandbox port gets the sandbox app,
    everything else (and the lifespan) the host page's app."""

    def __init__(self, host_page: ASGIApp, sandbox: ASGIApp, sandbox_port: int) -> None:
        self.host_page = host_page
        self.sandbox = sandbox
        self.sandbox_port = sandbox_port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = scope.get("server")
        if scope["type"] != "lifespan" and server is not None and server[1] == self.sandbox_port:
            await self.sandbox(scope, receive, send)
        else:
            await self.host_page(scope, receive, send)


def console_app(host: Host, access: Access, on_ready: Callable[[], None] | None = None) -> ByPort:
    """What `serve` runs: the host page on `access.port`, the sandbox on the sandbox's port."""
    sandbox = HostHeaderMiddleware(sandbox_app(host), allowed=host.sandbox.host_allowed)
    return ByPort(host_app(host, access, lifespan=host_lifespan(host, on_ready)), sandbox, host.sandbox.port)
