"""The audit stream (`GET /api/admin/audit?after=CURSOR`): the admin API key only, and resumable with no
gap and no duplicate while events are being written, by several writers at once, on SQLite and on
PostgreSQL (where ids are committed out of order)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import insert, select
from starlette.requests import HTTPConnection
from starlette.testclient import TestClient

from mcp_apps_host import Identity, create_app
from mcp_apps_host.store.audit import AuditFilter, AuditLog
from mcp_apps_host.store.audit_events import AuditEvent
from mcp_apps_host.store.audit_stream import read_page
from mcp_apps_host.store.schema import audit_events

ORIGIN = "http://console.test"
KEY = "an-admin-key-of-32-characters-xx"
BEARER = {"authorization": f"Bearer {KEY}"}


async def who(conn: HTTPConnection) -> Identity | None:
    user = conn.headers.get("x-user")
    return Identity(user, "acme", admin=True) if user else None


def event(n: int, tenant: str = "acme") -> AuditEvent:
    return AuditEvent(direction="host->view", method="ui/notifications/tool-result", reason=f"event {n}",
                      tenant=tenant, user_id="alice")


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/h.db"
    return str(request.getfixturevalue("postgres").database())


@pytest.fixture
def client(database: str) -> Iterator[TestClient]:
    config = {"origin": ORIGIN, "sandboxOrigin": "http://{label}.sandbox.test", "database": database,
              "mcpServers": {}}
    with TestClient(create_app(config, identity=who, admin_key=KEY), base_url=ORIGIN) as client:
        yield client


def test_the_stream_wants_the_admin_key_not_a_cookie(client: TestClient):
    assert client.get("/api/admin/audit").status_code == 401
    signed_in_admin = client.get("/api/admin/audit", headers={"x-user": "root"})  # a session, even an admin's
    assert signed_in_admin.status_code == 401 and "Bearer" in signed_in_admin.text
    assert client.get("/api/admin/audit", headers={"authorization": "Bearer " + "x" * 32}).status_code == 401
    assert client.get("/api/admin/audit?after=x", headers=BEARER).status_code == 400
    ok = client.get("/api/admin/audit", headers=BEARER)
    assert ok.status_code == 200 and ok.headers["x-audit-cursor"] == json.loads(ok.text.splitlines()[-1])["cursor"]


def test_the_stream_resumes_with_no_gap_and_no_duplicate_while_events_are_written(client: TestClient, database: str):
    # Two other writers (another worker's audit log each) write the tenant's events, and another tenant's,
    # while the stream is read page by page.
    writers = [AuditLog(database), AuditLog(database)]
    done = threading.Event()

    def write(log: AuditLog, offset: int) -> None:
        for n in range(300):
            log.record_nowait(event(offset + n, tenant="acme" if n % 5 else "globex"))
            if n % 7 == 0:
                log.flush(60)
        log.flush(60)

    threads = [threading.Thread(target=write, args=(log, 1000 * i)) for i, log in enumerate(writers)]
    for thread in threads:
        thread.start()
    seen: list[int] = []
    cursor = "0"
    try:
        while True:
            writing = any(t.is_alive() for t in threads)
            page = client.get("/api/admin/audit", headers=BEARER, params={"after": cursor, "tenant": "acme",
                                                                           "limit": "13"})
            assert page.status_code == 200, page.text
            *lines, last = page.text.splitlines()
            events = [json.loads(line) for line in lines]
            assert all(e["tenant"] == "acme" for e in events)
            seen += [e["seq"] for e in events]
            cursor = json.loads(last)["cursor"]
            assert cursor == page.headers["x-audit-cursor"]
            if not writing and not events:
                break
    finally:
        done.set()
        for thread in threads:
            thread.join(120)
        for log in writers:
            log.close()
    assert len(seen) == len(set(seen)), "an event came twice"
    trail = client.app.host.audit  # type: ignore[attr-defined]
    with trail.engine.connect() as conn:
        stored = [r.id for r in conn.execute(select(audit_events.c.id).where(audit_events.c.tenant == "acme")
                                             .order_by(audit_events.c.id))]
    assert len(stored) >= 480 and sorted(seen) == stored, "an event was passed over"


def test_an_event_committed_after_a_later_one_is_not_passed_over(postgres):
    """PostgreSQL draws id N for one writer, then N+1 for another that commits first: a reader must not hand
    out N+1 (and a cursor past N) while N is still in flight."""
    database = postgres.database()
    log = AuditLog(database)
    slow = log.engine.connect()
    try:
        held = slow.begin()
        row = {"ts": time.time(), "direction": "host->view", "reason": "slow", "tenant": "acme", "user_id": "a"}
        first = slow.execute(insert(audit_events).values(**row).returning(audit_events.c.id)).scalar_one()
        log.record_nowait(event(2))
        log.flush(60)
        pages: list[object] = []
        reader = threading.Thread(target=lambda: pages.append(read_page(log, AuditFilter(tenant="acme"), 0, 100)))
        reader.start()
        # The reader waits for the writer in flight (a lock wait in PostgreSQL), however long it takes.
        dsn = database.replace("postgresql+psycopg", "postgresql")
        deadline = time.monotonic() + 60
        with psycopg.connect(dsn, autocommit=True) as watch:
            while not watch.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                    "AND query LIKE 'LOCK TABLE audit_events%'").fetchone()[0]:  # type: ignore[index]
                assert reader.is_alive() and time.monotonic() < deadline, \
                    f"the reader did not wait for the event in flight: {pages}"
                time.sleep(0.05)
        held.commit()
        reader.join(60)
        (page,) = pages
        seqs = [e["seq"] for e in page.events]  # type: ignore[attr-defined]
        assert seqs[0] == first and len(seqs) == 2 and page.cursor == seqs[-1]  # type: ignore[attr-defined]
    finally:
        slow.close()
        log.close()
