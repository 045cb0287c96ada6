"""The two web apps: the host page (API + WebSocket) and the sandbox origin (proxy pages).

No protocol decisions here: requests are checked, then handed to `host/`.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from ..host.core import Host
from ..host.tab import TabSession
from ..policy.csp import host_page_csp
from .security import COOKIE, Access

log = logging.getLogger("mcp_apps_host.web")
STATIC = resources.files("mcp_apps_host") / "web" / "static"

_PAGE_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

NOT_SIGNED_IN = """<!doctype html><meta charset="utf-8"><title>mcp-apps-host</title>
<body style="font-family:system-ui;margin:3rem;max-width:40rem">
<h1>Open the link printed in the terminal</h1>
<p>This console only opens through the access link <code>http://HOST:PORT/?token=…</code>
that <code>mcp-apps-host serve</code> prints when it starts.</p></body>"""


def host_app(host: Host, access: Access) -> Starlette:
    page_csp = host_page_csp(host.sandbox.page_sources)

    def signed_in(request: Request) -> bool:
        return access.token_ok(request.cookies.get(COOKIE))

    async def index(request: Request) -> Response:
        if not access.host_ok(request.headers.get("host")):
            return PlainTextResponse("unknown Host header", status_code=421)
        token = request.query_params.get("token")
        if token is not None:
            if not access.token_ok(token):
                return HTMLResponse(NOT_SIGNED_IN, status_code=401)
            # Trade the token for a cookie and drop it from the address bar and history.
            response = RedirectResponse("/", status_code=303)
            response.set_cookie(COOKIE, access.token, httponly=True, samesite="strict", path="/")
            return response
        if not signed_in(request):
            return HTMLResponse(NOT_SIGNED_IN, status_code=401)
        return HTMLResponse(_static_text("index.html"), headers={**_PAGE_HEADERS, "Content-Security-Policy": page_csp})

    def api_guard(request: Request) -> Response | None:
        if not access.host_ok(request.headers.get("host")):
            return PlainTextResponse("unknown Host header", status_code=421)
        origin = request.headers.get("origin")
        if origin is not None and not access.origin_ok(origin, request.headers.get("host")):
            return PlainTextResponse("cross-origin requests are not allowed", status_code=403)
        if not signed_in(request):
            return PlainTextResponse("not signed in: open the access link printed in the terminal", status_code=401)
        return None

    async def servers(request: Request) -> Response:
        return api_guard(request) or JSONResponse({"servers": host.servers.snapshot()})

    async def audit(request: Request) -> Response:
        """The audit trail: `?format=jsonl` (default) or `json`, filtered by view, server, conversation,
        direction, decision, method, since (epoch seconds)."""
        if (refused := api_guard(request)) is not None:
            return refused
        if host.audit is None:
            return PlainTextResponse("the audit trail is off", status_code=404)
        q = request.query_params
        filters: dict[str, Any] = {k: q[k] for k in ("view", "server", "conversation", "direction", "decision", "method")
                                   if q.get(k)}
        try:
            if q.get("since"):
                filters["since"] = float(q["since"])
            limit = min(int(q.get("limit", "1000")), 10000)
        except ValueError:
            return PlainTextResponse("since must be a number and limit an integer", status_code=400)
        await host.audit.drain()
        if q.get("format", "jsonl") == "json":
            rows = await asyncio.to_thread(host.audit.query, **filters, limit=limit)
            return JSONResponse({"events": rows})
        lines = await asyncio.to_thread(lambda: list(host.audit.export_jsonl(**filters)))
        return Response("".join(lines), media_type="application/x-ndjson")

    async def health(request: Request) -> Response:
        return api_guard(request) or JSONResponse({"ok": True, "servers": {
            c.name: str(c.status) for c in host.servers.connections.values()}})

    async def ws(socket: WebSocket) -> None:
        headers = socket.headers
        if not (access.origin_ok(headers.get("origin"), headers.get("host")) and access.token_ok(socket.cookies.get(COOKIE))):
            await socket.close(code=1008)
            return
        await socket.accept()
        await run_tab(host, socket)

    return Starlette(routes=[
        Route("/", index),
        Route("/api/servers", servers),
        Route("/api/health", health),
        Route("/api/audit", audit),
        WebSocketRoute("/ws", ws),
        Mount("/static", StaticFiles(directory=str(STATIC)), name="static"),
    ])


async def run_tab(host: Host, socket: WebSocket) -> None:
    outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    tab = TabSession(host, outbox)

    async def writer() -> None:
        while True:
            batch = [await outbox.get()]
            while not outbox.empty():
                batch.append(outbox.get_nowait())
            # A reply acknowledges a view's request: it leaves only once the audit trail holds it
            # (one group commit covers the whole batch), so a crash never loses what a view saw answered.
            if host.audit is not None and any(_is_reply(m) for m in batch):
                await host.audit.drain()
            for message in batch:
                await socket.send_text(json.dumps(message, ensure_ascii=False))

    write_task = asyncio.create_task(writer())
    limit = host.limits.max_ws_frame_bytes
    try:
        while True:
            text = await socket.receive_text()
            if len(text) > limit:
                log.warning("dropped a %d-byte frame from the page (max_ws_frame_bytes = %d)", len(text), limit)
                continue
            try:
                message = json.loads(text)
            except json.JSONDecodeError:
                log.warning("dropped a frame from the page that is not JSON")
                continue
            if isinstance(message, dict):
                await tab.handle(message)
    except WebSocketDisconnect:
        pass
    finally:
        await tab.close()
        write_task.cancel()


@functools.cache
def _static_text(name: str) -> str:
    return (STATIC / name).read_text(encoding="utf-8")


@functools.cache
def _proxy_page() -> str:
    """The proxy page with its script inline: one request less before a view can start (the
    view's CSP allows inline scripts anyway; `/sandbox.js` stays for anyone who wants the file)."""
    script = _static_text("sandbox.js").replace("</script", "<\\/script")
    return _static_text("proxy.html").replace('<script src="/sandbox.js"></script>', f"<script>{script}</script>")


def _is_reply(frame: dict[str, Any]) -> bool:
    message = frame.get("message") if frame.get("type") == "view-post" else None
    return isinstance(message, dict) and "id" in message and ("result" in message or "error" in message)


def sandbox_app(host: Host) -> Starlette:
    def same_origin(request: Request, view_origin: str) -> bool:
        # A view's proxy is served only on its own server's origin, so one server's view
        # can never be loaded where another server's storage lives.
        host_header = request.headers.get("host", "")
        return host.sandbox.host_allowed(host_header) and view_origin.endswith("//" + host_header.lower())

    async def proxy(request: Request) -> Response:
        view = host.views.get(request.path_params["handle"])
        if view is None or not same_origin(request, view.origin):
            return PlainTextResponse("no such view", status_code=404)
        # The CSP is the server-declared one for this view, built in Python: a real header,
        # which the inner srcdoc document inherits and cannot remove.
        return HTMLResponse(_proxy_page(), headers={**_PAGE_HEADERS, "Content-Security-Policy": view.csp_header})

    async def sandbox_js(request: Request) -> Response:
        if not host.sandbox.host_allowed(request.headers.get("host")):
            return PlainTextResponse("unknown Host header", status_code=421)
        return FileResponse(str(STATIC / "sandbox.js"), media_type="text/javascript",
                            headers={"X-Content-Type-Options": "nosniff"})

    async def csp_report(request: Request) -> Response:
        """The browser reports what a view's CSP blocked; the unguessable handle names the view."""
        view = host.views.get(request.path_params["handle"])
        body = await request.body()
        if view is None or len(body) > host.limits.max_csp_report_bytes:
            return Response(status_code=204)
        try:
            data = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return Response(status_code=204)
        reports = data if isinstance(data, list) else [data]
        for item in reports[:20]:
            report = item.get("csp-report") or item.get("body") if isinstance(item, dict) else None
            if isinstance(report, dict) and hasattr(view.owner, "csp_violation"):
                view.owner.csp_violation(view.handle, report)
        return Response(status_code=204)

    return Starlette(routes=[
        Route("/proxy/{handle}", proxy),
        Route("/sandbox.js", sandbox_js),
        Route("/csp-report/{handle}", csp_report, methods=["POST"]),
    ])
