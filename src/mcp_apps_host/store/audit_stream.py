"""The audit trail as a resumable stream: the events after a cursor, and the cursor to go on from.

The cursor is an event's id. Ids are handed out in order but, on PostgreSQL, committed in any order:
a reader that took id 12 as it became visible could pass over id 11, still being written by another
worker. So a page is read only up to a *high-water mark* below which nothing can still be in flight:
taking `LOCK TABLE audit_events IN SHARE MODE` waits for every transaction that is inserting events
(they hold ROW EXCLUSIVE, taken before their ids are drawn) and keeps new ones out for the moment
`max(id)` is read; every id drawn later is higher. On SQLite one writer holds the database at a time,
so ids are committed in order and `max(id)` is that mark already. Rows up to the mark are all
committed, so the next page starts after it: no gap, no duplicate.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import func, select, text

from .audit import AuditFilter, AuditLog
from .schema import audit_events


@dataclass(frozen=True)
class AuditPage:
    events: list[dict[str, Any]]
    cursor: int  # where the next page starts (pass it back as `after`)


def high_water(log: AuditLog) -> int:
    """The highest id below which no event can still be committed."""
    with log.engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("LOCK TABLE audit_events IN SHARE MODE"))
        return int(conn.scalar(select(func.max(audit_events.c.id))) or 0)


def read_page(log: AuditLog, where: AuditFilter, after: int, limit: int) -> AuditPage:
    """``where``'s events after ``after``, at most ``limit``, none beyond the high-water mark."""
    mark = high_water(log)
    if mark <= after:
        return AuditPage([], after)
    events = log.query(replace(where, after_id=after, through_id=mark), limit=limit)
    cursor = events[-1]["seq"] if len(events) == limit else mark
    return AuditPage(events, cursor)
