"""Load: many tabs, each with several views calling tools, against a running console, without a browser.

Each tab is a WebSocket client speaking the page protocol (docs/bridge.md) and each of its
views speaks the view protocol through it, as a browser's would: the tab's hello and a new
conversation, then per view a `/call` of the app's tool that mounts it, the sandbox proxy's
ready, ui/initialize and initialized; then `tools/call` of an app-only tool on its server,
for a fixed time. The figure is the host's: no browser runs, only this driver, the host and
the app's MCP server (a stdio process per worker), all on loopback. Every loop is bounded in
count and time, and the whole run stops by itself (``--max-minutes``).

A round: the tabs open and set their views up (not timed), then all views call at once for
``--seconds``, the calls still in flight are awaited, and the tabs close. Two ways to load:

* closed loop (the default, ``--rate 0``): each view sends its next call once the last one
  is answered: the host's saturated throughput, and the latency that queueing costs;
* open loop (``--rate R``): R calls per second in all, evenly paced over the views whatever
  the answers (up to ``--inflight`` unanswered per view); a call's latency counts from the
  moment it was due, so a host that falls behind is not flattered (no coordinated omission).

``--sweep`` raises the offered rate step by step (x ``--sweep-step``) until p99 exceeds
``--p99-target`` (50 ms) or the host answers less than 95 % of what is offered, and reports
the highest rate that passed, for each tab count given (``--tabs 10,100,1000``).

Printed: calls per second (also per worker), p50/p90/p99 of a call's round trip (medians over
the rounds, and the worst round's p99), the CPU the host's workers, the app's servers, the
database and this driver spent per call, the frames the page received per call, the host's
memory, and the audit trail checked call by call: every call a view sent was answered once,
is on record once as allowed, and its answer is on record once.

    python bench/load.py                                 # one worker, SQLite, closed loop
    python bench/load.py --workers 2                     # two workers on a throwaway PostgreSQL
    python bench/load.py --db postgresql                 # one worker on PostgreSQL
    python bench/load.py --tabs 20 --views 4 --seconds 30 --rounds 5
    python bench/load.py --rate 800 --tabs 10,100,1000 --views 1
    python bench/load.py --sweep --tabs 10,100 --views 3 --seconds 8 --rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import json
import os
import re
import resource
import secrets
import shlex
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websockets

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.fixtures.postgres import Postgres  # noqa: E402 - the repository's own test helper

FIXTURES = REPO / "tests" / "fixtures" / "servers.py"
CACHED = REPO / "bench" / "cached_server.py"
TOOL = "rec-app-only"  # an app-only tool of the recorder fixture: no arguments, a short text back
TICK = os.sysconf("SC_CLK_TCK")
PER_VIEW_RATE = 180  # under the host's max_view_messages_per_second (200), which refuses the rest
DRAIN_SECONDS = 10.0  # how long the calls still in flight at the end of a round may take


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tree(root: int) -> list[int]:
    """``root`` and all its descendants, alive now."""
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        try:
            todo += [int(c) for t in Path(f"/proc/{pid}/task").iterdir()
                     for c in (t / "children").read_text().split()]
        except OSError:
            continue
        found.append(pid)
    return found


def rss_kib(root: int) -> int:
    """Resident memory of a process and all its descendants (KiB)."""
    total = 0
    for pid in _tree(root):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            total += int(re.search(r"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
        except (OSError, AttributeError):
            continue
    return total


def cpu_seconds(pid: int | str) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def cpu_by_role(console: int, database: int | None) -> dict[str, float]:
    """CPU seconds so far: the host's processes, the app's servers (stdio children), the database's,
    and this driver's own."""
    roles: dict[str, float] = collections.defaultdict(float)
    for pid in _tree(console):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        argv = cmdline.split(b"\0")
        is_server = len(argv) > 1 and argv[1].endswith((FIXTURES.name.encode(), CACHED.name.encode()))
        roles["server" if is_server else "host"] += cpu_seconds(pid)
    if database is not None:
        roles["db"] = sum(cpu_seconds(pid) for pid in _tree(database))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    roles["driver"] = usage.ru_utime + usage.ru_stime
    return roles


