"""Health checks that come often but give a healthy server a generous time to answer, counted.

The host waits for each check's answer as long as its check interval. Tests make the interval short, so
that they see several checks (or a lost server) quickly; on a busy machine a healthy server could then
miss a few short checks in a row and be given up on. With `generous_health_checks` each check still
comes every interval, but waits ANSWER_TIMEOUT for its answer, and `answered` counts the answers: a test
waits for a number of answered checks instead of sleeping for a number of intervals.
"""

from __future__ import annotations

import pytest
from mcp.client import Client

from mcp_apps_host.servers import connection

ANSWER_TIMEOUT = 30.0


class HealthChecks:
    def __init__(self) -> None:
        self.answered = 0


def generous_health_checks(monkeypatch: pytest.MonkeyPatch) -> HealthChecks:
    checks = HealthChecks()
    check = connection.health_check

    async def generous(client: Client, timeout: float) -> None:
        await check(client, max(timeout, ANSWER_TIMEOUT))
        checks.answered += 1

    monkeypatch.setattr(connection, "health_check", generous)
    return checks
