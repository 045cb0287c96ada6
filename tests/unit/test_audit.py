"""The audit trail: durable, ordered, deduplicated, filterable, portable SQL."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from sqlalchemy import event, func, select
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.sqlite import dml as sqlite_dml
from sqlalchemy.schema import CreateIndex, CreateTable

from mcp_apps_host.store.audit import AuditEvent, AuditLog, canonical_json, payload_sha256
from mcp_apps_host.store.audit_events import _insert_payloads
from mcp_apps_host.store.db import open_database
from mcp_apps_host.store.schema import audit_events, audit_payloads

HERE = Path(__file__).parent


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'audit.db'}"


@pytest.fixture
def audit(db_url: str):
    log = AuditLog(db_url)
    yield log
    log.close()


def ev(n: int, **kw) -> AuditEvent:
    base = {
        "direction": "view->host",
        "method": "tools/call",
        "server": "s1",
        "view": "v1",
        "conversation": "c1",
        "msg_id": n,
        "payload": {"n": n},
    }
    base.update(kw)
    return AuditEvent(**base)


def test_record_is_committed_when_it_returns(audit: AuditLog, db_url: str):
    asyncio.run(audit.record(ev(0)))
    # A separate connection (no shared pool) already sees it.
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as conn:
        assert conn.execute("select count(*) from audit_events").fetchone()[0] == 1


def test_writer_connection_is_crash_safe(tmp_path: Path):
    """WAL and synchronous=NORMAL on the audit writer's connection: commits survive kill -9."""
    engine = open_database(f"sqlite:///{tmp_path / 'plain.db'}")
    log = AuditLog(engine)
    try:
        asyncio.run(log.record(ev(1)))
        conn = log._connect()
        try:
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 10000
        finally:
            conn.close()
    finally:
        log.close()
        engine.dispose()
    with sqlite3.connect(tmp_path / "plain.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_order_is_kept_across_record_and_record_nowait(audit: AuditLog):
    async def main() -> None:
        for n in range(300):
            if n % 3 == 0:
                audit.record_nowait(ev(n))
            else:
                await audit.record(ev(n))
        # Concurrent callers: in the order their record() calls start running.
        await asyncio.gather(*(audit.record(ev(n)) for n in range(300, 600)))
        for n in range(600, 700):
            audit.record_nowait(ev(n))

    asyncio.run(main())
    audit.flush()
    rows = audit.query(limit=None)
    assert [r["id"] for r in rows] == list(range(700))
    assert [r["seq"] for r in rows] == sorted(r["seq"] for r in rows)


def test_burst_is_group_committed(audit: AuditLog):
    commits = []
    event.listen(audit.engine, "commit", lambda conn: commits.append(1))

    async def main() -> None:
        await asyncio.gather(*(audit.record(ev(n)) for n in range(2000)))

    asyncio.run(main())
    assert len(audit.query(limit=None)) == 2000
    # One transaction per event would be 2000 commits.
    assert len(commits) < 200, len(commits)


def test_filters(audit: AuditLog):
    async def main() -> None:
        await audit.record(ev(1, view="a", server="s1"))
        await audit.record(ev(2, view="b", server="s2", conversation="c2"))
        await audit.record(ev(3, view="a", direction="host->view", method="ui/notifications/tool-result"))
        await audit.record(ev(4, view="a", decision="refused", reason="visibility excludes app"))
        await audit.record(ev(5, view="a", direction="model->host", ts=1000.0))

    asyncio.run(main())
    assert [r["id"] for r in audit.query(view="a")] == [1, 3, 4, 5]
    assert [r["id"] for r in audit.query(server="s2")] == [2]
    assert [r["id"] for r in audit.query(conversation="c2")] == [2]
    assert [r["id"] for r in audit.query(direction="host->view")] == [3]
    assert [r["id"] for r in audit.query(decision="refused")] == [4]
    assert audit.query(decision="refused")[0]["reason"] == "visibility excludes app"
    assert [r["id"] for r in audit.query(method="ui/notifications/tool-result")] == [3]
    assert [r["id"] for r in audit.query(since=2000.0, view="a")] == [1, 3, 4]
    assert [r["id"] for r in audit.query(view="a", limit=2)] == [1, 3]
    first = audit.query(limit=2)
    assert [r["id"] for r in audit.query(after_id=first[-1]["seq"])] == [3, 4, 5]


def test_msg_id_keeps_its_type(audit: AuditLog):
    async def main() -> None:
        await audit.record(ev(0, msg_id=0))
        await audit.record(ev(0, msg_id="0"))
        await audit.record(ev(0, msg_id=None))

    asyncio.run(main())
    ids = [r["id"] for r in audit.query()]
    assert ids == [0, "0", None]
    assert type(ids[0]) is int and type(ids[1]) is str


def test_payload_is_stored_once(audit: AuditLog):
    payload = {"b": [1, 2, 3], "a": "same"}

    async def main() -> None:
        await audit.record(ev(1, payload=payload))
        await audit.record(ev(2, payload={"a": "same", "b": [1, 2, 3]}))  # same JSON, other key order
        await audit.record(ev(3, payload={"other": True}))

    asyncio.run(main())
    with audit.engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(audit_payloads)) == 2
        assert conn.scalar(select(func.count()).select_from(audit_events)) == 3
    rows = audit.query()
    assert rows[0]["payload_sha256"] == rows[1]["payload_sha256"] == payload_sha256(payload)
    assert audit.payload(rows[0]["payload_sha256"]) == payload


