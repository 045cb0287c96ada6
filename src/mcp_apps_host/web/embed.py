"""`create_app`: the whole host as one ASGI app, for an agent console to mount under a path.

    app = FastAPI()
    apps = create_app(HostConfig.from_dict({...}), identity=who_is_signed_in)
    app.mount("/apps", apps)

The embedding app's own sign-in decides who a request is for (``identity``); without it,
the console's access token and cookie apply. The sandbox is served by the same app, on its
own origin (``config.sandbox_origin``), so a deployment needs one listener.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from starlette.types import Receive, Scope, Send

from ..config.deployment import check_sandbox_origin
from ..config.host import HostConfig
from ..errors import ConfigError
from ..host.process.build import build_host
from ..host.process.core import Host
from ..host.process.sandbox import Sandbox
from ..servers.manager import ServerHeaders
from .access import Access, is_loopback
from .app import APP_SIGN_IN, Gate, HostOrSandbox, console_gate, host_app, origin_checks
from .middleware import IdentityBackend, IdentityFn


def _sandbox_for(config: HostConfig, origin: str) -> Sandbox:
    if config.sandbox_origin is not None:
        return Sandbox(config.sandbox_origin)
    parts = urlsplit(origin)
    if parts.hostname is None or not is_loopback(parts.hostname):
        raise ConfigError("config.sandbox_origin is needed to serve views: an origin with '{label}' for each "
                          "server, e.g. 'https://{label}.apps.example.com' (a wildcard name and certificate)")
    port = f":{parts.port}" if parts.port else ""
    return Sandbox(check_sandbox_origin(f"{parts.scheme}://{{label}}.sandbox.localhost{port}", "sandbox origin"))


def _gate(origin: str, identity: IdentityFn | None) -> Gate:
    """A person is who ``identity`` says, or holds a new access token."""
    if identity is None:
        return console_gate(Access(token=secrets.token_urlsafe(24), bind_host="", port=0), origin)
    return Gate(*origin_checks(origin), IdentityBackend(identity), APP_SIGN_IN)


class HostApp:
    """The ASGI app `create_app` returns. Serve it, or mount it; its lifespan starts the host
    (pass ``lifespan=apps.lifespan`` to the embedding app), and the first request does if nobody did."""

    def __init__(self, host: Host, gate: Gate) -> None:
        self.host = host
        self.gate = gate
        self.access = gate.access
        self._app = HostOrSandbox(host_app(host, gate, lifespan=self.lifespan), host)
        self._started: asyncio.Task[None] | None = None

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: Any = None) -> AsyncIterator[None]:
        await self._start()
        try:
            yield
        finally:
            if self._started is not None:
                await self.host.stop()
                self._started = None

    async def _start(self) -> None:
        if self._started is None:
            self._started = asyncio.ensure_future(self.host.start())
        await asyncio.shield(self._started)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self._start()
        await self._app(scope, receive, send)


def create_app(config: HostConfig | Mapping[str, Any], *, identity: IdentityFn | None = None,
               server_headers: ServerHeaders | None = None, admin_key: str | None = None) -> HostApp:
    """One ASGI app: the host page, its API and WebSocket, and the sandbox proxy.

    ``config``: a :class:`HostConfig`, or a dict in the config file's shape. Its ``origin`` is
    where people open the page (required); views render only with ``apps.enabled`` and a
    server's ``"apps": true``. ``identity``: an async callable taking the request or WebSocket
    and returning :class:`Identity` or None (refused); without it, a console token is made
    (``app.access.token``) and the page opens at ``ORIGIN/PREFIX/?token=…``. ``server_headers``:
    ``(identity, server) -> headers | None`` for HTTP servers whose calls must run as the signed-in
    person (each such person gets their own connection); None shares the server's connection.
    ``admin_key``: the admin API key (``Authorization: Bearer KEY`` on ``/api/admin/…``: the server
    registry and the audit stream); None: only signed-in admins manage servers, and the stream is closed.
    """
    if not isinstance(config, HostConfig):
        config = HostConfig.from_dict(config, "create_app config")
    if config.origin is None:
        raise ConfigError("create_app: config.origin is required: the origin people open the host page on, "
                          "e.g. 'https://console.example.com' (it is never taken from a request's headers)")
    origin = config.origin
    if admin_key is not None:
        if not isinstance(admin_key, str) or len(admin_key) < 16:
            raise ConfigError("create_app: admin_key must be a string of at least 16 characters")
        config = replace(config, admin_key=admin_key)
    host = build_host(config, host_origin=origin, sandbox=_sandbox_for(config, origin), server_headers=server_headers)
    return HostApp(host, _gate(origin, identity))