def per_worker_cpu(workers: set[int]) -> dict[int, float]:
    return {pid: cpu_seconds(pid) for pid in workers}


def loop_cpu(workers: set[int]) -> float:
    """CPU seconds of the workers' main threads, where their event loops run: what one worker cannot spread
    over more cores (its other threads write the database)."""
    return sum(cpu_seconds(f"{pid}/task/{pid}") for pid in workers)


# ---- one tab, its views ------------------------------------------------------------------------------


@dataclass
class Stats:
    """What one round measured, from every tab."""

    latencies: list[float] = field(default_factory=list)
    answered: list[tuple[str, int]] = field(default_factory=list)  # (view, id) of each call answered
    sent: int = 0
    errors: list[str] = field(default_factory=list)
    duplicates: int = 0  # replies to a call already answered
    unanswered: int = 0  # calls still without an answer once the round had drained
    last: float = 0.0  # when the last answer came (perf_counter)
    frames_in: collections.Counter[str] = field(default_factory=collections.Counter)
    frames_out: int = 0
    by_worker: collections.Counter[int] = field(default_factory=collections.Counter)  # calls answered
    tabs_on: collections.Counter[int] = field(default_factory=collections.Counter)


class View:
    def __init__(self, tab: Tab, handle: str, inflight: int) -> None:
        self.tab = tab
        self.handle = handle
        self.posts: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.pending: dict[int, float] = {}  # id -> when the call was due (perf_counter)
        self.answered: set[int] = set()
        self.slots = asyncio.Semaphore(inflight)
        self.idle = asyncio.Event()
        self.idle.set()


