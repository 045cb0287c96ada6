"""Audit write throughput: group-committed ``await record()`` against one commit per event.

Both write the same events to a fresh SQLite file in WAL mode with synchronous=FULL
(one fsync per commit), in this process. Prints events/second for each, the median
of several runs, and the ratio.

    python bench/audit_burst.py [--events 2000] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, insert

from mcp_apps_host.store.audit import AuditEvent, AuditLog, _prepare, audit_events, audit_payloads, metadata


def make_events(n: int) -> list[AuditEvent]:
    return [
        AuditEvent(
            "view->host",
            "tools/call",
            server="bench",
            view=f"v{i % 8}",
            conversation="c1",
            msg_id=i,
            payload={"name": "lookup", "arguments": {"i": i, "q": "x" * 200}},
        )
        for i in range(n)
    ]


def group_commit(path: Path, events: list[AuditEvent]) -> float:
    log = AuditLog(f"sqlite:///{path}")
    try:

        async def burst() -> float:
            start = time.perf_counter()
            await asyncio.gather(*(log.record(e) for e in events))
            return time.perf_counter() - start

        elapsed = asyncio.run(burst())
    finally:
        log.close()
    return len(events) / elapsed


def one_commit_per_event(path: Path, events: list[AuditEvent]) -> float:
    engine = create_engine(f"sqlite:///{path}")

    @event.listens_for(engine, "connect")
    def _pragmas(conn: Any, _record: Any) -> None:
        cur = conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=FULL")
        cur.close()

    metadata.create_all(engine, tables=[audit_events, audit_payloads])
    try:
        start = time.perf_counter()
        with engine.connect() as conn:
            for e in events:
                row = _prepare(e, 500)  # same serialisation and hashing as the real path
                with conn.begin():
                    if row.payload is not None:
                        sha, text, size = row.payload
                        conn.execute(insert(audit_payloads), [{"sha256": sha, "json": text, "size": size}])
                    conn.execute(insert(audit_events), [row.event])
        return len(events) / (time.perf_counter() - start)
    finally:
        engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    events = make_events(args.events)
    grouped: list[float] = []
    naive: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            grouped.append(group_commit(Path(tmp) / f"grouped{run}.db", events))
            naive.append(one_commit_per_event(Path(tmp) / f"naive{run}.db", events))
    g, n = statistics.median(grouped), statistics.median(naive)
    print(f"events per run: {args.events}, runs: {args.runs}")
    for label, median, runs in (
        ("record (awaited, group commit)", g, grouped),
        ("one commit per event (naive)  ", n, naive),
    ):
        print(f"{label}: {median:10.0f} events/s  (runs: {', '.join(f'{x:.0f}' for x in runs)})")
    print(f"ratio: {g / n:.1f}x")


if __name__ == "__main__":
    main()
