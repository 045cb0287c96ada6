"""The host's Prometheus metrics: one set of metric objects, recorded into where things happen.

Labels stay bounded: server and tool names come from the configured servers (a tool a view names
that its server does not have is counted as ``(unknown)``), never a person or a view handle.
With several workers each process writes its own values to ``PROMETHEUS_MULTIPROC_DIR`` (set by
the parent before they start) and the parent serves their sum (`exposition.py`); gauges of what a
process holds are summed over the live processes only (``livesum``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Final, Literal

from prometheus_client import Counter, Gauge, Histogram, disable_created_metrics

Caller = Literal["model", "person", "view"]
# How a tool call ended, in the audit trail's terms: the server answered (ok, or a result with isError:
# error), it did not (failed, timeout), the caller stopped it (cancelled), or it never ran: refused by
# the policy or a check (the audit's decision "refused"), or declined by the person ("declined").
Outcome = Literal["ok", "error", "failed", "timeout", "cancelled", "refused", "declined"]
ConsentAnswer = Literal["asked", "allowed", "denied"]
PrebootEnd = Literal["taken", "lapsed", "dropped"]
UNKNOWN_TOOL: Final = "(unknown)"

# A `_created` series beside every counter tells a scrape nothing it needs.
disable_created_metrics()  # type: ignore[no-untyped-call]

# Host-added time is mostly well under a millisecond to tens of them; a server's time runs to minutes.
_HOST_BUCKETS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
_SERVER_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
_COMMIT_BUCKETS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)

TOOL_CALLS: Final = Counter(
    "mcp_apps_host_tool_calls", "Tool calls on servers, by who called and how they ended",
    ["server", "tool", "caller", "outcome"])
HOST_SECONDS: Final = Histogram(
    "mcp_apps_host_tool_call_host_seconds",
    "Time the host adds to a tool call that reached its server (the call's whole time less the server's)",
    ["server", "caller"], buckets=_HOST_BUCKETS)
SERVER_SECONDS: Final = Histogram(
    "mcp_apps_host_tool_call_server_seconds", "Time from sending tools/call to a server to its answer",
    ["server"], buckets=_SERVER_BUCKETS)
TABS: Final = Gauge("mcp_apps_host_tabs", "Open tabs (page connections)", multiprocess_mode="livesum")
LIVE_VIEWS: Final = Gauge("mcp_apps_host_live_views", "Views mounted in open tabs, booted-ahead ones included",
                          multiprocess_mode="livesum")
CONSENTS: Final = Counter("mcp_apps_host_consents", "Questions put to the person, and their answers",
                          ["kind", "answer"])
AUDIT_COMMIT_SECONDS: Final = Histogram(
    "mcp_apps_host_audit_commit_seconds", "Time to commit one batch of audit events", buckets=_COMMIT_BUCKETS)
AUDIT_QUEUE_DEPTH: Final = Gauge("mcp_apps_host_audit_queue_depth", "Audit events queued, not yet committed",
                                 multiprocess_mode="livesum")
AUDIT_FAILURES: Final = Counter("mcp_apps_host_audit_commit_failures", "Batches of audit events that failed to commit")
SERVER_CONNECTIONS: Final = Gauge(
    "mcp_apps_host_server_connections", "Connections to servers by state (one per worker, more with per-person "
    "sign-ins)", ["server", "state"], multiprocess_mode="livesum")
SERVER_RESTARTS: Final = Counter("mcp_apps_host_server_restarts", "Times a connection to a server started again",
                                 ["server"])
PREBOOTED_HELD: Final = Gauge("mcp_apps_host_prebooted_views", "Views booted ahead, held for a call",
                              multiprocess_mode="livesum")
PREBOOTED_ENDED: Final = Counter(
    "mcp_apps_host_prebooted_views_released", "Views booted ahead that stopped being held: taken by a call, "
    "lapsed unused, or dropped", ["how"])


@dataclass
class CallTiming:
    """What one tool call spent waiting for its server (a call may reach it twice: a sign-in, a visit)."""

    server_seconds: float = 0.0


_timing: ContextVar[CallTiming | None] = ContextVar("mcp_apps_host_call_timing", default=None)


@contextlib.contextmanager
def timing_call() -> Iterator[CallTiming]:
    """Collect the server time of the call made inside (the connection adds to it, `server_time`)."""
    timing = CallTiming()
    token = _timing.set(timing)
    try:
        yield timing
    finally:
        _timing.reset(token)


@contextlib.contextmanager
def server_time(server: str) -> Iterator[None]:
    """Around the wait for a server's answer to tools/call."""
    started = time.perf_counter()
    try:
        yield
    finally:
        spent = time.perf_counter() - started
        SERVER_SECONDS.labels(server).observe(spent)
        timing = _timing.get()
        if timing is not None:
            timing.server_seconds += spent


def tool_call(server: str, tool: str, caller: Caller, outcome: Outcome) -> None:
    TOOL_CALLS.labels(server, tool, caller, outcome).inc()


def host_time(server: str, caller: Caller, seconds: float) -> None:
    HOST_SECONDS.labels(server, caller).observe(max(seconds, 0.0))


def consent(kind: str, answer: ConsentAnswer) -> None:
    CONSENTS.labels(kind, answer).inc()


class ConnectionState:
    """One connection's place in `SERVER_CONNECTIONS`: moved as its state changes, let go when it ends."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.state: str | None = None

    def set(self, state: str) -> None:
        if state == self.state:
            return
        if self.state is not None:
            SERVER_CONNECTIONS.labels(self.server, self.state).dec()
        SERVER_CONNECTIONS.labels(self.server, state).inc()
        self.state = state

    def end(self) -> None:
        if self.state is not None:
            SERVER_CONNECTIONS.labels(self.server, self.state).dec()
        self.state = None
