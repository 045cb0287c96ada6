"""The bus between the workers of one deployment, over PostgreSQL's LISTEN/NOTIFY.

Every worker listens on the same channels and hears every message, its own included;
a message is JSON of at most `MAX_PAYLOAD` bytes (PostgreSQL's limit is 8000).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import make_url

log = logging.getLogger("mcp_apps_host.bus")

MAX_PAYLOAD = 7900
Handler = Callable[[dict[str, Any]], None]


def _channel(name: str) -> str:
    return "mah_" + "".join(c if c.isalnum() else "_" for c in name)


class PostgresBus:
    def __init__(self, database_url: str, deliver: Callable[[set[Handler], str, dict[str, Any]], None]) -> None:
        self._dsn = make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)
        self._deliver = deliver
        self._handlers: dict[str, set[Handler]] = {}
        self._outbox: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._listening: asyncio.Event = asyncio.Event()
        self._up = False  # a listening connection is open now (readiness)

    async def start(self) -> None:
        self._tasks = [asyncio.create_task(self._listen()), asyncio.create_task(self._publish())]
        await self._listening.wait()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def publish(self, channel: str, message: dict[str, Any]) -> None:
        payload = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        if len(payload.encode()) > MAX_PAYLOAD:
            log.warning("dropped a %d-byte %s message (the bus carries at most %d)", len(payload), channel, MAX_PAYLOAD)
            return
        self._outbox.put_nowait((_channel(channel), payload))

    def subscribe(self, channel: str, handler: Handler) -> Callable[[], None]:
        self._handlers.setdefault(channel, set()).add(handler)
        return lambda: self._handlers.get(channel, set()).discard(handler)

    @property
    def up(self) -> bool:
        return self._up

    async def _listen(self) -> None:
        import psycopg

        names = {_channel(c): c for c in ("conversation", "csp-report", "signin", "servers")}
        delay = 0.5
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self._dsn, autocommit=True) as conn:
                    for name in names:
                        await conn.execute(f"LISTEN {name}")
                    self._listening.set()
                    self._up = True
                    delay = 0.5
                    async for note in conn.notifies():
                        with contextlib.suppress(ValueError):
                            channel = names.get(note.channel, note.channel)
                            self._deliver(self._handlers.get(channel, set()), channel, json.loads(note.payload))
            except asyncio.CancelledError:
                self._up = False
                raise
            except Exception as exc:  # the database went away: listen again when it is back
                self._up = False
                log.warning("bus: listening failed (%s); retrying in %.1f s", exc, delay)
                self._listening.set()  # a worker starts even when the bus cannot listen yet
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)

    async def _publish(self) -> None:
        import psycopg

        while True:
            channel, payload = await self._outbox.get()
            try:
                async with await psycopg.AsyncConnection.connect(self._dsn, autocommit=True) as conn:
                    while True:
                        await conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))
                        channel, payload = await self._outbox.get()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a lost message is a missed live update, never lost data
                log.warning("bus: could not publish on %s (%s)", channel, exc)
                await asyncio.sleep(0.5)
