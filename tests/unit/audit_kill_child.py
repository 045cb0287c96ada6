"""Child process for the kill -9 test: record events in bursts, print each acknowledged sequence number.

Usage: python audit_kill_child.py DB_PATH

A number is printed (and flushed) only after ``await record(...)`` has returned, so
every number on stdout is an event the log promised was durable.
"""

from __future__ import annotations

import asyncio
import sys

from mcp_apps_host.store.audit import AuditEvent, AuditLog

BURST = 200


async def main(path: str) -> None:
    log = AuditLog(f"sqlite:///{path}")
    out = sys.stdout

    async def one(seq: int) -> None:
        await log.record(
            AuditEvent(
                "view->host",
                "tools/call",
                server="kill",
                view="v1",
                msg_id=seq,
                payload={"seq": seq, "pad": "x" * (seq % 300)},
            )
        )
        out.write(f"{seq}\n")
        out.flush()

    seq = 0
    while True:  # until killed
        await asyncio.gather(*(one(n) for n in range(seq, seq + BURST)))
        seq += BURST


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
