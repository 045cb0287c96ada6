"""Messages every worker of a deployment hears: a tab's new conversation items, CSP reports for a
view that lives on another worker. In one process, delivered at once; with PostgreSQL, through
LISTEN/NOTIFY (`store/notify.py`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

log = logging.getLogger("mcp_apps_host.bus")

Handler = Callable[[dict[str, Any]], None]


class Bus(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def publish(self, channel: str, message: dict[str, Any]) -> None: ...

    def subscribe(self, channel: str, handler: Handler) -> Callable[[], None]: ...

    @property
    def up(self) -> bool:
        """Whether messages reach the other workers now (readiness)."""
        ...


class LocalBus:
    """One process: a published message reaches this process's subscribers, in order."""

    def __init__(self) -> None:
        self._handlers: dict[str, set[Handler]] = {}

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        self._handlers.clear()

    def publish(self, channel: str, message: dict[str, Any]) -> None:
        deliver(self._handlers.get(channel, set()), channel, message)

    def subscribe(self, channel: str, handler: Handler) -> Callable[[], None]:
        self._handlers.setdefault(channel, set()).add(handler)
        return lambda: self._handlers.get(channel, set()).discard(handler)

    @property
    def up(self) -> bool:
        return True  # one process: nothing to reach


def deliver(handlers: set[Handler], channel: str, message: dict[str, Any]) -> None:
    for handler in list(handlers):
        try:
            handler(message)
        except Exception:  # one subscriber's failure must not stop the others
            log.exception("a %s subscriber failed", channel)
