"""`/api/health/live` and `/api/health/ready` for a load balancer: no sign-in, no Host check (a probe names
the backend's own address), and nothing in them a stranger could use (no server names, no addresses)."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..host.process.core import Host

LIVE = "/api/health/live"
READY = "/api/health/ready"
PATHS = frozenset({LIVE, READY})


async def live(_request: Request) -> Response:
    """Answered on the event loop: if this answers, the loop does."""
    return JSONResponse({"live": True})


async def ready(request: Request) -> Response:
    """200 when the database and the bus are reachable and the process is not stopping; else 503 naming
    what is not ready ("stopping", "database", "bus")."""
    host: Host = request.app.state.host
    waiting = await host.not_ready()
    if waiting:
        return JSONResponse({"ready": False, "notReady": waiting}, status_code=503,
                            headers={"Cache-Control": "no-store"})
    return JSONResponse({"ready": True}, headers={"Cache-Control": "no-store"})


def health_app(host: Host) -> Starlette:
    app = Starlette(routes=[Route(LIVE, live, methods=["GET", "HEAD"]), Route(READY, ready, methods=["GET", "HEAD"])])
    app.state.host = host
    return app
