"""Audit retention (``"audit": {"retentionDays": N}``): records older than N days are deleted, a small
batch per transaction, off the event loop, so the host keeps answering while old years go.

On SQLite, where one writer holds the database at a time, each batch runs on the audit writer's own
thread between its commits (`AuditLog.run_beside`): a view's reply never waits behind a long delete.
Payloads no record points at any more are deleted the same way.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Final

from sqlalchemy import delete, exists, select

from .audit import AuditLog
from .schema import audit_events, audit_payloads

log = logging.getLogger("mcp_apps_host.audit")

DAY: Final = 86400.0
BATCH_ROWS: Final = 500
SWEEP_INTERVAL: Final = 3600.0  # seconds between sweeps


class AuditRetention:
    def __init__(self, audit: AuditLog, days: int, *, batch: int = BATCH_ROWS,
                 interval: float = SWEEP_INTERVAL) -> None:
        self.audit = audit
        self.days = days
        self.batch = batch
        self.interval = interval
        self.batches = 0  # transactions committed so far (each at most `batch` rows)

    def _delete_events(self, cutoff: float) -> int:
        e = audit_events
        ids = select(e.c.id).where(e.c.ts < cutoff).order_by(e.c.id).limit(self.batch)
        with self.audit.engine.begin() as conn:
            chosen = [row[0] for row in conn.execute(ids)]
            if chosen:
                conn.execute(delete(e).where(e.c.id.in_(chosen)))
        return len(chosen)

    def _delete_payloads(self) -> int:
        p, e = audit_payloads, audit_events
        orphans = select(p.c.sha256).where(~exists().where(e.c.payload_sha256 == p.c.sha256)).limit(self.batch)
        with self.audit.engine.begin() as conn:
            chosen = [row[0] for row in conn.execute(orphans)]
            if chosen:
                conn.execute(delete(p).where(p.c.sha256.in_(chosen)))
        return len(chosen)

    async def sweep(self, now: float | None = None) -> int:
        """Delete every record older than the retention (and the payloads left behind); the count deleted."""
        cutoff = (time.time() if now is None else now) - self.days * DAY
        total = 0
        while True:
            deleted = await self._batch(self._delete_events, cutoff)
            total += deleted
            if deleted < self.batch:
                break
        while await self._batch(self._delete_payloads) == self.batch:
            pass
        return total

    async def _batch(self, fn: Callable[..., int], *args: float) -> int:
        count = await self.audit.write_in_turn(fn, *args)
        self.batches += 1
        return count

    async def run(self) -> None:
        """Sweep now and then every `interval` seconds, until cancelled; a failed sweep is logged and retried."""
        while True:
            try:
                deleted = await self.sweep()
                if deleted:
                    log.info("audit retention: deleted %d records older than %d days", deleted, self.days)
            except Exception:
                log.exception("audit retention: the sweep failed; it is tried again later")
            await asyncio.sleep(self.interval)
