"""The sandbox origin: the proxy page each view runs in, and the CSP reports about it.

It never sees the host page's cookie and makes no decision of its own: a view's signed
handle (`host/handles.py`) says which view, whose, on which origin, under which CSP.
"""

from __future__ import annotations

import functools
import json

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from ..host.process.core import Host
from .static import PAGE_HEADERS, static_text


@functools.cache
def _proxy_page() -> str:
    """The proxy page with its script inline: one request less before a view can start (the
    view's CSP allows inline scripts anyway)."""
    script = static_text("sandbox.js").replace("</script", "<\\/script")
    return static_text("proxy.html").replace('<script src="/sandbox.js"></script>', f"<script>{script}</script>")


def sandbox_app(host: Host) -> Starlette:
    async def proxy(request: Request) -> Response:
        view = host.signer.verify(request.path_params["token"])
        # A view's proxy is served only on its own server's origin, so one server's view
        # can never be loaded where another server's storage lives.
        if view is None or not view.origin.endswith("//" + request.headers.get("host", "").lower()):
            return PlainTextResponse("no such view", status_code=404)
        # The CSP is the server-declared one for this view, built in Python: a real header,
        # which the inner srcdoc document inherits and cannot remove.
        return HTMLResponse(_proxy_page(), headers={**PAGE_HEADERS, "Content-Security-Policy": view.csp_header})

    async def csp_report(request: Request) -> Response:
        """The browser reports what a view's CSP blocked; the signed handle names the view."""
        view = host.signer.verify(request.path_params["token"])
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
            if isinstance(report, dict):
                host.csp_report(view, {k: str(v)[:1000] for k, v in report.items() if isinstance(k, str)})
        return Response(status_code=204)

    return Starlette(routes=[
        Route("/proxy/{token}", proxy),
        Route("/csp-report/{token}", csp_report, methods=["POST"]),
    ])
