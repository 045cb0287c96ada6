"""The inspector: a view's audit records and host context, sent to the page while its panel is open.

The records are read back from the audit trail itself, so the panel shows exactly what
`GET /api/audit` exports (with the host's decision and reason), never a second account of it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from ...store.audit import AuditLog
from . import frames as f
from .driver import ViewDriver
from .page import Page

log = logging.getLogger("mcp_apps_host.inspector")

BATCH = 500  # records per frame


class Inspector:
    def __init__(self, audit: AuditLog | None, page: Page, live: Mapping[str, ViewDriver]) -> None:
        self.audit = audit
        self.page = page
        self.live = live  # the tab's live views by handle, whose host context the panel shows
        self._last: dict[str, int] = {}  # inspected view -> seq of the last record sent
        self._context: dict[str, dict[str, Any]] = {}  # the host context last sent
        self._flushing: set[str] = set()
        self._dirty: set[str] = set()

    def open(self, handle: str) -> None:
        # A view that failed or closed is no longer live, but its records are what its author needs most.
        self._last.setdefault(handle, 0)
        self._context.pop(handle, None)
        self.touched(handle)

    def close(self, handle: str) -> None:
        self._last.pop(handle, None)
        self._context.pop(handle, None)

    def touched(self, handle: str | None) -> None:
        """An event for this view went to the audit trail (or its context may have changed)."""
        if handle is None or handle not in self._last:
            return
        self._dirty.add(handle)
        if handle not in self._flushing:
            self._flushing.add(handle)
            asyncio.get_running_loop().create_task(self._flush(handle))

    def context_changed(self) -> None:
        for handle in list(self._last):
            self.touched(handle)

    async def _flush(self, handle: str) -> None:
        try:
            while handle in self._dirty and handle in self._last:
                self._dirty.discard(handle)
                await asyncio.sleep(0)  # a burst of events becomes one read
                self._send_context(handle)
                if self.audit is not None:
                    await self.audit.drain()
                    await self._send_records(handle)
        except Exception:  # the inspector must never break the tab
            log.exception("could not send the inspector's records")
        finally:
            self._flushing.discard(handle)

    async def _send_records(self, handle: str) -> None:
        assert self.audit is not None
        while handle in self._last:
            rows = await asyncio.to_thread(self.audit.query, view=handle, after_id=self._last[handle], limit=BATCH)
            if not rows or handle not in self._last:
                return
            self._last[handle] = rows[-1]["seq"]
            self.page.send(f.InspectorRecords(view=handle, records=rows))

    def _send_context(self, handle: str) -> None:
        view = self.live.get(handle)
        if view is None:
            return
        context = view.session.host_context()
        if self._context.get(handle) != context:
            self._context[handle] = context
            self.page.send(f.InspectorContext(view=handle, context=context))
