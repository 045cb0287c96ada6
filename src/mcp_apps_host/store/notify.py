"""The bus between the workers of one deployment, over PostgreSQL's LISTEN/NOTIFY.

Every worker listens on the same channels and hears every message, its own included;
a message is JSON of at most `MAX_PAYLOAD` bytes (PostgreSQL's limit is 8000).

When the database goes away both connections are made again, with backoff, and the outage is logged
once. A message published meanwhile is held (up to `MAX_HELD`) and sent once the database is back;
PostgreSQL keeps nothing for a listener that is not connected, so a worker still reconnecting misses
what is sent before it listens again: once it listens again, its subscribers hear `MISSED` on every
channel, and catch up from the database (a tab re-reads its conversation).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from typing import Any, Final

from sqlalchemy.engine import make_url

log = logging.getLogger("mcp_apps_host.bus")

MAX_PAYLOAD = 7900
# Messages published while the database is away are held, in order, up to this many, and sent once it is back.
MAX_HELD = 10_000
# Backoff between attempts to reach the database (seconds).
RETRY_FIRST, RETRY_MAX = 0.2, 2.0
# A listener quiet this long checks its connection, which must answer within CHECK_TIMEOUT.
CHECK_INTERVAL, CHECK_TIMEOUT = 15.0, 10.0
# TCP keepalives: a database that vanished from the network (no reset) is noticed, not waited on forever.
_KEEPALIVE: Final = {"connect_timeout": 10, "keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10,
                     "keepalives_count": 3}
Handler = Callable[[dict[str, Any]], None]
# Heard on every channel by a worker that listens again after an outage: it may have missed messages.
MISSED: Final = {"missed": True}


def _channel(name: str) -> str:
    return "mah_" + "".join(c if c.isalnum() else "_" for c in name)


def _with_keepalive(dsn: str) -> str:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    given = conninfo_to_dict(dsn)
    return make_conninfo(dsn, **{k: v for k, v in _KEEPALIVE.items() if k not in given})


class PostgresBus:
    def __init__(self, database_url: str, deliver: Callable[[set[Handler], str, dict[str, Any]], None]) -> None:
        self._dsn = _with_keepalive(make_url(database_url).set(drivername="postgresql").render_as_string(
            hide_password=False))
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
        outage = _Outage("listening")
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self._dsn, autocommit=True) as conn:
                    for name in names:
                        await conn.execute(f"LISTEN {name}")
                    self._listening.set()
                    self._up = True
                    if outage.over():  # what was sent while this worker could not listen is gone: say so
                        for channel in names.values():
                            self._deliver(self._handlers.get(channel, set()), channel, dict(MISSED))
                    while True:
                        async for note in conn.notifies(timeout=CHECK_INTERVAL):
                            with contextlib.suppress(ValueError):
                                channel = names.get(note.channel, note.channel)
                                self._deliver(self._handlers.get(channel, set()), channel, json.loads(note.payload))
                        # Quiet for a while: a connection that died without a word (a network gone) shows here.
                        await asyncio.wait_for(conn.execute("SELECT 1"), CHECK_TIMEOUT)
            except asyncio.CancelledError:
                self._up = False
                raise
            except Exception as exc:  # the database went away: listen again when it is back
                self._up = False
                self._listening.set()  # a worker starts even when the bus cannot listen yet
                await asyncio.sleep(outage.failed(exc))

    async def _publish(self) -> None:
        import psycopg

        outage = _Outage("publishing")
        message: tuple[str, str] | None = None
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self._dsn, autocommit=True) as conn:
                    while True:
                        if message is None:
                            message = await self._outbox.get()
                        await asyncio.wait_for(conn.execute("SELECT pg_notify(%s, %s)", message), CHECK_TIMEOUT)
                        message = None  # sent: the next one
                        outage.over()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # kept (with what comes after it) and sent once the database is back
                self._trim()
                await asyncio.sleep(outage.failed(exc))

    def _trim(self) -> None:
        dropped = 0
        while self._outbox.qsize() > MAX_HELD:
            self._outbox.get_nowait()
            dropped += 1
        if dropped:
            log.warning("bus: dropped the %d oldest messages held while the database is away (at most %d kept)",
                        dropped, MAX_HELD)


class _Outage:
    """Backoff while the database is away, logged once when it goes and once when it is back."""

    def __init__(self, doing: str) -> None:
        self._doing = doing
        self._since: float | None = None
        self._delay = RETRY_FIRST

    def failed(self, exc: BaseException) -> float:
        """Seconds to wait before the next attempt."""
        if self._since is None:
            self._since = time.monotonic()
            log.warning("bus: %s failed (%s); trying again until the database is back",
                        self._doing, str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
            self._delay = RETRY_FIRST
        delay, self._delay = self._delay, min(self._delay * 2, RETRY_MAX)
        return delay

    def over(self) -> bool:
        """The database is back; True if it had been away."""
        if self._since is None:
            return False
        log.warning("bus: %s again after %.1f s", self._doing, time.monotonic() - self._since)
        self._since = None
        return True
