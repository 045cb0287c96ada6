"""A tab driven from a test's own event loop: the host's `run_tab` on a socket the test holds.

``async with open_tab(config) as tab``: the app's servers started, one tab said hello to and
waiting until every server is ready; ``tab.put(frame)`` sends a page frame, ``await tab.until(match)``
waits for a host frame (all are kept in ``tab.sent``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

from starlette.websockets import WebSocketDisconnect

from mcp_apps_host import create_app
from mcp_apps_host.config.host import HostConfig
from mcp_apps_host.settings import Limits
from mcp_apps_host.values.identity import CONSOLE, Identity
from mcp_apps_host.web.embed import HostApp
from mcp_apps_host.web.socket import run_tab

ORIGIN = "http://console.test"
Match = Callable[[dict[str, Any]], bool]


class Socket:
    """The page's end of the WebSocket: frames the test puts in, frames the host sent."""

    def __init__(self, stamp: Callable[[], Any] = lambda: None) -> None:
        self.incoming: asyncio.Queue[str | None] = asyncio.Queue()
        self.sent: list[tuple[dict[str, Any], Any]] = []  # each frame, with what ``stamp`` said as it left
        self._stamp = stamp

    async def receive_text(self) -> str:
        text = await self.incoming.get()
        if text is None:
            raise WebSocketDisconnect(1000)
        return text

    async def send_text(self, text: str) -> None:
        self.sent.append((json.loads(text), self._stamp()))

    def put(self, frame: dict[str, Any]) -> None:
        self.incoming.put_nowait(json.dumps(frame))

    def frames(self, match: Match) -> list[dict[str, Any]]:
        return [frame for frame, _ in self.sent if match(frame)]

    async def until(self, match: Match, timeout: float = 60) -> dict[str, Any]:
        try:
            async with asyncio.timeout(timeout):
                while not (found := self.frames(match)):
                    await asyncio.sleep(0.02)
        except TimeoutError:
            raise AssertionError(f"no such frame among {[f['type'] for f, _ in self.sent[-30:]]}") from None
        return found[0]


def app_for(servers: dict[str, dict[str, Any]], database: str, limits: Limits | None = None,
            **extra: Any) -> HostApp:
    config = HostConfig.from_dict({"origin": ORIGIN, "sandboxOrigin": "http://{label}.sandbox.test",
                                   "database": database, "apps": {"enabled": True}, "mcpServers": servers, **extra},
                                  "test config")
    return create_app(replace(config, limits=limits) if limits is not None else config)


def servers_ready(names: set[str] | None = None) -> Match:
    def match(frame: dict[str, Any]) -> bool:
        if frame["type"] != "servers" or not frame["servers"]:
            return False
        status = {s["name"]: s["status"] for s in frame["servers"]}
        return all(status.get(n) == "ready" for n in (names or set(status)))
    return match


@contextlib.asynccontextmanager
async def open_tab(app: HostApp, socket: Socket | None = None, ready: set[str] | None = None,
                   timeout: float = 60, started: bool = False, identity: Identity = CONSOLE) -> AsyncIterator[Socket]:
    """``started``: the app's lifespan is already entered (several tabs, one after another); ``identity``:
    whose tab it is."""
    socket = socket or Socket()
    async with contextlib.nullcontext() if started else app.lifespan():
        tab = asyncio.create_task(run_tab(app.host.for_person(identity), socket))  # type: ignore[arg-type]
        try:
            socket.put({"type": "hello"})
            await socket.until(servers_ready(ready), timeout)
            yield socket
        finally:
            socket.incoming.put_nowait(None)
            await asyncio.wait_for(tab, 30)


def view_handshake(socket: Socket, view: str, request_id: int = 1) -> None:
    """What a view's proxy and bridge send first: proxy ready, then ui/initialize."""
    socket.put({"type": "view-message", "view": view, "message": {
        "jsonrpc": "2.0", "method": "ui/notifications/sandbox-proxy-ready", "params": {}}})
    socket.put({"type": "view-message", "view": view, "message": {
        "jsonrpc": "2.0", "id": request_id, "method": "ui/initialize",
        "params": {"appInfo": {"name": "t", "version": "1"}, "appCapabilities": {}, "protocolVersion": "2026-01-26"}}})


def reply_to(view: str, request_id: Any) -> Match:
    return lambda f: (f["type"] == "view-post" and f["view"] == view and f["message"].get("id") == request_id
                      and ("result" in f["message"] or "error" in f["message"]))
