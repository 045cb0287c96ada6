"""Change notifications from a 2026-07-28 server: one `subscriptions/listen` stream for tool and
resource list changes and for updates of the templates in use.

The stream has no replay: when it ends (gracefully or not) everything is read again, then a
new stream is opened, after a pause that grows while streams keep ending. A server that does
not offer the method is left alone; the health check notices a server that went away.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import anyio
from mcp.client import Client
from mcp.client.subscriptions import ListenNotSupportedError, ResourceUpdated, SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourcesListChanged, ServerEvent, ToolsListChanged

from ..settings import Limits
from ..values.protocol import SUBSCRIPTIONS_LISTEN

log = logging.getLogger("mcp_apps_host.servers")

METHOD_NOT_FOUND = -32601


class ChangeFeed:
    def __init__(self, server: str, limits: Limits, changed: Callable[[str, str | None], None]) -> None:
        """``changed(kind, uri)``: kind is "tools", "resources" or "resource" (with its uri), or "all"."""
        self.server = server
        self.limits = limits
        self._changed = changed
        self.scope: anyio.CancelScope | None = None  # the open stream: cancel it to listen afresh
        self.listening: frozenset[str] = frozenset()  # the resource uris the open stream was acknowledged for
        self._news = anyio.Event()  # set (and replaced) each time ``listening`` changes

    async def run(self, client: Client, uris: Callable[[], Sequence[str]]) -> None:
        delay = self.limits.reconnect_initial_delay
        first = True
        while True:
            if not first:
                self._changed("all", None)  # no replay: what changed in between is read again
                await anyio.sleep(delay)
                delay = min(delay * 2, self.limits.reconnect_max_delay)
            first = False
            try:
                with anyio.CancelScope() as self.scope:
                    wanted = list(uris())
                    async with client.listen(tools_list_changed=True, resources_list_changed=True,
                                             resource_subscriptions=wanted) as events:
                        self._now_listening(frozenset(wanted))
                        delay = self.limits.reconnect_initial_delay
                        async for event in events:
                            self._deliver(event)
                if self.scope.cancelled_caught:
                    first = True  # asked to listen afresh (the templates in use changed)
            except ListenNotSupportedError:
                return
            except MCPError as exc:
                if exc.code == METHOD_NOT_FOUND:
                    log.info("server %s does not offer %s; its changes are not followed", self.server,
                             SUBSCRIPTIONS_LISTEN)
                    return
                log.info("server %s: %s failed: %s", self.server, SUBSCRIPTIONS_LISTEN, exc.message)
            except (SubscriptionLost, TimeoutError) as exc:
                log.info("server %s: the %s stream ended (%s)", self.server, SUBSCRIPTIONS_LISTEN,
                         exc or "no acknowledgement in time")
            finally:
                self.scope = None
                self._now_listening(frozenset())

    async def listening_for(self, uri: str) -> None:
        """Return once a stream that asked for updates of ``uri`` is acknowledged (the caller bounds the wait)."""
        while uri not in self.listening:
            await self._news.wait()

    def _now_listening(self, uris: frozenset[str]) -> None:
        self.listening = uris
        self._news.set()
        self._news = anyio.Event()

    def _deliver(self, event: ServerEvent) -> None:
        if isinstance(event, ToolsListChanged):
            self._changed("tools", None)
        elif isinstance(event, ResourcesListChanged):
            self._changed("resources", None)
        elif isinstance(event, ResourceUpdated):
            self._changed("resource", event.uri)