def test_payload_dedup_survives_a_new_log(db_url: str):
    for _ in range(2):
        log = AuditLog(db_url)
        asyncio.run(log.record(ev(1, payload={"x": 1})))
        log.close()
    log = AuditLog(db_url)
    try:
        with log.engine.connect() as conn:
            assert conn.scalar(select(func.count()).select_from(audit_payloads)) == 1
        assert len(log.query()) == 2
    finally:
        log.close()


def test_big_payload_truncated_in_timeline_and_whole_in_store(db_url: str):
    log = AuditLog(db_url, preview_chars=50)
    big = {"data": "x" * 10_000}
    small = {"k": "v"}
    try:
        asyncio.run(log.record(ev(1, payload=big)))
        asyncio.run(log.record(ev(2, payload=small)))
        rows = log.query()
        assert rows[0]["payload_truncated"] is True
        assert len(rows[0]["payload"]) == 51 and rows[0]["payload"].endswith("\u2026")
        assert rows[0]["payload"][:50] == canonical_json(big)[:50]
        assert log.payload(rows[0]["payload_sha256"]) == big
        assert rows[1]["payload_truncated"] is False and rows[1]["payload"] == '{"k":"v"}'
        with log.engine.connect() as conn:
            size = conn.scalar(
                select(audit_payloads.c.size).where(audit_payloads.c.sha256 == rows[0]["payload_sha256"])
            )
        assert size == len(canonical_json(big).encode())
    finally:
        log.close()


def test_canonical_json_hash():
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'
    assert payload_sha256({"b": 1, "a": 2}) == payload_sha256({"a": 2, "b": 1})
    with pytest.raises(ValueError, match="payload"):
        canonical_json(float("nan"))
    with pytest.raises(ValueError, match="payload"):
        canonical_json({"s": {1, 2}})


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"direction": "view-to-host"}, "direction"),
        ({"direction": "host->model"}, "direction"),
        ({"decision": "maybe"}, "decision"),
        ({"decision": "refused", "reason": None}, "reason"),
        ({"server": 5}, "server"),
        ({"ts": float("inf")}, "ts"),
        ({"msg_id": {1, 2}}, "payload"),
    ],
)
def test_bad_events_rejected(kwargs, field):
    with pytest.raises(ValueError, match=f"^{field}"):
        ev(1, **kwargs)


def test_bad_filters_rejected(audit: AuditLog):
    with pytest.raises(ValueError, match=r"^direction"):
        audit.query(direction="sideways")
    with pytest.raises(ValueError, match=r"^decision"):
        list(audit.export_jsonl(decision="ok"))


def test_unserialisable_payload_rejected_at_record(audit: AuditLog):
    with pytest.raises(ValueError, match="payload"):
        audit.record_nowait(ev(1, payload={"x": object()}))
    audit.flush()
    assert audit.query() == []


def test_export_jsonl(audit: AuditLog):
    async def main() -> None:
        for n in range(5):
            await audit.record(ev(n, view="a" if n % 2 else "b", decision="allowed" if n == 3 else None))

    asyncio.run(main())
    lines = list(audit.export_jsonl(view="a", page=1))  # page=1 exercises paging
    assert all(line.endswith("\n") for line in lines)
    objs = [json.loads(line) for line in lines]
    assert [o["id"] for o in objs] == [1, 3]
    required = {
        "ts",
        "conversation",
        "view",
        "server",
        "direction",
        "method",
        "id",
        "decision",
        "reason",
        "payload",
    }
    assert required <= set(objs[0])
    assert objs[1]["decision"] == "allowed" and objs[0]["decision"] is None
    assert json.loads(objs[0]["payload"]) == {"n": 1}