class Tab:
    """A page: one WebSocket, the frames it reads routed to its views."""

    def __init__(self, ws: Any, stats: Stats) -> None:
        self.ws = ws
        self.stats = stats
        self.worker = 0
        self.views: dict[str, View] = {}
        self.waiting: dict[tuple[str, int], asyncio.Future[dict[str, Any]]] = {}  # the handshake's requests
        self.mounts: asyncio.Queue[str] = asyncio.Queue()
        self.resets = 0
        self.reset = asyncio.Event()
        self.failed: str | None = None

    async def read(self) -> None:
        stats = self.stats
        frames = stats.frames_in
        async for text in self.ws:
            # The frames a view's call brings and nobody here needs (its card) are counted, not parsed.
            if text.startswith('{"type":"call-'):
                frames[text[9:text.index('"', 9)]] += 1
                continue
            frame = json.loads(text)
            kind = frame.get("type")
            frames[kind] += 1
            if kind == "view-post":
                self._post(frame["view"], frame["message"])
            elif kind == "view-mount" and frame.get("proxyUrl"):
                self.views.setdefault(frame["view"], View(self, frame["view"], 1))
                if not frame.get("prebooted"):  # one booted ahead is a call's only once adopted
                    self.mounts.put_nowait(frame["view"])
            elif kind == "view-adopt":
                self.mounts.put_nowait(frame["view"])
            elif kind == "conversation-reset":
                # A page opens the newest conversation and replays its views: only a fresh one's count.
                self.mounts = asyncio.Queue()
                self.resets += 1
                self.reset.set()
            elif kind == "welcome":
                self.worker = int(frame["worker"])
            elif kind == "notice" and frame.get("level") == "error":
                self.failed = str(frame.get("text"))

    def _post(self, handle: str, message: dict[str, Any]) -> None:
        view = self.views.get(handle)
        msg_id = message.get("id")
        if view is None or not isinstance(msg_id, int) or ("result" not in message and "error" not in message):
            if view is not None:
                view.posts.put_nowait(message)
            return
        due = view.pending.pop(msg_id, None)
        if due is not None:
            now = self.stats.last = time.perf_counter()
            self.stats.latencies.append(now - due)
            self.stats.answered.append((handle, msg_id))
            self.stats.by_worker[self.worker] += 1
            view.answered.add(msg_id)
            view.slots.release()
            if "error" in message:
                self.stats.errors.append(str(message["error"])[:300])
            if not view.pending:
                view.idle.set()
        elif msg_id in view.answered:
            self.stats.duplicates += 1
        elif (handle, msg_id) in self.waiting:
            self.waiting.pop((handle, msg_id)).set_result(message)

    async def send(self, frame: dict[str, Any]) -> None:
        self.stats.frames_out += 1
        await self.ws.send(json.dumps(frame, separators=(",", ":")))

    async def request(self, view: str, msg_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiting[(view, msg_id)] = answer
        await self.send({"type": "view-message", "view": view,
                         "message": {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}})
        return await answer

    async def note(self, view: str, method: str) -> None:
        await self.send({"type": "view-message", "view": view, "message": {"jsonrpc": "2.0", "method": method}})

    async def open(self, views: int) -> list[View]:
        """Hello, a new conversation, and ``views`` views mounted and through their handshake."""
        await self.send({"type": "hello", "theme": "light"})
        await self.send({"type": "conversation-new"})
        while self.resets < 2:  # the replayed conversation, then the new one
            self.reset.clear()
            await self.reset.wait()
        for _ in range(views):
            await self.send({"type": "call", "server": "rec", "tool": "record", "arguments": {}})
        return list(await asyncio.gather(*(self._handshake() for _ in range(views))))

    async def _handshake(self) -> View:
        handle = await self.mounts.get()
        view = self.views[handle]
        await self.note(handle, "ui/notifications/sandbox-proxy-ready")
        await view.posts.get()  # sandbox-resource-ready
        await self.request(handle, 0, "ui/initialize", {"appInfo": {"name": "load", "version": "1"},
                                                        "appCapabilities": {}, "protocolVersion": "2026-01-26"})
        await self.note(handle, "ui/notifications/initialized")
        return view


async def call(view: View, msg_id: int, due: float) -> None:
    """Send one tools/call; the tab's reader takes its answer."""
    await view.slots.acquire()
    view.idle.clear()
    view.pending[msg_id] = due
    view.tab.stats.sent += 1
    await view.tab.send({"type": "view-message", "view": view.handle, "message": {
        "jsonrpc": "2.0", "id": msg_id, "method": "tools/call", "params": {"name": TOOL, "arguments": {}}}})


async def closed_loop(view: View, until: float) -> None:
    msg_id = 0
    while time.perf_counter() < until:
        msg_id += 1
        await call(view, msg_id, time.perf_counter())
        await view.idle.wait()


async def open_loop(view: View, start: float, interval: float, until: float, inflight: int) -> None:
    view.slots = asyncio.Semaphore(inflight)
    for msg_id in range(1, 1 + int((until - start) / interval) + 1):
        due = start + (msg_id - 1) * interval
        if due >= until:
            return
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        await call(view, msg_id, due)


# ---- the console ---------------------------------------------------------------------------------------


def server_command(cached: bool) -> list[str]:
    """The app's server: the SDK's fixture server, or that server behind `cached_server.py` (--server cached)."""
    real = [sys.executable, str(FIXTURES)]
    return [sys.executable, str(CACHED), *real] if cached else real


def start_console(workers: int, database: str, workdir: Path, profile: str | None = None,
                  cached: bool = False) -> tuple[subprocess.Popen[bytes], str, int]:
    port, token = free_port(), secrets.token_urlsafe(12)
    # Under --profile the console runs in bench/profile_host.py, which writes its CPU profile as it stops.
    start = [str(Path(__file__).with_name("profile_host.py")), profile] if profile else ["-m", "mcp_apps_host"]
    cmd = [sys.executable, *start, "serve", "--no-open", "--port", str(port), "--sandbox-port",
           str(free_port()), f"--token={token}", "--db", database, "--workers", str(workers), "--log-level", "warning",
           "--server", f"rec={shlex.join([*server_command(cached), 'rec'])}"]
    log = workdir / "host.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                env=dict(os.environ, PYTHONUNBUFFERED="1"))
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    ready = 0  # several workers: answers in a row, so that each worker is likely to have been asked
    while time.monotonic() < deadline and ready < 4 * workers:
        try:
            request = urllib.request.Request(f"{base}/api/health", headers={"Cookie": f"mah_session={token}"})
            with urllib.request.urlopen(request, timeout=2) as response:
                ok = json.load(response)["servers"].get("rec") == "ready"
            ready = ready + 1 if ok else 0
        except OSError:
            ready = 0
        if ready < 4 * workers:
            time.sleep(0.3)
    if ready < 4 * workers:
        raise RuntimeError(f"the console did not start:\n{log.read_text()[-3000:]}")
    return proc, token, port


def stop_console(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


def _audit_rows(database: str, query: str) -> list[tuple[Any, ...]]:
    if database.startswith("sqlite"):
        with sqlite3.connect(database.removeprefix("sqlite:///")) as db:
            return db.execute(query).fetchall()
    import psycopg

    with psycopg.connect(database.replace("postgresql+psycopg", "postgresql")) as db:
        return db.execute(query).fetchall()


def audit_check(database: str, stats: list[Stats]) -> tuple[bool, str]:
    """Call by call: every call sent was answered once, is on record once (view->host, allowed), and its
    answer is on record once (host->view)."""
    answered = [a for s in stats for a in s.answered]
    views = {v for v, _ in answered}
    asked = collections.Counter(
        (v, int(i)) for v, i in _audit_rows(database, (
            "SELECT view, msg_id FROM audit_events WHERE direction='view->host' AND method='tools/call' "
            "AND decision='allowed'")) if v in views)
    replied = collections.Counter(
        (v, int(i)) for v, i in _audit_rows(database, (
            "SELECT view, msg_id FROM audit_events WHERE direction='host->view' AND method IS NULL "
            "AND msg_id IS NOT NULL")) if v in views and i != "0")
    calls = set(answered)
    lost = len(calls - set(asked))
    reply_lost = len(calls - set(replied))
    twice = sum(n - 1 for n in asked.values() if n > 1) + sum(n - 1 for n in replied.values() if n > 1)
    extra = len(set(asked) - calls)  # on record, yet never answered to the view
    duplicates = sum(s.duplicates for s in stats)
    unanswered = sum(s.unanswered for s in stats)
    errors = sum(len(s.errors) for s in stats)
    ok = not (lost or reply_lost or twice or duplicates or unanswered or errors or len(answered) != len(calls))
    text = (f"{len(calls)} calls: {lost} not on record, {reply_lost} answers not on record, {twice} on record twice, "
            f"{extra} on record but unanswered, {unanswered} unanswered, {duplicates} answered twice, {errors} errors")
    return ok, text


# ---- a round ------------------------------------------------------------------------------------------


@dataclass
class Setup:
    args: argparse.Namespace
    proc: subprocess.Popen[bytes]
    port: int
    token: str
    database: str
    db_pid: int | None
    started: float  # time.monotonic() at the start of the whole run
    peak: list[int]


@dataclass
class Round:
    tabs: int
    views: int
    rate: float  # offered, 0 for closed loop
    stats: Stats
    setup_s: float
    elapsed: float
    cpu: dict[str, float]
    worker_cpu: dict[int, float]
    load: float  # the machine's load average (1 min) at the end: others' work competes for the cores

    @property
    def calls(self) -> int:
        return len(self.stats.latencies)

    @property
    def throughput(self) -> float:
        return self.calls / self.elapsed

    def pct(self, q: float) -> float:
        lat = sorted(self.stats.latencies)
        return lat[min(len(lat) - 1, max(0, int(len(lat) * q) - 1))] * 1000 if lat else float("nan")


def _remaining(s: Setup) -> float:
    return s.started + s.args.max_minutes * 60 - time.monotonic()


async def _fresh_newest(url: str, origin: str, cookie: str) -> None:
    """A new, empty conversation: the newest, which each tab of the round replays on its hello (the busy
    conversations of the last round would be replayed whole otherwise)."""
    async with websockets.connect(url, origin=origin, additional_headers={"Cookie": cookie}, max_size=None) as ws:
        tab = Tab(ws, Stats())
        reader = asyncio.create_task(tab.read())
        await tab.open(0)
        reader.cancel()


async def _round(s: Setup, tabs: int, views: int, rate: float) -> Round:
    args = s.args
    url, origin, cookie = f"ws://127.0.0.1:{s.port}/ws", f"http://127.0.0.1:{s.port}", f"mah_session={s.token}"
    stats = Stats()
    await asyncio.wait_for(_fresh_newest(url, origin, cookie), 120)
    connecting = asyncio.Semaphore(64)  # not a thousand handshakes in the same instant
    sockets: list[Any] = []
    opened: list[Tab] = []

    async def open_tab() -> list[View]:
        async with connecting:
            ws = await websockets.connect(url, origin=origin, additional_headers={"Cookie": cookie}, max_size=None,
                                          open_timeout=60, ping_interval=None)
            sockets.append(ws)
            tab = Tab(ws, stats)
            opened.append(tab)
            readers.append(asyncio.create_task(tab.read()))
            got = await tab.open(views)
            stats.tabs_on[tab.worker] += 1
            return got

    readers: list[asyncio.Task[None]] = []
    began = time.monotonic()
    try:
        mounted = await asyncio.wait_for(asyncio.gather(*(open_tab() for _ in range(tabs))),
                                         min(args.setup_timeout, max(10.0, _remaining(s))))
    except TimeoutError:
        problems = {t.failed for t in opened if t.failed}
        raise RuntimeError(f"the tabs were not set up in time ({len(opened)} of {tabs} open; {problems or ''})") \
            from None
    all_views = [v for got in mounted for v in got]
    setup_s = time.monotonic() - began
    # The driver's own full collections would walk every tab it holds (100-300 ms at 1,000 tabs) and stall its
    # loop, late calls and late stamps that are not the host's: what the set-up made stays out of them.
    gc.collect()
    gc.freeze()
    workers = set(stats.tabs_on)
    cpu0, wcpu0 = cpu_by_role(s.proc.pid, s.db_pid), per_worker_cpu(workers)
    cpu0["loop"] = loop_cpu(workers)
    frames0 = collections.Counter(stats.frames_in)
    start = time.perf_counter() + 0.05
    until = start + args.seconds
    if rate > 0:
        interval = len(all_views) / rate
        loads = [open_loop(v, start + i / rate, interval, until, args.inflight) for i, v in enumerate(all_views)]
    else:
        loads = [closed_loop(v, until) for v in all_views]

    async def sample_memory() -> None:
        while (left := until - time.perf_counter()) > 0:
            s.peak[0] = max(s.peak[0], rss_kib(s.proc.pid))
            await asyncio.sleep(min(1.0, left))

    await asyncio.gather(sample_memory(), *loads)
    # What is still in flight may come in until DRAIN_SECONDS; it is counted, not timed for the throughput.
    drain = [v.idle.wait() for v in all_views if v.pending]
    if drain:
        await asyncio.wait([asyncio.ensure_future(d) for d in drain], timeout=DRAIN_SECONDS)
    elapsed = max(until, stats.last) - start
    cpu1, wcpu1 = cpu_by_role(s.proc.pid, s.db_pid), per_worker_cpu(workers)
    cpu1["loop"] = loop_cpu(workers)
    load = os.getloadavg()[0]
    stats.unanswered = sum(len(v.pending) for v in all_views)
    stats.frames_in.subtract(frames0)
    for task in readers:
        task.cancel()
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    gc.unfreeze()  # the round's tabs may go
    return Round(tabs, views, rate, stats, setup_s, elapsed, {k: cpu1[k] - cpu0.get(k, 0.0) for k in cpu1},
                 {p: wcpu1[p] - wcpu0[p] for p in workers}, load)


def run_round(s: Setup, tabs: int, views: int, rate: float) -> Round:
    return asyncio.run(_round(s, tabs, views, rate))


def settled_rss(pid: int, timeout: float = 15.0) -> int:
    """Memory once the host has let go of the closed tabs: read until two readings a second apart agree
    within 1 % (or ``timeout`` runs out)."""
    last = rss_kib(pid)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = rss_kib(pid)
        if abs(now - last) <= last * 0.01:
            return now
        last = now
    return last


# ---- reports --------------------------------------------------------------------------------------------

HEADER = (f"{'store':<10} {'wk':>2} {'tabs':>5} {'views':>5} {'offered':>7} {'calls/s':>8} {'/worker':>7} "
          f"{'p50':>6} {'p90':>6} {'p99':>6} {'p99max':>6} {'loop':>5} {'host':>6} {'server':>6} {'db':>5} "
          f"{'driver':>6} {'frames':>6} {'setup':>6}  audit")
UNITS = (f"{'':<10} {'':>2} {'':>5} {'':>5} {'calls/s':>7} {'median':>8} {'':>7} "
         f"{'ms':>6} {'ms':>6} {'ms':>6} {'ms':>6} {'µs of CPU per call':>33} {'':>6} "
         f"{'/call':>6} {'s':>6}")


def summary(store: str, workers: int, rounds: list[Round], audit: str) -> str:
    """One line: medians over the rounds."""
    r0 = rounds[0]
    calls = sum(r.calls for r in rounds)

    def per_call(role: str) -> float:
        return sum(r.cpu.get(role, 0.0) for r in rounds) / max(1, calls) * 1e6

    frames = sum(sum(r.stats.frames_in.values()) for r in rounds) / max(1, calls)
    rate = statistics.median(r.throughput for r in rounds)
    db = f"{per_call('db'):5.0f}" if "db" in r0.cpu else f"{'-':>5}"
    offered = f"{r0.rate:.0f}" if r0.rate else "max"
    p50, p90, p99 = (statistics.median(r.pct(q) for r in rounds) for q in (0.5, 0.9, 0.99))
    return (f"{store:<10} {workers:>2} {r0.tabs:>5} {r0.views:>5} {offered:>7} {rate:8.0f} {rate / workers:7.0f} "
            f"{p50:6.1f} {p90:6.1f} {p99:6.1f} {max(r.pct(0.99) for r in rounds):6.1f} "
            f"{per_call('loop'):5.0f} {per_call('host'):6.0f} {per_call('server'):6.0f} {db} {per_call('driver'):6.0f} "
            f"{frames:6.1f} "
            f"{statistics.median(r.setup_s for r in rounds):6.1f}  {audit}")


def round_line(n: int, r: Round) -> str:
    workers = ", ".join(f"{pid}: {r.stats.tabs_on[pid]} tabs {r.stats.by_worker[pid] / r.elapsed:.0f}/s "
                        f"{r.worker_cpu.get(pid, 0) / r.elapsed * 100:.0f}% CPU" for pid in sorted(r.stats.tabs_on))
    return (f"  round {n}: {r.calls} calls in {r.elapsed:.1f} s = {r.throughput:.0f}/s, p50 {r.pct(0.5):.1f} "
            f"p90 {r.pct(0.9):.1f} p99 {r.pct(0.99):.1f} ms, set up in {r.setup_s:.1f} s, load average {r.load:.1f}; "
            f"workers {workers}")


def passes(rounds: list[Round], target: float) -> bool:
    """Every round held p99 within ``target`` and answered (almost) what was offered."""
    return all(r.pct(0.99) <= target and r.stats.unanswered == 0 and not r.stats.errors
               and (r.rate == 0 or r.throughput >= 0.95 * r.rate) for r in rounds)


# ---- main ----------------------------------------------------------------------------------------------


def _numbers(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of whole numbers: {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"must be whole numbers of at least 1: {text!r}")
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--db", choices=["sqlite", "postgresql"], default=None,
                        help="the store (default: SQLite for one worker, PostgreSQL for more)")
    parser.add_argument("--tabs", type=_numbers, default=[12], help="tabs; a list (10,100,1000) runs each in turn")
    parser.add_argument("--views", type=int, default=3, help="views per tab")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of one round's load")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per measurement")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="offered calls per second in all, open loop (0: closed loop, as fast as answered)")
    parser.add_argument("--inflight", type=int, default=16, help="open loop: most unanswered calls per view")
    parser.add_argument("--sweep", action="store_true",
                        help="raise the offered rate until p99 exceeds --p99-target; report the highest that held")
    parser.add_argument("--sweep-from", type=float, default=200.0, help="first offered rate of a sweep (calls/s)")
    parser.add_argument("--sweep-step", type=float, default=1.25, help="factor between the steps of a sweep")
    parser.add_argument("--p99-target", type=float, default=50.0, help="ms")
    parser.add_argument("--setup-timeout", type=float, default=300.0, help="seconds for the tabs of a round to open")
    parser.add_argument("--max-minutes", type=float, default=30.0, help="the whole run stops by then")
    parser.add_argument("--server", choices=["sdk", "cached"], default="sdk",
                        help="the app's server: the MCP SDK's (default), or the same behind bench/cached_server.py, "
                             "which answers a repeated call from memory: the host's capacity without the server's CPU")
    parser.add_argument("--profile", metavar="OUT", help="run the console under yappi (CPU clock) and write its "
                        "profile to OUT as it stops (one worker; bench/profile_host.py)")
    args = parser.parse_args()
    # A driver stopped from outside still stops its console and database (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.workers < 1 or args.rounds < 1 or args.seconds <= 0 or args.inflight < 1 or args.sweep_step <= 1:
        parser.error("--workers, --rounds, --inflight must be at least 1, --seconds positive, --sweep-step above 1")
    store = args.db or ("postgresql" if args.workers > 1 else "sqlite")
    if args.profile and args.workers > 1:
        parser.error("--profile profiles one worker: --workers 1")
    if args.workers > 1 and store == "sqlite":
        parser.error("several workers share their state through PostgreSQL: --db postgresql")

    workdir = Path(tempfile.mkdtemp(prefix="mah-load-"))
    postgres = Postgres() if store == "postgresql" else None
    database = postgres.database() if postgres else f"sqlite:///{workdir}/load.db"
    db_pid = int((postgres.data / "postmaster.pid").read_text().split()[0]) if postgres else None
    started = time.monotonic()
    profile = str(Path(args.profile).resolve()) if args.profile else None
    proc, token, port = start_console(args.workers, database, workdir, profile, args.server == "cached")
    s = Setup(args, proc, port, token, database, db_pid, started, [0])
    label = "PostgreSQL" if postgres else "SQLite"
    print(f"{label}, {args.workers} worker(s), views per tab {args.views}, rounds of {args.seconds:g} s, "
          f"{'sweep' if args.sweep else f'offered {args.rate:g}/s' if args.rate else 'closed loop'}; "
          f"p99 target {args.p99_target:g} ms; the app's server: "
          f"{'cached (bench/cached_server.py)' if args.server == 'cached' else 'the MCP SDK'}", flush=True)
    failed = False
    results: list[str] = []
    try:
        before = settled_rss(proc.pid)
        s.peak[0] = before
        for tabs in args.tabs:
            if tabs * args.views * PER_VIEW_RATE < (args.rate or 0):
                print(f"  {tabs} tabs: skipped, {args.rate:g}/s is more than their views may send "
                      f"({PER_VIEW_RATE}/s each)", flush=True)
                continue
            rates = [args.rate] if not args.sweep else [args.sweep_from]
            best: tuple[float, str] | None = None
            while rates and _remaining(s) > 0:
                rate = rates.pop()
                if rate > tabs * args.views * PER_VIEW_RATE:
                    print(f"  {tabs} tabs: stopped at {rate:.0f}/s, more than their views may send", flush=True)
                    break
                rounds: list[Round] = []
                after: list[int] = []
                for _ in range(args.rounds):
                    if _remaining(s) <= 0:
                        break
                    rounds.append(run_round(s, tabs, args.views, rate))
                    print(round_line(len(rounds), rounds[-1]), file=sys.stderr, flush=True)
                    if not args.sweep:
                        after.append(settled_rss(proc.pid))
                if not rounds:
                    break
                ok, audit = audit_check(database, [r.stats for r in rounds])
                failed |= not ok
                line = summary(label, args.workers, rounds, "ok" if ok else "FAILED")
                results.append(line)
                print(HEADER + "\n" + UNITS + "\n" + line, flush=True)
                print(f"  audit trail: {audit}", flush=True)
                frames = collections.Counter[str]()
                for r in rounds:
                    frames.update(r.stats.frames_in)
                calls = sum(r.calls for r in rounds)
                print("  frames to the page per call: " + ", ".join(
                    f"{kind} {n / max(1, calls):.2f}" for kind, n in frames.most_common() if n > 0), flush=True)
                for r in rounds:
                    for error in r.stats.errors[:3]:
                        print(f"  error: {error}", flush=True)
                if after:
                    print(f"  host memory (all processes): before {before / 1024:.0f} MiB, "
                          f"peak {s.peak[0] / 1024:.0f} MiB", flush=True)
                    for n, kib in enumerate(after, start=1):
                        print(f"    after round {n}: {kib / 1024:.0f} MiB = {kib / before:.3f} x before, "
                              f"{kib / after[0]:.3f} x after round 1", flush=True)
                if args.sweep:
                    if passes(rounds, args.p99_target):
                        best = (rate, line)
                        rates.append(round(rate * args.sweep_step))
                    else:
                        worst = max(r.pct(0.99) for r in rounds)
                        print(f"  {rate:.0f}/s did not hold: p99 {worst:.1f} ms, "
                              f"{statistics.median(r.throughput for r in rounds):.0f}/s answered", flush=True)
            if args.sweep:
                print(f"SWEEP {label} workers {args.workers}, {tabs} tabs x {args.views} views: "
                      + (f"highest offered rate with p99 <= {args.p99_target:g} ms: {best[0]:.0f} calls/s "
                         f"({best[0] / args.workers:.0f} per worker)" if best else "no rate held"), flush=True)
        if len(results) > 1:
            print("\nAll measurements (medians over the rounds):\n" + HEADER + "\n" + UNITS)
            print("\n".join(results))
        if _remaining(s) <= 0:
            print(f"stopped: --max-minutes {args.max_minutes:g} ran out", flush=True)
    finally:
        if args.profile:
            Path(args.profile).unlink(missing_ok=True)
            os.kill(proc.pid, signal.SIGUSR2)
            deadline = time.monotonic() + 120
            while not Path(args.profile).exists() and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.5)
            print(f"CPU profile of the console: {args.profile}" if Path(args.profile).exists()
                  else "the console wrote no profile", flush=True)
        stop_console(proc)
        if postgres:
            postgres.stop()
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
