"""Running it as a service: a SIGTERM that finishes what is in flight and moves the tabs on, the health
probes a load balancer asks, and two `serve` processes on one PostgreSQL acting as one host.

Real processes, signalled for real; a tab is a WebSocket client of the page protocol, or Chromium."""

from __future__ import annotations

import json
import queue
import shlex
import signal
import sqlite3
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import Host
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from tests.fixtures.postgres import Postgres, _bin

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "servers.py"
REC = shlex.join([sys.executable, str(FIXTURES), "rec"])
DEADLINE = 60.0  # seconds: generous, the machine is shared


def wait_until(what: str, check: Callable[[], Any], timeout: float = DEADLINE, every: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"waited {timeout:.0f} s for {what}"
        time.sleep(every)


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status), json.load(response)
    except urllib.error.HTTPError as exc:
        body = exc.read()
        return int(exc.code), json.loads(body) if body.startswith(b"{") else {"text": body.decode()}


def servers_ready(host: Host) -> bool:
    try:
        status, body = get(f"http://127.0.0.1:{host.port}/api/health", {"Cookie": f"mah_session={host.token}"})
    except OSError:
        return False
    return status == 200 and set(body["servers"].values()) == {"ready"}


class Tab:
    """One tab of the page protocol over a WebSocket: frames read in a thread, found by predicate."""

    def __init__(self, host: Host, port: int | None = None) -> None:
        port = port or host.port
        self.ws: ClientConnection = connect(f"ws://127.0.0.1:{port}/ws", open_timeout=30, additional_headers={
            "Cookie": f"mah_session={host.token}", "Origin": host.origin}).__enter__()
        self.frames: list[dict[str, Any]] = []
        self.closed: queue.Queue[int | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.send({"type": "hello"})

    def _read(self) -> None:
        try:
            for text in self.ws:
                self.frames.append(json.loads(text))
        except ConnectionClosed:
            pass
        self.closed.put(self.ws.close_code)

    def send(self, frame: dict[str, Any]) -> None:
        self.ws.send(json.dumps(frame))

    def wait(self, kind: str, where: Callable[[dict[str, Any]], bool] = lambda f: True,
             timeout: float = DEADLINE) -> dict[str, Any]:
        return wait_until(f"a {kind} frame", lambda: next(
            (f for f in list(self.frames) if f["type"] == kind and where(f)), None), timeout)

    def close_code(self, timeout: float = DEADLINE) -> int | None:
        return self.closed.get(timeout=timeout)


def audit_rows(db: Path, where: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(f"SELECT direction, method, decision, reason, payload_preview FROM audit_events "
                            f"WHERE {where}").fetchall()


# ---- one process: a call in flight finishes, or is ended at the stop timeout -----------------------


def test_sigterm_finishes_the_call_in_flight_moves_the_tab_and_exits_0(start_host):
    host = start_host(servers={"rec": REC}, extra_args=["--stop-timeout", "120"])
    wait_until("the server to connect", lambda: servers_ready(host))
    tab = Tab(host)
    tab.wait("conversations")
    tab.send({"type": "call", "server": "rec", "tool": "record-slow", "arguments": {"seconds": 6}})
    started = tab.wait("call-started")
    tab.wait("call-progress")  # the server is working on it
    host.proc.send_signal(signal.SIGTERM)

    # While it drains: not ready (a load balancer moves away), still live, no new tab taken.
    _status, body = wait_until("readiness to turn 503", lambda: (s := get(f"{host.origin}/api/health/ready"))[0] == 503
                              and s)
    assert body == {"ready": False, "notReady": ["stopping"]}
    assert get(f"{host.origin}/api/health/live") == (200, {"live": True})
    with pytest.raises((InvalidStatus, ConnectionClosed)):
        late = Tab(host)
        late.wait("welcome", timeout=5)
    tab.wait("reconnect")

    # The call in flight ends as it would have: answered, on record; then the tab is closed to move on.
    finished = tab.wait("call-finished", lambda f: f["callId"] == started["callId"])
    assert "slow done" in json.dumps(finished["result"])
    assert tab.close_code() == 1012  # "service restart": the page reconnects at once
    assert host.proc.wait(timeout=DEADLINE) == 0
    rows = audit_rows(host.log_path.parent / "host.db", "direction='server->host' AND method='tools/call'")
    assert any("slow done" in (r[4] or "") for r in rows), rows
    assert "stopping gracefully" in host.log_text()


def test_a_call_still_running_at_the_stop_timeout_ends_with_an_error_on_record(start_host):
    host = start_host(servers={"rec": REC}, extra_args=["--stop-timeout", "2"])
    wait_until("the server to connect", lambda: servers_ready(host))
    tab = Tab(host)
    tab.wait("conversations")
    tab.send({"type": "call", "server": "rec", "tool": "record-slow", "arguments": {"seconds": 600}})
    started = tab.wait("call-started")
    tab.wait("call-progress")
    signalled = time.monotonic()
    host.proc.send_signal(signal.SIGTERM)
    failed = tab.wait("call-failed", lambda f: f["callId"] == started["callId"])
    assert failed["error"] == "the host stopped before the call finished (stop timeout 2 s)"
    assert tab.close_code() == 1012
    assert host.proc.wait(timeout=DEADLINE) == 0
    assert time.monotonic() - signalled < 40  # the timeout, then a quick close: not the call's 600 s
    rows = audit_rows(host.log_path.parent / "host.db", "method='notifications/cancelled'")
    assert [r[3] for r in rows] == ["the host stopped before the call finished (stop timeout 2 s)"]


# ---- readiness follows the database -------------------------------------------------------------------


def pg_ctl(server: Postgres, *args: str) -> None:
    server._run(_bin("pg_ctl"), "-D", str(server.data), *args)


@pytest.fixture
def own_postgres() -> Iterator[Postgres]:
    """A PostgreSQL of this test's own, which it may stop."""
    server = Postgres()
    yield server
    server.stop()


def test_readiness_follows_the_database_and_asks_no_sign_in(start_host, own_postgres):
    host = start_host(servers={"rec": REC}, extra_args=["--db", own_postgres.database()])
    # No cookie, and a Host name the console does not answer to (a probe names the backend's address).
    probe = {"Host": "backend-1.internal:9000"}
    assert wait_until("readiness", lambda: get(f"{host.origin}/api/health/ready", probe)[0] == 200)
    assert get(f"{host.origin}/api/health/ready", probe) == (200, {"ready": True})
    assert get(f"{host.origin}/api/health/live", probe) == (200, {"live": True})
    assert get(f"{host.origin}/api/health", probe)[0] == 421  # the signed-in health keeps its Host check

    pg_ctl(own_postgres, "-m", "fast", "-w", "stop")
    _status, body = wait_until("readiness to see the database gone",
                              lambda: (s := get(f"{host.origin}/api/health/ready", probe))[0] == 503 and s)
    assert "database" in body["notReady"] and body["ready"] is False
    text = json.dumps(body)
    assert str(own_postgres.port) not in text and "postgres" not in text  # nothing about where it is
    assert get(f"{host.origin}/api/health/live", probe) == (200, {"live": True})
    assert host.proc.poll() is None  # the process stays up, waiting for its database

    pg_ctl(own_postgres, "-l", str(own_postgres.base / "log"), "-w", "-o",
           f"-p {own_postgres.port} -k {own_postgres.base} -c listen_addresses=127.0.0.1 -c fsync=off", "start")
    assert wait_until("readiness to come back with the database",
                      lambda: get(f"{host.origin}/api/health/ready", probe) == (200, {"ready": True}))

