"""A PostgreSQL that goes away under the audit trail and the bus, and comes back: this test owns the server
and stops it (as a restart or failover looks to its clients), then starts it again on the same port.

What must hold: a caller waiting for its events is released only once they are committed, or told
clearly (after the named wait) that the database is unreachable; nothing queued is lost or written twice;
the writer and the bus reconnect by themselves; an outage is logged once, not once per attempt."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy.exc import OperationalError

from mcp_apps_host.errors import DatabaseUnavailable
from mcp_apps_host.host.process.bus import deliver
from mcp_apps_host.store import notify, outage
from mcp_apps_host.store.audit import AuditEvent, AuditLog
from mcp_apps_host.store.notify import PostgresBus
from tests.fixtures.postgres import Postgres

pytestmark = pytest.mark.anyio


@pytest.fixture
def pg() -> Iterator[Postgres]:
    """A server of this test's own: it is stopped and started, which the shared one must never be."""
    server = Postgres()
    yield server
    server.stop()


def event(n: int, method: str = "ping") -> AuditEvent:
    return AuditEvent(direction="view->host", method=method, view="v1", msg_id=n, payload={"n": n})


def recorded(url: str, method: str = "ping") -> list[int]:
    with psycopg.connect(url.replace("postgresql+psycopg", "postgresql")) as conn:
        rows = conn.execute("SELECT msg_id FROM audit_events WHERE method = %s ORDER BY id", (method,)).fetchall()
    return [int(r[0]) for r in rows]


