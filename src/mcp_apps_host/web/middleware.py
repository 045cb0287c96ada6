"""The checks every request to the host page passes, as ASGI middleware, and who is signed in.

Starlette's `TrustedHostMiddleware` compares names only (it drops the port, and cannot
read an IPv6 literal); a console on a loopback port needs the whole `host:port` checked,
so that check is written here. Signing in uses Starlette's `AuthenticationMiddleware`:
with the console's access token (its cookie) or with the embedding app's own sign-in.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.authentication import AuthCredentials, AuthenticationBackend, BaseUser
from starlette.datastructures import Headers
from starlette.requests import HTTPConnection
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ..values.identity import CONSOLE, Identity
from .access import COOKIE, Access

IdentityFn = Callable[[HTTPConnection], Awaitable[Identity | None]]


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

    def __init__(self, app: ASGIApp, origin_ok: Callable[[str | None, str | None], bool],
                 paths: tuple[str, ...] = ("/api/", "/ws")) -> None:
        self.app = app
        self.origin_ok = origin_ok
        self.paths = paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and scope["path"].startswith(
                tuple(scope.get("root_path", "") + p for p in self.paths)):
            headers = Headers(scope=scope)
            origin = headers.get("origin")
            needed = scope["type"] == "websocket" or origin is not None
            if needed and not self.origin_ok(origin, headers.get("host")):
                await _refuse(scope, receive, send, 403, "cross-origin requests are not allowed")
                return
        await self.app(scope, receive, send)


class Person(BaseUser):
    """A signed-in request: the identity its tab, its data and its audit rows belong to."""

    def __init__(self, who: Identity) -> None:
        self.who = who

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def display_name(self) -> str:
        return self.who.user


def _signed_in(identity: Identity) -> tuple[AuthCredentials, BaseUser]:
    return AuthCredentials(["authenticated", *(["admin"] if identity.admin else [])]), Person(identity)


class CookieBackend(AuthenticationBackend):
    """The console: the session cookie holds the access token, and stands for its one person."""

    def __init__(self, access: Access) -> None:
        self.access = access

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        return _signed_in(CONSOLE) if self.access.token_ok(conn.cookies.get(COOKIE)) else None


class IdentityBackend(AuthenticationBackend):
    """An embedding app's sign-in decides: its `identity` callable names the person, or refuses."""

    def __init__(self, identity: IdentityFn) -> None:
        self.identity = identity

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        identity = await self.identity(conn)
        if identity is None:
            return None
        if not isinstance(identity, Identity):
            raise TypeError(f"the identity callable must return an Identity or None, not {type(identity).__name__}")
        return _signed_in(identity)