def test_closed_log_refuses_and_close_drains(db_url: str):
    log = AuditLog(db_url)
    for n in range(500):
        log.record_nowait(ev(n))
    log.close()
    log.close()  # twice is fine
    with pytest.raises(RuntimeError, match="closed"):
        log.record_nowait(ev(1))
    again = AuditLog(db_url)
    try:
        assert len(again.query(limit=None)) == 500
    finally:
        again.close()


def test_drain_makes_nowait_events_visible(audit: AuditLog):
    async def main() -> list[dict]:
        for n in range(50):
            audit.record_nowait(ev(n))
        await audit.drain()
        return audit.query(limit=None)

    assert len(asyncio.run(main())) == 50


def test_failed_commit_reaches_the_caller(audit: AuditLog):
    with audit.engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE audit_events")
    with pytest.raises(Exception, match="audit_events"):
        asyncio.run(audit.record(ev(1)))


def test_a_writer_that_breaks_fails_its_waiters_instead_of_leaving_them_waiting(db_url: str,
                                                                             monkeypatch: pytest.MonkeyPatch):
    """A fault in the writer thread itself (not a failed commit): every reply waiting for it is told so, and
    whatever comes later is refused, naming why; nothing waits forever."""
    log = AuditLog(db_url)
    try:
        def broken(self: object, now: float) -> None:
            raise RuntimeError("a fault in the writer")

        # Between a commit and the release of the replies that wait for it.
        monkeypatch.setattr("mcp_apps_host.store.outage.Backlog.up", broken)

        async def main() -> None:
            waiting = [asyncio.ensure_future(log.record(ev(n))) for n in range(5)]
            done, pending = await asyncio.wait(waiting, timeout=30)
            assert not pending, "replies still wait for a writer that stopped"
            assert all(isinstance(d.exception(), RuntimeError) for d in done)
            with pytest.raises(RuntimeError, match="audit writer stopped on an error"):
                await log.record(ev(9))
            with pytest.raises(RuntimeError, match="audit writer stopped on an error"):
                await log.run_beside(lambda: None)

        asyncio.run(main())
    finally:
        log.close(timeout=10)
    assert log._checkpoints is not None and not log._checkpoints._thread.is_alive()  # close still stops the rest


def test_sql_is_portable_to_postgresql(audit: AuditLog):
    """Every statement the log runs, bar the SQLite pragmas, compiles for PostgreSQL
    and uses no SQLite-only SQL."""
    statements = []
    raw = []

    @event.listens_for(audit.engine, "before_execute")
    def _capture(conn, clauseelement, multiparams, params, execution_options):
        statements.append(clauseelement)

    @event.listens_for(audit.engine, "before_cursor_execute")
    def _capture_sql(conn, cursor, statement, parameters, context, executemany):
        raw.append(statement)

    async def main() -> None:
        await asyncio.gather(*(audit.record(ev(n, payload={"n": n % 3})) for n in range(20)))

    asyncio.run(main())
    audit.query(
        view="v1",
        server="s1",
        conversation="c1",
        direction="view->host",
        decision="allowed",
        method="m",
        since=1.0,
        until=2.0,
        after_id=3,
        limit=5,
    )
    list(audit.export_jsonl())
    audit.payload(payload_sha256({"n": 1}))
    assert statements and raw
    pg = postgresql.dialect()
    for stmt in statements:
        if isinstance(stmt, str):
            continue
        if isinstance(stmt, sqlite_dml.Insert):
            # The payload insert that skips stored payloads is each database's own: PostgreSQL runs its own.
            stmt = _insert_payloads(SimpleNamespace(dialect=pg))  # type: ignore[arg-type]
        str(stmt.compile(dialect=pg))  # raises if PostgreSQL cannot express it
    for table in (audit_events, audit_payloads):
        str(CreateTable(table).compile(dialect=pg))
        for index in table.indexes:
            str(CreateIndex(index).compile(dialect=pg))
    sqlite_only = (
        "INSERT OR",
        "REPLACE INTO",
        "ROWID",
        "SQLITE_",
        "AUTOINCREMENT",
        "GLOB",
        "JSON_EXTRACT",
        "STRFTIME",
        "DATETIME(",
        "LIMIT -1",
    )
    for sql in raw:
        upper = sql.upper()
        if upper.startswith("PRAGMA"):
            continue
        assert not any(word in upper for word in sqlite_only), sql


