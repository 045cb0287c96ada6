"""Whether the database answers, for a readiness probe: a `SELECT 1` off the event loop, bounded in time,
and never more than one at a time (a database that hangs must not pile up threads)."""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy import text
from sqlalchemy.engine import Engine

log = logging.getLogger("mcp_apps_host.store")

PROBE_TIMEOUT = 2.0


class DatabaseProbe:
    def __init__(self, engine: Engine, timeout: float = PROBE_TIMEOUT) -> None:
        self.engine = engine
        self.timeout = timeout
        self._running: asyncio.Future[None] | None = None

    async def reachable(self) -> bool:
        """True when the database answered a `SELECT 1` within the timeout."""
        if self._running is None or self._running.done():
            self._running = asyncio.ensure_future(asyncio.to_thread(self._select_one))
        try:
            # shield: a probe that times out keeps running, and the next probe waits for that same one.
            await asyncio.wait_for(asyncio.shield(self._running), self.timeout)
        except TimeoutError:
            log.warning("readiness: the database did not answer within %g s", self.timeout)
            return False
        except Exception as exc:  # the reason goes to the log only: it may name the database's address
            log.warning("readiness: the database is not reachable (%s)", type(exc).__name__)
            return False
        return True

    def _select_one(self) -> None:
        with self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
