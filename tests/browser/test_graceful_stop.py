"""Running it as a service: a SIGTERM that finishes what is in flight and moves the tabs on, the health
probes a load balancer asks, and two `serve` processes on one PostgreSQL acting as one host.

Real processes, signalled for real; a tab is a WebSocket client of the page protocol, or Chromium."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import traceback
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
from harness import LIVE_HOSTS, RUNNING_RE, Host, call_tool, free_port, view_frame, wait_view
from websockets.client import ClientProtocol
from websockets.exceptions import ConnectionClosed, InvalidMessage, InvalidStatus
from websockets.frames import Frame, Opcode
from websockets.protocol import State
from websockets.sync.client import ClientConnection, connect
from websockets.uri import parse_uri

from tests.fixtures.postgres import Postgres, _bin
from tests.fixtures.tcpproxy import TcpProxy

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

    def __init__(self, host: Host, port: int | None = None, conversation: str | None = None) -> None:
        port = port or host.port
        self.conversation = conversation
        self.ws: ClientConnection = connect(f"ws://127.0.0.1:{port}/ws", open_timeout=30, additional_headers={
            "Cookie": f"mah_session={host.token}", "Origin": host.origin}).__enter__()
        self.frames: list[dict[str, Any]] = []
        self.read_all = threading.Event()  # the connection ended and every frame it brought is in `frames`
        self.closed_at: float | None = None  # wall clock, as the audit trail's
        self.close_cause = ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        # A page says which conversation it showed, so a reconnecting tab gets the same one again.
        self.send({"type": "hello", **({"conversation": conversation} if conversation else {})})

    def _read(self) -> None:
        try:
            for text in self.ws:
                self.frames.append(json.loads(text))
        except ConnectionClosed as exc:
            self.close_cause = repr(exc.__cause__ or exc)
        self.closed_at = time.time()
        self.read_all.set()

    def send(self, frame: dict[str, Any]) -> None:
        self.ws.send(json.dumps(frame))

    def wait(self, kind: str, where: Callable[[dict[str, Any]], bool] = lambda f: True,
             timeout: float = DEADLINE, since: int = 0) -> dict[str, Any]:
        return wait_until(f"a {kind} frame", lambda: next(
            (f for f in self.frames[since:] if f["type"] == kind and where(f)), None), timeout)

    def close_code(self, timeout: float = DEADLINE) -> int | None:
        assert self.read_all.wait(timeout), f"the tab's connection did not end within {timeout:.0f} s"
        return self.ws.close_code


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


class SlowPage:
    """A tab over a plain socket with a small receive buffer, which reads only when told: a page whose browser
    is busy. Its kernel stops taking the host's frames once the buffer is full; the host's wait there."""

    def __init__(self, host: Host) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: the window
        self.sock.connect(("127.0.0.1", host.port))
        self.sock.settimeout(DEADLINE)
        self.ws = ClientProtocol(parse_uri(f"ws://127.0.0.1:{host.port}/ws"))
        request = self.ws.connect()
        request.headers["Cookie"] = f"mah_session={host.token}"
        request.headers["Origin"] = host.origin
        self.ws.send_request(request)
        self.flush()
        self.frames: list[dict[str, Any]] = []
        self.reset: OSError | None = None
        self.read(lambda: self.ws.state is State.OPEN)

    def flush(self) -> None:
        self.sock.sendall(b"".join(self.ws.data_to_send()))

    def send(self, frame: dict[str, Any]) -> None:
        self.ws.send_text(json.dumps(frame).encode())
        try:
            self.flush()
        except OSError as exc:
            self.reset = exc

    def read(self, until: Callable[[], bool]) -> None:
        """Read (answering the host's close as a page does) until ``until`` holds or the connection ends."""
        while not until() and self.reset is None and self.ws.state is not State.CLOSED:
            try:
                data = self.sock.recv(65536)
            except OSError as exc:  # a reset: what the host's kernel still held for this page is lost
                self.reset = exc
                return
            if data:
                self.ws.receive_data(data)
            else:
                self.ws.receive_eof()
            for event in self.ws.events_received():
                if isinstance(event, Frame) and event.opcode is Opcode.TEXT:
                    self.frames.append(json.loads(event.data))
            with contextlib.suppress(OSError):  # the close's answer, once it is due
                self.flush()


def test_a_page_that_reads_slowly_gets_its_last_frames_and_the_close(start_host):
    """The stop closes a tab, and the process ends, only once the page has answered the close: a connection
    closed while the page still sends is reset, and the reset drops what the host's kernel had not delivered
    yet — to a page that reads slowly, the last answers and the close itself."""
    host = start_host(servers={"rec": REC})
    wait_until("the server to connect", lambda: servers_ready(host))
    page = SlowPage(host)
    page.send({"type": "hello"})
    page.read(lambda: any(f["type"] == "conversations" for f in page.frames))
    # Frames for the page well past what its buffer takes: most wait in the host's kernel.
    page.send({"type": "call", "server": "rec", "tool": "record", "arguments": {"text": "x" * 300_000}})
    wait_until("the call to end", lambda: audit_rows(host.log_path.parent / "host.db",
                                                     "direction='server->host' AND method='tools/call'"))
    host.proc.send_signal(signal.SIGTERM)
    # Busy, the page goes on sending (its views' messages), and reads again only later.
    until = time.monotonic() + 2.0
    while time.monotonic() < until and page.reset is None:
        page.send({"type": "view-message", "view": "gone", "message": {"jsonrpc": "2.0", "method": "ping"}})
        time.sleep(0.02)
    page.read(lambda: False)
    kinds = [f["type"] for f in page.frames]
    assert page.reset is None, f"the connection was reset after {kinds[-5:]}: {page.reset!r}"
    assert "call-finished" in kinds and "reconnect" in kinds, kinds
    assert page.ws.close_rcvd is not None and page.ws.close_rcvd.code == 1012, page.ws.close_rcvd
    assert host.proc.wait(timeout=DEADLINE) == 0


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



# ---- several workers, several machines: real `serve` processes on one PostgreSQL ---------------------------

WORKER_EXIT_RE = re.compile(r"worker \[(\d+)\] exited with code (-?\d+)")
SERVERS_READY = "server rec: ready"
WINDOW = 4  # calls a view keeps in flight


class Services:
    """`serve` processes started by a test on the ports it chooses (a restart takes the same ones), each
    logging to its own file; all of them ended at teardown."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.started: list[Host] = []

    def __call__(self, *args: str, port: int, token: str, workers: int = 1) -> Host:
        workdir = self.base / f"serve{len(self.started)}"
        workdir.mkdir(parents=True)
        cmd = [sys.executable, "-m", "mcp_apps_host", "serve", "--no-open", "--port", str(port), f"--token={token}",
               "--server", f"rec={REC}", "--workers", str(workers), *args]
        log_path = workdir / "host.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=workdir,
                                    env=dict(os.environ, PYTHONUNBUFFERED="1"), start_new_session=True)
        host = Host(url="", origin="", port=port, sandbox_port=port, token=token, log_path=log_path, proc=proc)
        self.started.append(host)
        LIVE_HOSTS.append(host)

        def running() -> re.Match[str] | None:
            assert proc.poll() is None, f"serve exited with {proc.returncode}:\n{host.log_text()[-3000:]}"
            return RUNNING_RE.search(host.log_text())

        host.url = wait_until("serve to start", running).group(1)
        parts = urlsplit(host.url)
        host.origin = f"{parts.scheme}://{parts.netloc}"
        # Every worker has its server connected (each says so once): only then is each one worth a tab.
        wait_until("every worker's server", lambda: running() and host.log_text().count(SERVERS_READY) >= workers,
                   timeout=180)
        return host

    def close(self) -> None:
        for host in self.started:
            host.close()


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    launched = Services(tmp_path)
    yield launched
    launched.close()


def pg_rows(db: str, sql: str, *params: object) -> list[tuple[Any, ...]]:
    with psycopg.connect(db.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()  # type: ignore[arg-type]


def worker_exits(host: Host) -> dict[int, int]:
    """What the supervisor said of each worker that ended: pid -> exit code."""
    return {int(pid): int(code) for pid, code in WORKER_EXIT_RE.findall(host.log_text())}


def ready_view(tab: Tab) -> str:
    """A person's call of rec/record on this tab, and its view brought up as the view's frame would."""
    since = len(tab.frames)
    mark = f"view-{since}-{time.monotonic()}"  # which call is this one (a replayed conversation has others)
    tab.send({"type": "call", "server": "rec", "tool": "record", "arguments": {"text": mark}})
    started = tab.wait("call-started", lambda f: f["arguments"].get("text") == mark, since=since)
    view = str(wait_until("the call's view", lambda: next(  # a new one, or one booted ahead that it takes
        (f for f in tab.frames[since:] if f["type"] in ("view-mount", "view-adopt")
         and f["callId"] == started["callId"]), None))["view"])
    for message in ({"jsonrpc": "2.0", "method": "ui/notifications/sandbox-proxy-ready", "params": {}},
                    {"jsonrpc": "2.0", "id": "init", "method": "ui/initialize",
                     "params": {"appInfo": {"name": "t", "version": "1"}, "appCapabilities": {},
                                "protocolVersion": "2026-01-26"}},
                    {"jsonrpc": "2.0", "method": "ui/notifications/initialized", "params": {}}):
        tab.send({"type": "view-message", "view": view, "message": message})
    tab.wait("view-post", lambda f: f["view"] == view and f["message"].get("id") == "init", since=since)
    return view


def view_call(tab: Tab, view: str, request_id: int, tool: str, arguments: dict[str, Any]) -> None:
    tab.send({"type": "view-message", "view": view, "message": {
        "jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}})


class ViewCalls(threading.Thread):
    """A view calling rec/record again and again, a few calls in flight at once, until its tab closes;
    each call's text names it (``NAME-ID``), so the audit trail can be asked about each one."""

    def __init__(self, tab: Tab, view: str, name: str, halt: threading.Event | None = None) -> None:
        super().__init__(daemon=True)
        self.tab, self.view, self.name = tab, view, name
        self.halt = halt or threading.Event()  # set: no more calls; ends once those sent are answered
        self.sent: dict[int, str] = {}
        self.sent_at: dict[int, float] = {}  # wall clock, as the audit trail's
        self.replies: dict[int, list[dict[str, Any]]] = {}
        self._read = 0

    def collect(self) -> None:
        new = self.tab.frames[self._read:]
        self._read += len(new)
        for frame in new:
            message = frame.get("message", {})
            if frame["type"] == "view-post" and frame["view"] == self.view and message.get("id") in self.sent \
                    and ("result" in message or "error" in message):
                self.replies.setdefault(message["id"], []).append(message)

    def answered(self) -> int:
        return sum(1 for replies in list(self.replies.values()) if "result" in replies[0])

    def run(self) -> None:
        next_id = 1000
        while not self.tab.read_all.is_set():
            self.collect()
            waiting = len(self.sent) - len(self.replies)
            if self.halt.is_set() and not waiting:
                return
            if self.halt.is_set() or waiting >= WINDOW:
                time.sleep(0.01)
                continue
            text = f"{self.name}-{next_id}"
            self.sent[next_id] = text
            self.sent_at[next_id] = time.time()
            try:
                view_call(self.tab, self.view, next_id, "record", {"text": text})
            except ConnectionClosed:
                del self.sent[next_id]
                break
            next_id += 1
        # A send that found the connection closed ends the loop before the reader has read what came before
        # the close: the answers among it are collected once it has.
        assert self.tab.read_all.wait(DEADLINE), f"{self.name}: the tab's connection did not end"
        self.collect()


def check_on_record(db: str, calls: ViewCalls) -> tuple[int, int]:
    """Every reply the view saw is on the audit trail, once; a call the view saw no reply to never ran.
    Returns (calls answered, calls the view sent that were not taken)."""
    replies = {(int(r[0])): r[1] for r in pg_rows(
        db, "SELECT msg_id, count(*) FROM audit_events WHERE direction = 'host->view' AND view = %s "
            "AND msg_id ~ '^[0-9]+$' GROUP BY msg_id", calls.view)}
    ran = {r[0]: r[1] for r in pg_rows(
        db, "SELECT substring(payload_preview from '\"text\":\"([^\"]+)\"'), count(*) FROM audit_events "
            "WHERE direction = 'host->server' AND method = 'tools/call' AND payload_preview LIKE %s GROUP BY 1",
        f'%"text":"{calls.name}-%')}
    for request_id, text in calls.sent.items():
        seen = calls.replies.get(request_id, [])
        assert len(seen) <= 1, f"{text} answered {len(seen)} times"
        assert ran.get(text, 0) <= 1, f"{text} ran {ran[text]} times"
        if seen:
            assert replies.get(request_id) == 1, f"{text}: the view saw {seen[0]} but the trail holds " \
                                                 f"{replies.get(request_id, 0)} replies"
            if "result" in seen[0]:
                assert ran.get(text) == 1, f"{text} answered with a result the trail does not hold"
        else:
            assert text not in ran, f"{text} ran but its view never saw the answer: {unanswered(db, calls, request_id)}"
    return calls.answered(), len(calls.sent) - len(calls.replies)


def unanswered(db: str, calls: ViewCalls, request_id: int) -> str:
    """Where a call the view saw no answer to stood: its tab's worker and end, and the call's rows on record."""
    tab, text = calls.tab, calls.sent[request_id]
    welcome = next((f for f in tab.frames if f["type"] == "welcome"), {})
    kinds = [f["type"] for f in tab.frames]
    after = [(f["type"], f.get("message", {}).get("id", f.get("callId"))) for f in tab.frames[-12:]]
    rows = pg_rows(db, "SELECT ts, direction, method, decision, reason FROM audit_events WHERE "
                       "(view = %s AND msg_id = %s) OR payload_preview LIKE %s ORDER BY id",
                   calls.view, str(request_id), f'%"{text}"%')
    return (f"sent at {calls.sent_at[request_id]:.3f} on worker {welcome.get('worker')}; the tab closed at "
            f"{tab.closed_at} with code {tab.ws.close_code} ({tab.close_cause}), its last frames (type, id) {after} "
            f"(a reconnect frame at {[i for i, k in enumerate(kinds) if k == 'reconnect']} of {len(kinds)}); "
            f"calls sent, not answered: "
            f"{sorted(set(calls.sent) - set(calls.replies))}; on record: {rows}")


def test_sigterm_on_workers_during_a_burst_of_view_calls_loses_none_and_every_worker_exits_0(
        services, postgres, tmp_path):
    db = postgres.database()
    config = tmp_path / "host.json"
    config.write_text(json.dumps({"secretKey": "one key for every process of this host"}))
    args = ("--db", db, "--config", str(config), "--stop-timeout", "60", "--sandbox-port", str(free_port()))
    port, token = free_port(), "graceful-stop-token"
    host = services(*args, port=port, token=token, workers=2)

    # Tabs until both workers have some (the kernel hands each connection to one of them, and a busy machine
    # can give one worker many in a row): at most three a worker take part, the rest are closed.
    tabs: list[Tab] = []
    workers: dict[int, int] = {}
    opened = 0
    while len(workers) < 2 or len(tabs) < 4:
        assert opened < 60, f"every tab landed on the same worker: {workers}"
        tab = Tab(host)
        opened += 1
        worker = int(tab.wait("welcome")["worker"])
        if workers.get(worker, 0) >= 3:
            tab.ws.close()
            continue
        tabs.append(tab)
        workers[worker] = workers.get(worker, 0) + 1
    for tab in tabs:
        tab.wait("servers", lambda f: {s["status"] for s in f["servers"]} == {"ready"}, timeout=120)
        since = len(tab.frames)
        tab.send({"type": "conversation-new"})
        tab.conversation = str(tab.wait("conversation-reset", since=since)["id"])
    views = [ready_view(tab) for tab in tabs]
    bursts = [ViewCalls(tab, view, f"tab{i}") for i, (tab, view) in enumerate(zip(tabs, views, strict=True))]
    for burst in bursts:
        burst.start()
    wait_until("every view's calls to be answered", lambda: all(b.answered() >= 10 for b in bursts))
    for tab, view in zip(tabs, views, strict=True):  # and one call each that takes a while, running at the stop
        view_call(tab, view, 7, "record-slow", {"seconds": 4})
    for tab in tabs:
        slow = tab.wait("call-started", lambda f: f["tool"] == "record-slow")
        tab.wait("call-progress", lambda f, c=slow["callId"]: f["callId"] == c)

    signalled = time.monotonic()
    os.killpg(host.proc.pid, signal.SIGTERM)  # as systemd (the whole group) or Ctrl-C would: each worker
    # gets it, and again from the supervisor
    for tab in tabs:
        tab.wait("reconnect")
    assert host.proc.wait(timeout=DEADLINE + 60) == 0
    exited_in = time.monotonic() - signalled
    for burst in bursts:
        burst.join(DEADLINE)
        assert not burst.is_alive()
    for tab in tabs:
        assert tab.close_code() == 1012
    exits = worker_exits(host)
    assert set(exits) >= set(workers) and len(exits) == 2 and set(exits.values()) == {0}, host.log_text()[-3000:]
    assert "received SIGTERM again: already stopping" in host.log_text()
    assert "ended at the timeout" in host.log_text() and ", 1 ended at" not in host.log_text()
    for tab, view in zip(tabs, views, strict=True):  # the slow calls finished, then the tab was moved
        slow = [f for f in tab.frames if f["type"] == "view-post" and f["view"] == view and f["message"].get("id") == 7]
        assert len(slow) == 1 and "slow done" in json.dumps(slow[0]["message"]), slow

    answered = not_taken = 0
    for burst in bursts:
        a, n = check_on_record(db, burst)
        answered, not_taken = answered + a, not_taken + n
    drains = [float(s) for s in re.findall(r"ended at the timeout, tabs told to reconnect \(([\d.]+) s\)",
                                           host.log_text())]
    print(f"\nSIGTERM --workers 2: {len(tabs)} tabs {workers}, {answered} view calls answered, 0 lost, 0 twice, "
          f"{not_taken} sent as the tab closed (not run, not answered); drains {drains} s; "
          f"every worker exited 0 in {exited_in:.1f} s")

    # The service comes back (a restart, same port and key): each tab reconnects to its conversation and goes on.
    again = services(*args, port=port, token=token, workers=2)
    for tab, i in zip(tabs, range(len(tabs)), strict=True):
        moved = Tab(again, conversation=tab.conversation)
        assert moved.wait("conversation-reset")["id"] == tab.conversation
        moved.wait("servers", lambda f: {s["status"] for s in f["servers"]} == {"ready"}, timeout=120)
        view = ready_view(moved)
        view_call(moved, view, 1, "record", {"text": f"after-{i}"})
        reply = moved.wait("view-post", lambda f, v=view: f["view"] == v and f["message"].get("id") == 1)
        assert "after-" in json.dumps(reply["message"]["result"])


class MovingTab(threading.Thread):
    """A tab whose view calls go on while its worker is replaced: moved (close 1012), it reconnects as the
    page does (again at once, a little later if refused) to its conversation, brings a view up and calls on."""

    def __init__(self, host: Host, name: str) -> None:
        super().__init__(daemon=True)
        self.host, self.name = host, name
        self.series: list[ViewCalls] = []  # one per connection
        self.workers: list[int] = []
        self.moves = self.refused = self.turned_away = 0
        self.conversation: str | None = None
        self.halt = threading.Event()
        self.error: BaseException | None = None
        self.failure = ""
        self.current: Tab | None = None

    def connect(self) -> Tab:
        deadline = time.monotonic() + DEADLINE * 2
        while True:
            try:
                return Tab(self.host, conversation=self.conversation)
            except ConnectionRefusedError:
                self.refused += 1
            except (InvalidStatus, InvalidMessage, ConnectionClosed):
                # A worker that is stopping takes no new tab, and drops one it took as it exits: the page retries.
                self.turned_away += 1
            assert time.monotonic() < deadline, f"{self.name} could not reconnect"
            time.sleep(0.1)

    def run(self) -> None:
        try:
            while not self.halt.is_set():
                tab = self.current = self.connect()
                self.workers.append(int(tab.wait("welcome")["worker"]))
                if self.conversation is None:
                    tab.send({"type": "conversation-new"})
                self.conversation = str(tab.wait("conversation-reset")["id"])
                tab.wait("servers", lambda f: {s["status"] for s in f["servers"]} == {"ready"}, timeout=120)
                calls = ViewCalls(tab, ready_view(tab), f"{self.name}-{len(self.series)}", self.halt)
                self.series.append(calls)
                calls.run()  # until the host closes the tab (a move), or the test halts it
                if not self.halt.is_set():
                    assert tab.close_code() == 1012 and any(f["type"] == "reconnect" for f in tab.frames)
                    self.moves += 1
        except BaseException as exc:  # the test reports it, with where it happened
            self.error = exc
            self.failure = traceback.format_exc()

    def stop(self) -> None:
        """No more calls; once those sent are answered, the tab closes."""
        self.halt.set()
        self.join(DEADLINE)
        tab = self.current
        assert not self.is_alive() and self.error is None, (
            f"{self.name}: {self.failure} on workers {self.workers} (moved {self.moves} times, turned away "
            f"{self.turned_away}); its last tab: {[f['type'] for f in tab.frames[-8:]] if tab else None}, "
            f"closed at {tab.closed_at if tab else None} ({tab.close_cause if tab else None}; now {time.time():.3f})")
        self.series[-1].tab.ws.close()


class Prober(threading.Thread):
    """GETs a path again and again, as a load balancer or a page's requests would; counts what failed."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.ok = 0
        self.failed: list[str] = []
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            try:
                status, _ = get(self.url)
                if status == 200:
                    self.ok += 1
                else:
                    self.failed.append(str(status))
            except OSError as exc:
                self.failed.append(repr(exc))
            time.sleep(0.05)


def test_sighup_replaces_each_worker_while_a_tab_goes_on_calling(services, postgres, tmp_path):
    db = postgres.database()
    port = free_port()
    host = services("--db", db, "--stop-timeout", "60", "--sandbox-port", str(free_port()),
                    port=port, token="rolling-token", workers=2)
    tabs = [MovingTab(host, f"roll{i}") for i in range(2)]
    for tab in tabs:
        tab.start()
    wait_until("each tab's view to call", lambda: all(t.error or (t.series and t.series[-1].answered() >= 5)
                                                       for t in tabs), timeout=120)
    prober = Prober(f"http://127.0.0.1:{port}/api/health/live")
    prober.start()

    started = time.monotonic()
    # To the whole process group, as a closed terminal sends it (`systemctl reload` sends it to the supervisor
    # alone): the workers leave it to the supervisor, which replaces them one at a time — none dies of it.
    os.killpg(host.proc.pid, signal.SIGHUP)
    line = wait_until("the workers to be replaced", lambda: re.search(
        r"SIGHUP: replacing the workers (.+) one at a time\n(?:.*\n)*.*SIGHUP: workers now (.+)\n", host.log_text()),
        timeout=300)
    rolled_in = time.monotonic() - started
    old = {int(p) for p in line.group(1).split(", ")}
    new = {int(p) for p in line.group(2).split(", ")}
    assert len(old) == len(new) == 2 and not old & new
    exits = worker_exits(host)
    assert {pid: exits.get(pid) for pid in old} == dict.fromkeys(old, 0), host.log_text()[-3000:]
    # Nothing the supervisor started died of the hangup either (multiprocessing's resource tracker).
    assert "died unexpectedly" not in host.log_text(), host.log_text()[-3000:]

    # Each tab was moved off its old worker, came back on a new one, and its view calls on there.
    wait_until("each tab to call on a new worker", lambda: all(
        t.error or (t.workers[-1] in new and t.series[-1].answered() >= 5) for t in tabs), timeout=120)
    prober.halt.set()
    prober.join(DEADLINE)
    for tab in tabs:
        tab.stop()
    answered = sent_as_closed = 0
    for tab in tabs:
        assert tab.moves >= 1 and tab.refused == 0, (tab.moves, tab.refused)
        for calls in tab.series:
            a, n = check_on_record(db, calls)
            answered, sent_as_closed = answered + a, sent_as_closed + n
    assert prober.failed == [], prober.failed
    print(f"\nSIGHUP --workers 2: rolled in {rolled_in:.1f} s; {sum(t.moves for t in tabs)} tab moves, "
          f"{sum(t.turned_away for t in tabs)} reconnects turned away by a stopping worker, 0 refused; "
          f"{answered} view calls answered, 0 lost, 0 twice, {sent_as_closed} sent as a tab closed; "
          f"{prober.ok} probes answered, {len(prober.failed)} failed")


@pytest.fixture
def proxy() -> Iterator[TcpProxy]:
    """A plain reverse proxy, its backends given once they run (they need its address for their origin)."""
    front = TcpProxy([])
    yield front
    front.close()


def rec_views(page: Any) -> Any:
    return page.locator('[data-testid=view][data-server="rec"][data-tool="record"]')


def noted(page: Any, text: str) -> None:
    """A new rec view, asked to call rec/record from inside its frame, shows the answer."""
    views = rec_views(page).count()
    call_tool(page, "rec", "record", {"action": "call", "tool": "record", "text": text})
    wait_until("the new view", lambda: rec_views(page).count() > views)
    view = wait_view(page, "rec", "record", timeout=60_000)
    answer = view_frame(view).locator("[data-check=call]")
    answer.wait_for(timeout=60_000)
    assert answer.inner_text().startswith("ok:") and text in answer.inner_text(), answer.inner_text()


@pytest.mark.browser
def test_a_tab_whose_machine_stops_goes_on_on_the_other_behind_the_proxy(services, postgres, proxy, page_for,
                                                                        tmp_path):
    # Two machines as one host: one database, one secret key (a view handle signed by one is checked by the
    # other), one public origin and one sandbox domain (the proxy's), one token; one has workers of its own.
    origin = f"http://127.0.0.1:{proxy.port}"
    config = tmp_path / "host.json"
    config.write_text(json.dumps({"secretKey": "one key for every machine of this host", "origin": origin,
                                  "sandboxOrigin": f"http://{{label}}.sandbox.localhost:{proxy.port}"}))
    args = ("--db", postgres.database(), "--config", str(config), "--stop-timeout", "60")
    machines = [services(*args, port=free_port(), token="two-machines-token", workers=n) for n in (1, 2)]
    proxy.backends = [m.port for m in machines]
    assert machines[0].url.startswith(origin)

    page = page_for(machines[0])  # its url is the proxy's
    noted(page, "before")  # the page, its views and their sandbox reached through the proxy, on both machines
    conversation = page.locator("[data-testid=conversation-item].current").get_attribute("data-id")
    worker = page.evaluate("document.documentElement.dataset.worker")
    on = machines[0] if worker == str(machines[0].proc.pid) else machines[1]
    other = machines[1] if on is machines[0] else machines[0]
    # A view's frame may be fetched from either machine: what the tab's machine signed, the other accepts.
    frame_url = urlsplit(str(page.locator("[data-testid=view] iframe.proxy").last.get_attribute("src")))
    request = urllib.request.Request(f"http://127.0.0.1:{other.port}{frame_url.path}?{frame_url.query}",
                                     headers={"Host": frame_url.netloc})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200

    signalled = time.monotonic()
    os.killpg(on.proc.pid, signal.SIGTERM)
    page.wait_for_function("() => document.documentElement.dataset.reconnects === '1'", timeout=60_000)
    page.wait_for_function("w => document.documentElement.dataset.worker !== w", arg=worker, timeout=60_000)
    assert on.proc.wait(timeout=DEADLINE + 60) == 0
    stopped_in = time.monotonic() - signalled
    assert other.proc.poll() is None
    assert set(worker_exits(on).values()) <= {0}

    # Its conversation is there, with what it held; a new call goes through the other machine.
    page.locator(f'[data-testid=conversation-item].current[data-id="{conversation}"]').wait_for(timeout=60_000)
    wait_until("its view drawn again", lambda: rec_views(page).count() >= 1)
    noted(page, "after")
    assert rec_views(page).count() >= 2
    assert other.port in proxy.chosen[-3:]
    print(f"\ntwo machines: the tab moved off a stopped one ({stopped_in:.1f} s to exit 0) and called on the other")