def test_survives_kill_9(tmp_path: Path):
    """Every event acknowledged by `await record()` is on disk after SIGKILL mid-burst."""
    db = tmp_path / "killed.db"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    child = subprocess.Popen(
        [sys.executable, str(HERE / "audit_kill_child.py"), str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    acked: list[int] = []
    buffer = b""
    deadline = time.monotonic() + 60
    try:
        assert child.stdout is not None
        fd = child.stdout.fileno()
        while len(acked) < 3000:
            if time.monotonic() > deadline or child.poll() is not None:
                raise AssertionError(
                    f"child did not ack enough events: {child.stderr.read().decode()[-2000:]}"
                )
            chunk = os.read(fd, 65536)
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            acked.extend(int(line) for line in lines if line)
    finally:
        os.kill(child.pid, signal.SIGKILL)  # mid-burst: events are still being queued and committed
        out, _err = child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL
    # Lines printed before the kill count; a half-written last line does not.
    buffer += out
    *lines, _partial = buffer.split(b"\n")
    acked.extend(int(line) for line in lines if line)

    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = [int(row[0]) for row in conn.execute("select msg_id from audit_events order by id")]
        payloads = {row[0] for row in conn.execute("select sha256 from audit_payloads")}
        missing_payloads = conn.execute(
            "select count(*) from audit_events e left join audit_payloads p on p.sha256 = e.payload_sha256 "
            "where p.sha256 is null"
        ).fetchone()[0]
    finally:
        conn.close()
    lost = set(acked) - set(stored)
    assert not lost, f"{len(lost)} acknowledged events lost, e.g. {sorted(lost)[:10]}"
    # One writer commits in queue order, so what survived is a gap-free prefix of what was queued.
    assert stored == list(range(len(stored)))
    assert len(stored) >= len(acked)
    assert missing_payloads == 0 and payloads


def test_a_write_beside_the_audit_runs_on_its_writer_after_what_was_queued_before_it(audit: AuditLog, db_url: str):
    """On SQLite a write elsewhere would make the audit writer wait for the database's one write lock."""

    def count_committed() -> tuple[str, int]:
        engine = open_database(db_url)
        try:
            with engine.connect() as conn:
                return threading.current_thread().name, conn.scalar(select(func.count()).select_from(audit_events))
        finally:
            engine.dispose()

    def fails() -> None:
        raise ValueError("the write failed")

    async def run() -> None:
        for n in range(25):
            audit.record_nowait(ev(n))
        thread, committed = await audit.run_beside(count_committed)
        assert thread == "audit-writer" and committed == 25
        with pytest.raises(ValueError, match="the write failed"):
            await audit.run_beside(fails)
        audit.record_nowait(ev(99))  # the writer goes on after a failed job
        await audit.drain()

    asyncio.run(run())
    assert audit.one_writer
    assert len(audit.query(limit=None)) == 26


def test_a_payload_already_stored_is_skipped_by_the_insert_on_postgresql(postgres):
    """Each log (each worker) knows only the payloads it wrote: one stored by another is skipped, not an error."""
    url = postgres.database()
    first, second = AuditLog(url), AuditLog(url)
    try:
        asyncio.run(first.record(ev(1, payload={"same": True})))
        asyncio.run(second.record(ev(2, payload={"same": True})))
        rows = second.query(limit=None)
        assert [r["id"] for r in rows] == [1, 2]
        assert rows[0]["payload_sha256"] == rows[1]["payload_sha256"]
        with second.engine.connect() as conn:
            assert conn.scalar(select(func.count()).select_from(audit_payloads)) == 1
    finally:
        first.close()
        second.close()


def _committed(audit: AuditLog) -> int:
    with audit.engine.connect() as conn:
        return int(conn.scalar(select(func.count()).select_from(audit_events)) or 0)


def test_an_urgent_write_beside_the_audit_does_not_wait_for_the_writers_linger(db_url: str):
    """The writer lingers for the rest of a call's events before it commits (here 60 s); a write somebody waits
    for now (a view's mount, a view's request) has it commit what it holds and run the write at once."""
    audit = AuditLog(db_url, linger=60)

    async def run() -> None:
        audit.record_nowait(ev(1))  # nobody waits for it: the writer lingers for more
        assert await asyncio.wait_for(audit.run_beside(_committed, audit, urgent=True), 30) == 1
        audit.record_nowait(ev(2))
        with pytest.raises(TimeoutError):  # not urgent: it waits with the event for the linger
            await asyncio.wait_for(audit.run_beside(_committed, audit), 1)

    try:
        asyncio.run(run())
    finally:
        audit.close()  # the stop ends the linger: the second event is written
    assert len(audit.query(limit=None)) == 2


def test_events_nobody_waits_for_stay_on_their_loop_and_are_committed_together(db_url: str):
    """Each event handed to the writer on its own would wake its thread, which takes the interpreter from the
    loop while a view's call is under way: they are handed over together, at the linger or a wait."""
    audit = AuditLog(db_url, linger=0.3)
    inserts: list[str] = []  # the writer inserts each batch of events with one statement
    event.listen(audit.engine, "before_cursor_execute",
                 lambda conn, cursor, statement, *rest: inserts.append(statement)
                 if statement.startswith("INSERT INTO audit_events") else None)

    async def run() -> None:
        for n in range(3):
            audit.record_nowait(ev(n))
        assert audit._queue.qsize() == 0  # the writer has not been handed any of them yet
        deadline = time.monotonic() + 30
        while _committed(audit) < 3 and time.monotonic() < deadline:  # nobody waits: the linger ends it
            await asyncio.sleep(0.05)

    try:
        asyncio.run(run())
        assert _committed(audit) == 3
        assert len(inserts) == 1, inserts
    finally:
        audit.close()


def test_a_write_nobody_is_held_up_by_waits_past_a_replys_commit(db_url: str):
    """A reply waits for its events' commit, not for a write of another table queued before it (a
    conversation item): that one runs at the linger, after the reply has left."""
    audit = AuditLog(db_url, linger=60)

    async def run() -> None:
        item = asyncio.ensure_future(audit.run_beside(_committed, audit))
        await asyncio.sleep(0)  # queued
        audit.record_nowait(ev(1))
        await asyncio.wait_for(audit.drain(), 30)
        assert _committed(audit) == 1
        with pytest.raises(TimeoutError):  # still waiting for the linger
            await asyncio.wait_for(asyncio.shield(item), 1)

    try:
        asyncio.run(run())
    finally:
        audit.close()  # the stop runs it


def test_what_waits_on_the_loop_is_written_at_the_stop(db_url: str):
    audit = AuditLog(db_url, linger=60)

    async def run() -> None:
        for n in range(3):
            audit.record_nowait(ev(n))

    asyncio.run(run())  # the loop is gone; the events are not
    audit.close()
    again = AuditLog(db_url)
    try:
        assert [r["id"] for r in again.query(limit=None)] == [0, 1, 2]
    finally:
        again.close()


def test_a_write_waiting_on_the_loop_hears_of_a_writer_that_broke(db_url: str, monkeypatch: pytest.MonkeyPatch):
    audit = AuditLog(db_url, linger=60)
    try:
        def broken(self: object, now: float) -> None:
            raise RuntimeError("a fault in the writer")

        monkeypatch.setattr("mcp_apps_host.store.outage.Backlog.up", broken)

        async def run() -> None:
            item = asyncio.ensure_future(audit.run_beside(lambda: None))
            await asyncio.sleep(0)  # kept on the loop for the linger
            with pytest.raises(RuntimeError):
                await asyncio.wait_for(audit.record(ev(1)), 30)
            with pytest.raises(RuntimeError, match="a fault in the writer"):
                await asyncio.wait_for(item, 30)

        asyncio.run(run())
    finally:
        audit.close(timeout=10)


def test_the_lingers_timer_is_stopped_once_a_reply_has_taken_everything(db_url: str):
    """A view's call hands its events over with its reply: the linger's timer, with nothing left to hand over,
    must not wake the loop again for every call."""
    audit = AuditLog(db_url, linger=60)

    async def run() -> None:
        audit.record_nowait(ev(1))
        timer = audit._later_timer  # the linger's, started by the first event kept on the loop
        assert timer is not None and not timer.cancelled()
        await asyncio.wait_for(audit.drain(), 30)
        assert timer.cancelled()

    try:
        asyncio.run(run())
        assert _committed(audit) == 1
    finally:
        audit.close()
