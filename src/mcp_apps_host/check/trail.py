"""One view's audit records as `check` reads them while it drives the view: the host's own trail."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from ..store.audit import AuditLog
from .findings import Record

POLL_SECONDS = 0.1


class ViewTrail:
    def __init__(self, audit: AuditLog, handle: str) -> None:
        self.audit = audit
        self.handle = handle
        self._payloads: dict[str, Any] = {}

    async def records(self) -> list[Record]:
        """Every committed event of the view so far, oldest first, with whole payloads."""
        await self.audit.drain()
        return await asyncio.to_thread(self._read)

    def _read(self) -> list[Record]:
        rows = self.audit.query(view=self.handle, limit=None)
        out = []
        for row in rows:
            sha = row["payload_sha256"]
            if sha and sha not in self._payloads:
                try:
                    self._payloads[sha] = self.audit.payload(sha)
                except KeyError:
                    self._payloads[sha] = _preview(row["payload"])
            out.append(Record(ts=row["ts"], direction=row["direction"], method=row["method"], msg_id=row["id"],
                              decision=row["decision"], reason=row["reason"],
                              payload=self._payloads.get(sha) if sha else None))
        return out

    async def wait_for(self, found: Callable[[list[Record]], bool], timeout: float,
                       give_up: Callable[[], bool] = lambda: False) -> bool:
        """Poll the trail until ``found`` holds (True), or until ``timeout`` or ``give_up`` (False)."""
        deadline = time.monotonic() + timeout
        while True:
            if found(await self.records()):
                return True
            if time.monotonic() > deadline or give_up():
                return False
            await asyncio.sleep(POLL_SECONDS)

    async def settle(self, method: str, quiet: float, longest: float) -> bool:
        """Wait until the view has sent no ``method`` for ``quiet`` seconds; False if it never stops in ``longest``."""
        deadline = time.monotonic() + longest
        while True:
            last = max((r.ts for r in await self.records() if r.direction == "view->host" and r.method == method),
                       default=0.0)
            idle = time.time() - last
            if idle >= quiet:
                return True
            if time.monotonic() + (quiet - idle) > deadline:
                return False
            await asyncio.sleep(min(quiet - idle, 0.25))


def _preview(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else text
    except json.JSONDecodeError:
        return text
