"""SQLite's write-ahead log copied back into the database on a thread of its own.

By default SQLite checkpoints inside a commit once the log passes 1,000 pages: the commit that
crosses it copies the log into the database and syncs it to disk, 10-15 ms, and a view's reply
waiting for that commit waits as long (the p99 of a view's call was that checkpoint). The audit
writer's connection does not checkpoint (`wal_autocheckpoint=0`); this thread does, shortly after
commits, in PASSIVE mode, which takes no lock a writer waits for. The log then stays well under
SQLite's own threshold, which other connections keep as a safety net.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Final

from sqlalchemy.engine import Connection, Engine

log = logging.getLogger(__name__)

# At most one checkpoint in this many seconds: a few hundred pages each under load, none while idle.
CHECKPOINT_INTERVAL_S: Final = 0.2


def checkpointed_by_others(conn: Connection) -> None:
    """A connection whose commits leave checkpoints to a `Checkpointer` (the audit writer's)."""
    conn.exec_driver_sql("PRAGMA wal_autocheckpoint=0")
    conn.commit()


def wal_backed(engine: Engine) -> bool:
    """A SQLite database in a file (in memory there is no write-ahead log)."""
    return engine.dialect.name == "sqlite" and engine.url.database not in (None, "", ":memory:")


class Checkpointer:
    """Runs ``PRAGMA wal_checkpoint(PASSIVE)`` on its own connection when told that commits happened."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._committed = threading.Event()
        self._stopping = threading.Event()
        self.last: tuple[int, int, int] | None = None  # (busy, pages in the log, pages checkpointed)
        self.begun = self.done = 0  # checkpoints begun, and finished (tried)
        self._thread = threading.Thread(target=self._run, name="wal-checkpoints", daemon=True)
        self._thread.start()

    def committed(self) -> None:
        """From the writer: the log has grown."""
        self._committed.set()

    def stop(self, timeout: float | None = 10.0) -> None:
        self._stopping.set()
        self._committed.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        conn: Connection | None = None
        failing = False
        try:
            while True:
                self._committed.wait()
                if self._stopping.is_set():
                    return
                self._committed.clear()
                self.begun += 1
                try:
                    conn = conn or self._engine.connect()
                    row = conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    conn.commit()
                    self.last = (int(row[0]), int(row[1]), int(row[2])) if row is not None else None
                    failing = False
                except Exception as exc:  # a busy or absent database: the next commit tries again
                    if not failing:
                        log.warning("checkpoint of the write-ahead log failed (%s); tried again after the "
                                    "next commit", type(exc).__name__)
                    failing = True
                    if conn is not None:
                        with contextlib.suppress(Exception):
                            conn.invalidate()
                        conn = None
                self.done = self.begun
                if self._stopping.wait(CHECKPOINT_INTERVAL_S):
                    return
        finally:
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()
