"""SQLite's write-ahead log is checkpointed beside the audit writer, never inside the commit a reply waits for."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from mcp_apps_host.store import checkpoints
from mcp_apps_host.store.audit import AuditEvent, AuditLog
from mcp_apps_host.store.db import open_database

PAGE = 4096  # SQLite's default page size
AUTOCHECKPOINT_PAGES = 1000  # SQLite's default wal_autocheckpoint


def ev(n: int) -> AuditEvent:
    # A payload of its own per event, two pages long: every commit adds several pages to the log.
    return AuditEvent(direction="view->host", method="tools/call", server="s", view="v", msg_id=n,
                      payload={"n": n, "text": f"{n:08d}" * 1000})


def record(log: AuditLog, first: int, count: int) -> None:
    async def each() -> None:
        for n in range(first, first + count):
            await log.record(ev(n))  # one commit each, as a view's replies are

    asyncio.run(each())


def wal_pages(db: Path) -> float:
    return Path(f"{db}-wal").stat().st_size / (PAGE + 24)  # each frame: a page and its header


def test_the_audit_writers_commits_never_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """With the checkpointing thread never woken, nothing copies the log back: the writer's commits (and
    the reply waiting for them) do not run SQLite's checkpoint at its 1,000 pages."""
    monkeypatch.setattr(checkpoints.Checkpointer, "committed", lambda self: None)
    db = tmp_path / "a.db"
    log = AuditLog(f"sqlite:///{db}")
    try:
        record(log, 0, 600)
        assert wal_pages(db) > 1.5 * AUTOCHECKPOINT_PAGES
    finally:
        log.close()


def test_the_log_is_checkpointed_beside_the_writer_and_stays_small(tmp_path: Path):
    db = tmp_path / "a.db"
    log = AuditLog(f"sqlite:///{db}")
    cp = log._checkpoints
    assert cp is not None
    try:
        rounds, per_round, pages = 10, 60, []
        for r in range(rounds):
            done = cp.done
            record(log, r * per_round, per_round)
            # The writer's commits woke the checkpoints: wait until they are idle, the log copied back (the
            # next commit starts it over).
            deadline = time.monotonic() + 60
            while not (cp.done > done and cp.done == cp.begun and not cp._committed.is_set()
                       and cp.last is not None and cp.last[0] == 0 and cp.last[1] == cp.last[2] > 0):
                assert time.monotonic() < deadline, f"the log was not checkpointed after the commits: {cp.last}"
                time.sleep(0.02)
            assert cp.last is not None
            pages.append(cp.last[1])
        written = sum(pages)
        assert written > 2 * AUTOCHECKPOINT_PAGES  # the log went round many times
        # Each round's log started where the last one's was copied back: the file holds about one round.
        assert wal_pages(db) < written / 3, (wal_pages(db), pages)
    finally:
        log.close()


def test_no_checkpointing_thread_for_a_database_in_memory():
    log = AuditLog("sqlite:///:memory:")
    try:
        assert log._checkpoints is None
    finally:
        log.close()


def test_a_shared_engine_gets_no_connection_back_that_leaves_its_checkpoints_to_others(tmp_path: Path):
    engine = open_database(f"sqlite:///{tmp_path / 'a.db'}")
    try:
        log = AuditLog(engine)
        record(log, 0, 3)
        log.close()
        held = [engine.connect() for _ in range(4)]  # more than the log's two connections: every pooled one
        try:
            assert [c.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() for c in held] == [1000] * 4
        finally:
            for c in held:
                c.close()
    finally:
        engine.dispose()