async def until(condition: Any, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def logged(caplog: pytest.LogCaptureFixture, text: str) -> int:
    return sum(text in r.getMessage() for r in caplog.records)


async def test_a_restart_is_waited_out_and_nothing_is_lost_or_written_twice(pg: Postgres, caplog, monkeypatch):
    caplog.set_level(logging.WARNING)
    attempts = 0
    down = outage.Backlog.down

    def counted(self: Any, exc: BaseException, now: float) -> None:
        nonlocal attempts
        attempts += 1
        down(self, exc, now)

    monkeypatch.setattr(outage.Backlog, "down", counted)
    url = pg.database()
    log = AuditLog(url, wait=120)
    try:
        for n in range(5):
            await log.record(event(n))  # acknowledged: committed before the restart
        await asyncio.to_thread(pg.halt, "fast")

        # Calls made while the database is away wait for it; none is released before its commit.
        waiting = [asyncio.create_task(log.record(event(n))) for n in range(5, 25)]
        for n in range(25, 40):
            log.record_nowait(event(n))
        drained = asyncio.create_task(log.drain())
        await until(lambda: logged(caplog, "the audit trail's database is unreachable") == 1, "the outage logged")
        await until(lambda: attempts >= 4, "the writer to try again, on fresh connections")
        assert not any(t.done() for t in waiting) and not drained.done()

        await asyncio.to_thread(pg.resume)
        async with asyncio.timeout(60):
            await asyncio.gather(*waiting, drained)
        await log.record(event(40))  # and the next call works at once
    finally:
        log.close()
    assert sorted(recorded(url)) == list(range(41)), "every event once (tasks queue theirs as they start)"
    assert logged(caplog, "the audit trail's database is unreachable") == 1, "logged once per outage"
    assert logged(caplog, "takes writes again") == 1


async def test_a_database_away_longer_than_the_wait_fails_clearly_and_keeps_the_events(pg: Postgres, caplog):
    caplog.set_level(logging.WARNING)
    url = pg.database()
    log = AuditLog(url, wait=1.0)
    try:
        await log.record(event(0))
        await asyncio.to_thread(pg.halt, "immediate")
        started = time.monotonic()
        with pytest.raises(DatabaseUnavailable, match=r"audit trail's database is unreachable.*database_wait_timeout"):
            async with asyncio.timeout(30):
                await log.record(event(1))
        assert time.monotonic() - started >= 1.0, "the caller waited its wait before it was told"
        log.record_nowait(event(2))
        with pytest.raises(DatabaseUnavailable):  # once the outage is that old, the next caller is told at once
            async with asyncio.timeout(5):
                await log.drain()
        assert logged(caplog, "answered with an error now") == 1

        await asyncio.to_thread(pg.resume)
        # The host stays up: what was held is written once the database is back, and calls work again.
        async with asyncio.timeout(60):
            while True:
                try:
                    await log.record(event(3))
                    break
                except DatabaseUnavailable:
                    await asyncio.sleep(0.2)  # told at once until the writer's next attempt reaches it
    finally:
        log.close()
    # Each try of event 3 queued it once (a caller told of the outage leaves its event held, not dropped).
    written = recorded(url)
    assert written[:3] == [0, 1, 2] and written[3:] and set(written[3:]) == {3}


async def test_the_bus_listens_again_and_holds_what_was_published_meanwhile(pg: Postgres, caplog, monkeypatch):
    caplog.set_level(logging.WARNING)
    monkeypatch.setattr(notify, "RETRY_MAX", 0.2)  # many attempts during a short outage: still one log line
    url = pg.database()
    heard: dict[str, list[dict[str, Any]]] = {"a": [], "b": []}
    buses = {name: PostgresBus(url, deliver) for name in heard}
    for name, bus in buses.items():
        bus.subscribe("conversation", heard[name].append)
        await bus.start()
    attempts = 0
    failed = notify._Outage.failed

    def counted(self: Any, exc: BaseException) -> float:
        nonlocal attempts
        attempts += 1
        return failed(self, exc)

    monkeypatch.setattr(notify._Outage, "failed", counted)
    try:
        buses["a"].publish("conversation", {"n": 1})
        await until(lambda: {"n": 1} in heard["b"], "a message across before the outage")

        await asyncio.to_thread(pg.halt, "fast")
        await until(lambda: logged(caplog, "bus: listening failed") == 2, "both listeners to notice")
        buses["a"].publish("conversation", {"n": 2})  # published while the database is away
        await until(lambda: attempts >= 12, "several attempts to reach the database")
        await asyncio.to_thread(pg.resume)
        await until(lambda: logged(caplog, "bus: listening again") == 2, "both listeners back")

        buses["a"].publish("conversation", {"n": 3})
        await until(lambda: {"n": 3} in heard["b"], "a message across after the outage")
        await until(lambda: logged(caplog, "bus: publishing again") == 1, "the publisher back")
        # The message published meanwhile was held and sent, not dropped; a listener that came back after it
        # was sent hears that it may have missed messages, and its subscribers catch up from the database.
        assert buses["a"]._outbox.empty()
        for name in heard:
            assert notify.MISSED in heard[name], f"bus {name} was not told it may have missed messages"
            assert {"n": 2} in heard[name] or heard[name].index(notify.MISSED) > heard[name].index({"n": 1})
    finally:
        for bus in buses.values():
            await bus.stop()
    assert logged(caplog, "bus: listening failed") == 2, "one line per listener per outage, not per attempt"
    assert logged(caplog, "bus: publishing failed") == 1


def test_what_a_database_error_means_is_read_from_the_driver_not_from_the_statement():
    def error(orig: BaseException, params: Any = None) -> OperationalError:
        return OperationalError("INSERT INTO audit_events ...", params, orig)

    # A payload that speaks of read-only tools does not make a lost connection a read-only database.
    lost = error(psycopg.OperationalError("server closed the connection unexpectedly"),
                 {"payload": '{"annotations": {"readOnlyHint": true}}'})
    assert outage.cannot_write(lost) and outage.why(lost) == "is unreachable"
    full = error(sqlite3.OperationalError("database or disk is full"))
    assert outage.cannot_write(full) and outage.why(full) == "is full"
    read_only = error(sqlite3.OperationalError("attempt to write a readonly database"))
    assert outage.cannot_write(read_only) and outage.why(read_only) == "is read-only"
    # A write that is wrong is not an outage: it fails at once rather than being tried again.
    assert not outage.cannot_write(error(sqlite3.OperationalError("no such table: audit_events")))
