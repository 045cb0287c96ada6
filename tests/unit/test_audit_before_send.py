"""A reply to a view leaves the host only once the audit trail has committed it.

The tab runs in this test's own event loop on a socket the test holds, against a real server
and a real SQLite audit trail whose writer is made to wait before each commit. While it waits,
the reply is already made and handed to the socket's outbox, and the loop is given every chance
to send it: nothing may reach the page until the commit is let through."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_apps_host.store.audit import AuditEvent
from tests.unit.tabdriver import Socket, app_for, open_tab, reply_to

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "servers.py"


@pytest.mark.anyio
async def test_nothing_reaches_the_view_before_its_audit_commit(tmp_path: Path):
    db = tmp_path / "h.db"
    app = app_for({"rec": {"command": sys.executable, "args": [str(FIXTURES), "rec"], "apps": True}},
                  f"sqlite:///{db}")
    hold, blocked, committed = threading.Event(), threading.Event(), threading.Event()
    committed.set()
    audit = app.host.audit
    assert audit is not None

    class HeldBatches:
        """The audit writer's batch commit, made to wait (before it writes) while the test holds it."""

        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def commit(self, conn: Any, rows: list[Any]) -> BaseException | None:
            if hold.is_set():
                blocked.set()
                committed.wait(60)
            return self.inner.commit(conn, rows)

    audit._batches = HeldBatches(audit._batches)  # type: ignore[assignment]
    reply_queued = asyncio.Event()
    queue_event = audit.record_nowait

    def record_nowait(ev: AuditEvent) -> None:
        queue_event(ev)
        if ev.direction == "host->view" and ev.msg_id == 1:
            reply_queued.set()  # the page is handed the reply right after its event is queued

    audit.record_nowait = record_nowait  # type: ignore[method-assign]

    socket = Socket(stamp=committed.is_set)
    async with open_tab(app, socket):
        socket.put({"type": "call", "server": "rec", "tool": "record", "arguments": {}})
        view = (await socket.until(lambda f: f["type"] == "view-mount"))["view"]
        socket.put({"type": "view-message", "view": view, "message": {
            "jsonrpc": "2.0", "method": "ui/notifications/sandbox-proxy-ready", "params": {}}})
        await socket.until(lambda f: f["type"] == "view-post" and f["view"] == view
                           and f["message"].get("method") == "ui/notifications/sandbox-resource-ready")
        try:
            hold.set()
            committed.clear()
            socket.put({"type": "view-message", "view": view, "message": {
                "jsonrpc": "2.0", "id": 1, "method": "ui/initialize",
                "params": {"appInfo": {"name": "t", "version": "1"}, "appCapabilities": {},
                           "protocolVersion": "2026-01-26"}}})
            async with asyncio.timeout(30):
                await reply_queued.wait()
                await asyncio.to_thread(blocked.wait, 30)
            assert blocked.is_set(), "the audit writer never started a commit"
            for _ in range(200):  # every chance for the socket's writer to run
                await asyncio.sleep(0)
            assert not socket.frames(reply_to(view, 1)), "a reply left before its audit commit"

            committed.set()
            reply = await socket.until(reply_to(view, 1))
            assert "result" in reply["message"]
            assert all(was_committed for f, was_committed in socket.sent if reply_to(view, 1)(f))
        finally:
            hold.clear()
            committed.set()

    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT COUNT(*) FROM audit_events WHERE direction = 'host->view' AND view = ? "
                            "AND msg_id = '1'", (view,)).fetchone()[0]
    assert rows == 1
