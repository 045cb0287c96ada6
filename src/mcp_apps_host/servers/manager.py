"""All configured servers, started together, watched together."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ..config.servers import ServerSpec
from ..errors import ServerUnavailable
from ..settings import Limits
from ..values.templates import Template
from ..values.tools import ToolEntry
from .clientside import ServerAsks
from .connection import ServerConnection, TemplateHook

Listener = Callable[[], None]


class ServerManager:
    def __init__(self, specs: list[ServerSpec], limits: Limits, prepare_template: TemplateHook | None = None,
                 asks: ServerAsks | None = None, log_level: str = "info") -> None:
        self.limits = limits
        self.connections = {s.name: ServerConnection(s, limits, self._changed, prepare_template, asks, log_level)
                            for s in specs}
        self._listeners: set[Listener] = set()
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        for conn in self.connections.values():
            self._tasks.append(asyncio.create_task(conn.run(), name=f"server:{conn.name}"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.add(listener)
        return lambda: self._listeners.discard(listener)

    def _changed(self, _conn: ServerConnection) -> None:
        for listener in list(self._listeners):
            listener()

    def get(self, server: str) -> ServerConnection:
        conn = self.connections.get(server)
        if conn is None:
            known = ", ".join(sorted(self.connections)) or "none"
            raise ServerUnavailable(f"no server named {server!r} (servers: {known})")
        return conn

    def tool(self, server: str, tool: str) -> ToolEntry | None:
        conn = self.connections.get(server)
        return conn.tools.get(tool) if conn else None

    async def template(self, server: str, uri: str) -> Template:
        return await self.get(server).template(uri)

    async def set_roots(self, server: str, roots: tuple[str, ...]) -> None:
        """Give a server new roots (it is told they changed, as its protocol version says)."""
        await self.get(server).set_roots(roots)
        self._changed(self.get(server))

    def snapshot(self) -> list[dict[str, Any]]:
        """The server list as the page shows it. Tools without "model" visibility are
        never offered to a person or a model; a view can still call its own app-only tools."""
        out = []
        for conn in self.connections.values():
            tools = [
                {
                    "name": t.name,
                    "title": t.definition.get("title") or (t.definition.get("annotations") or {}).get("title"),
                    "description": t.definition.get("description") or "",
                    "inputSchema": t.input_schema,
                    "hasView": t.resource_uri is not None,
                    "callable": t.model_visible,
                }
                for t in conn.tools.values()
                if t.model_visible
            ]
            out.append(
                {
                    "name": conn.name,
                    "status": str(conn.status),
                    "error": conn.error,
                    "transport": conn.spec.transport,
                    "target": conn.spec.describe(),
                    "protocolVersion": conn.protocol_version,
                    "roots": list(conn.roots),
                    "tools": tools,
                }
            )
        return out
