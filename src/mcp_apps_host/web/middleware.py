"""The checks every request to the host page passes, as ASGI middleware.

Starlette's `TrustedHostMiddleware` compares names only (it drops the port, and cannot
read an IPv6 literal); a console on a loopback port needs the whole `host:port` checked,
so that check is written here. Signing in uses Starlette's `AuthenticationMiddleware`
with a backend that reads the session cookie.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.authentication import AuthCredentials, AuthenticationBackend, BaseUser, SimpleUser
from starlette.datastructures import Headers
from starlette.requests import HTTPConnection
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from .access import COOKIE, Access


async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, text: str) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008, "reason": text})
    else:
        await PlainTextResponse(text, status_code=status)(scope, receive, send)


class HostHeaderMiddleware:
    """Refuse a request whose Host header is not one of ours (421), before anything else runs."""

    def __init__(self, app: ASGIApp, allowed: Callable[[str | None], bool]) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and not self.allowed(Headers(scope=scope).get("host")):
            await _refuse(scope, receive, send, 421, "unknown Host header")
            return
        await self.app(scope, receive, send)


class SameOriginMiddleware:
    """The API and the WebSocket answer the host page only: a WebSocket must name the page's
    origin, and an HTTP request that names an origin must name that one."""

    def __init__(self, app: ASGIApp, access: Access, paths: tuple[str, ...] = ("/api/", "/ws")) -> None:
        self.app = app
        self.access = access
        self.paths = paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and scope["path"].startswith(self.paths):
            headers = Headers(scope=scope)
            origin = headers.get("origin")
            needed = scope["type"] == "websocket" or origin is not None
            if needed and not self.access.origin_ok(origin, headers.get("host")):
                await _refuse(scope, receive, send, 403, "cross-origin requests are not allowed")
                return
        await self.app(scope, receive, send)


class CookieBackend(AuthenticationBackend):
    """Signed in: the session cookie holds the access token."""

    def __init__(self, access: Access) -> None:
        self.access = access

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        if self.access.token_ok(conn.cookies.get(COOKIE)):
            return AuthCredentials(["authenticated"]), SimpleUser("console")
        return None
