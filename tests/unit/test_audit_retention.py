"""Audit retention: records older than N days go, in small batches, while new records keep being written
(the host's calls go on), and the payloads nothing points at any more go with them."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from mcp_apps_host.config.host import HostConfig
from mcp_apps_host.errors import ConfigError
from mcp_apps_host.store.audit import AuditEvent, AuditLog
from mcp_apps_host.store.retention import DAY, AuditRetention
from tests.unit.tabdriver import app_for, open_tab

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
OLD = 2_000


def _fill_old(db: Path, now: float) -> None:
    """Old records, written straight into the table (ten payloads among them)."""
    with AuditLog(f"sqlite:///{db}") as audit:
        for i in range(OLD):
            audit.record_nowait(AuditEvent("view->host", "ui/message", server="old", ts=now - 40 * DAY + i,
                                           payload={"n": i % 10}))


@pytest.mark.anyio
async def test_old_records_go_in_batches_while_new_ones_are_written(tmp_path: Path):
    db = tmp_path / "audit.db"
    now = time.time()
    _fill_old(db, now)
    audit = AuditLog(f"sqlite:///{db}")
    retention = AuditRetention(audit, days=30, batch=100)
    written = 0
    written_during: list[int] = []
    original = retention._delete_events

    def counting(cutoff: float) -> int:
        written_during.append(written)
        return original(cutoff)

    retention._delete_events = counting  # type: ignore[method-assign]
    stop = asyncio.Event()

    async def calls_go_on() -> None:
        nonlocal written
        while not stop.is_set():
            await audit.record(AuditEvent("host->server", "tools/call", server="new", payload={"live": written}))
            written += 1

    writer = asyncio.create_task(calls_go_on())
    try:
        deleted = await asyncio.wait_for(retention.sweep(), 120)
    finally:
        stop.set()
        await writer
    audit.close()
    assert deleted == OLD
    assert len(written_during) >= OLD // 100  # batch by batch, not one long transaction
    # New records were committed between the batches: the writer was never held for the whole sweep.
    assert written_during[-1] > written_during[0], written_during
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM audit_events WHERE server = 'old'").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM audit_events WHERE server = 'new'").fetchone()[0] == written
        kept = {row[0] for row in conn.execute("SELECT json FROM audit_payloads")}
    assert not any('"n"' in p for p in kept)  # the old records' payloads went with them
    assert sum('"live"' in p for p in kept) == written


@pytest.mark.anyio
async def test_the_host_sweeps_while_a_person_calls_tools(tmp_path: Path):
    db = tmp_path / "h.db"
    now = time.time()
    server = {"command": sys.executable, "args": [str(FIXTURES / "servers.py"), "rec"]}
    app = app_for({"rec": server}, f"sqlite:///{db}", audit={"retentionDays": 30})
    _fill_old(db, now)
    assert app.host.retention is not None
    app.host.retention.batch = 50
    async with open_tab(app) as tab:
        for n in range(5):
            tab.put({"type": "call", "server": "rec", "tool": "record", "arguments": {"text": str(n)}})
            while len(tab.frames(lambda f: f["type"] == "call-finished")) <= n:
                await tab.until(lambda f: f["type"] == "call-finished")
                await asyncio.sleep(0.02)
        async with asyncio.timeout(120):
            while True:
                with sqlite3.connect(db) as conn:
                    if conn.execute("SELECT COUNT(*) FROM audit_events WHERE server = 'old'").fetchone()[0] == 0:
                        break
                await asyncio.sleep(0.1)
    assert app.host.retention.batches >= OLD // 50
    with sqlite3.connect(db) as conn:
        recent = conn.execute("SELECT COUNT(*) FROM audit_events WHERE server = 'rec' AND method = 'tools/call'")
        assert recent.fetchone()[0] >= 10  # each call and its result, kept


def test_a_bad_retention_is_named():
    with pytest.raises(ConfigError, match=r"audit\.retentionDays: expected a whole number of days"):
        HostConfig.from_dict({"audit": {"retentionDays": 0}}, "config")
    with pytest.raises(ConfigError, match="audit: expected an object like"):
        HostConfig.from_dict({"audit": {"keep": 3}}, "config")
