"""Load: many tabs, each with several views calling tools in a loop, against a running console.

Each tab is a WebSocket client speaking the page protocol (docs/bridge.md) and each of its
views speaks the view protocol through it, as a browser's would: handshake, then `tools/call`
of an app tool on its server, one after another, for a fixed time. Loopback only, stops by
itself. The load runs in rounds (tabs opened, run, closed); prints calls and page messages per
second, p50/p99 of a call's round trip (medians over the rounds), the host's peak memory (all its
processes), its memory after each round against before the first and against after the first (a
leak per tab or per view grows with every round), and checks the audit trail and the replies:
every call a view sent is on record once and answered once.

    python bench/load.py                      # one process, SQLite
    python bench/load.py --workers 2          # two workers on a throwaway PostgreSQL
    python bench/load.py --tabs 20 --views 4 --seconds 30 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import re
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
from pathlib import Path
from typing import Any

import websockets

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.fixtures.postgres import Postgres  # noqa: E402 - the repository's own test helper

FIXTURES = REPO / "tests" / "fixtures" / "servers.py"


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_kib(root: int) -> int:
    """Resident memory of a process and all its descendants (KiB)."""
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            total += int(re.search(r"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
            todo += [int(c) for t in Path(f"/proc/{pid}/task").iterdir()
                     for c in (t / "children").read_text().split()]
        except (OSError, AttributeError):
            continue
    return total


class Tab:
    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.waiting: dict[tuple[str, int], asyncio.Future[dict[str, Any]]] = {}
        self.mounts: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.posts: dict[str, asyncio.Queue[dict[str, Any]]] = {}
        self.answered: set[tuple[str, int]] = set()
        self.duplicates = 0  # replies to a request already answered
        self.frames = 0  # page frames both ways
        self.resets = 0
        self.reset = asyncio.Event()

    async def read(self) -> None:
        async for text in self.ws:
            self.frames += 1
            frame = json.loads(text)
            if frame["type"] == "conversation-reset":
                # A page opens the newest conversation and replays its views: only a fresh one's count.
                self.mounts = asyncio.Queue()
                self.resets += 1
                self.reset.set()
            elif frame["type"] == "view-mount" and frame.get("proxyUrl"):
                self.posts.setdefault(frame["view"], asyncio.Queue())
                await self.mounts.put(frame)
            elif frame["type"] == "view-post":
                message = frame["message"]
                key = (frame["view"], message.get("id"))
                if "id" in message and ("result" in message or "error" in message) and key in self.answered:
                    self.duplicates += 1
                elif "id" in message and key in self.waiting and ("result" in message or "error" in message):
                    self.answered.add(key)
                    self.waiting.pop(key).set_result(message)
                else:
                    await self.posts.setdefault(frame["view"], asyncio.Queue()).put(message)

    async def send(self, frame: dict[str, Any]) -> None:
        self.frames += 1
        await self.ws.send(json.dumps(frame))

    async def request(self, view: str, msg_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiting[(view, msg_id)] = answer
        await self.send({"type": "view-message", "view": view,
                         "message": {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}})
        return await answer

    async def note(self, view: str, method: str) -> None:
        await self.send({"type": "view-message", "view": view, "message": {"jsonrpc": "2.0", "method": method}})


async def run_view(tab: Tab, until: float, latencies: list[float], sent: list[tuple[str, int]]) -> None:
    mount = await tab.mounts.get()
    view = mount["view"]
    await tab.note(view, "ui/notifications/sandbox-proxy-ready")
    await tab.posts[view].get()  # sandbox-resource-ready
    await tab.request(view, 0, "ui/initialize", {"appInfo": {"name": "load", "version": "1"},
                                                 "appCapabilities": {}, "protocolVersion": "2026-01-26"})
    await tab.note(view, "ui/notifications/initialized")
    for msg_id in itertools.count(1):
        if time.monotonic() >= until:
            return
        started = time.perf_counter()
        reply = await tab.request(view, msg_id, "tools/call", {"name": "rec-app-only", "arguments": {}})
        latencies.append(time.perf_counter() - started)
        if "error" in reply:
            raise RuntimeError(f"a call failed: {reply['error']}")
        sent.append((view, msg_id))


async def run_tab(url: str, origin: str, cookie: str, views: int, until: float, latencies: list[float],
                  sent: list[tuple[str, int]], counts: list[int]) -> None:
    async with websockets.connect(url, origin=origin, additional_headers={"Cookie": cookie},
                                  max_size=None) as ws:
        tab = Tab(ws)
        reader = asyncio.create_task(tab.read())
        await tab.send({"type": "hello", "theme": "light"})
        await tab.send({"type": "conversation-new"})
        while tab.resets < 2:  # the replayed conversation, then the new one
            tab.reset.clear()
            await tab.reset.wait()
        for _ in range(views):
            await tab.send({"type": "call", "server": "rec", "tool": "record", "arguments": {}})
        await asyncio.gather(*(run_view(tab, until, latencies, sent) for _ in range(views)))
        reader.cancel()
        counts[0] += tab.frames
        counts[1] += tab.duplicates


def start_console(workers: int, database: str, workdir: Path) -> tuple[subprocess.Popen[bytes], str, int]:
    port, token = free_port(), secrets.token_urlsafe(12)
    cmd = [sys.executable, "-m", "mcp_apps_host", "serve", "--no-open", "--port", str(port), "--sandbox-port",
           str(free_port()), f"--token={token}", "--db", database, "--workers", str(workers), "--log-level", "warning",
           "--server", f"rec={shlex.join([sys.executable, str(FIXTURES), 'rec'])}"]
    log = workdir / "host.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                env=dict(os.environ, PYTHONUNBUFFERED="1"))
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            request = urllib.request.Request(f"{base}/api/health", headers={"Cookie": f"mah_session={token}"})
            with urllib.request.urlopen(request, timeout=2) as response:
                if json.load(response)["servers"].get("rec") == "ready":
                    return proc, token, port
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"the console did not start:\n{log.read_text()[-3000:]}")


def on_record(database: str, views: set[str]) -> list[tuple[str, int]]:
    """(view, id) of every tools/call a view sent, as the audit trail has them."""
    query = ("SELECT view, msg_id FROM audit_events WHERE direction='view->host' AND method='tools/call' "
             "AND decision='allowed'")
    if database.startswith("sqlite"):
        with sqlite3.connect(database.removeprefix("sqlite:///")) as db:
            rows = db.execute(query).fetchall()
    else:
        import psycopg

        with psycopg.connect(database.replace("postgresql+psycopg", "postgresql")) as db:
            rows = db.execute(query).fetchall()
    return [(v, int(i)) for v, i in rows if v in views]


def _round(proc: subprocess.Popen[bytes], port: int, token: str, args: argparse.Namespace,
           peak: list[int]) -> dict[str, Any]:
    """One round of load: the tabs open, run for ``args.seconds`` and close."""
    latencies: list[float] = []
    sent: list[tuple[str, int]] = []
    counts = [0, 0]  # page frames, duplicated replies

    async def sample_memory(until: float) -> None:
        while time.monotonic() < until + 2:
            peak[0] = max(peak[0], rss_kib(proc.pid))
            await asyncio.sleep(0.5)

    async def load() -> float:
        start = time.monotonic()
        until = start + args.seconds
        await asyncio.gather(sample_memory(until), *(
            run_tab(f"ws://127.0.0.1:{port}/ws", f"http://127.0.0.1:{port}", f"mah_session={token}", args.views,
                    until, latencies, sent, counts) for _ in range(args.tabs)))
        return time.monotonic() - start

    elapsed = asyncio.run(load())
    return {"elapsed": elapsed, "latencies": latencies, "sent": sent, "frames": counts[0], "duplicates": counts[1]}


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--tabs", type=int, default=12)
    parser.add_argument("--views", type=int, default=3, help="views per tab")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of one round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="mah-load-"))
    postgres = Postgres() if args.workers > 1 else None
    database = postgres.database() if postgres else f"sqlite:///{workdir}/load.db"
    proc, token, port = start_console(args.workers, database, workdir)
    try:
        before = settled_rss(proc.pid)
        peak = [before]
        rounds, after = [], []
        for n in range(args.rounds):
            rounds.append(_round(proc, port, token, args, peak))
            after.append(settled_rss(proc.pid))
            print(f"  round {n + 1}: {len(rounds[-1]['latencies'])} calls", file=sys.stderr, flush=True)
        sent = [s for r in rounds for s in r["sent"]]
        recorded = on_record(database, {view for view, _ in sent})
        rates = [len(r["latencies"]) / r["elapsed"] for r in rounds]
        frame_rates = [r["frames"] / r["elapsed"] for r in rounds]
        p50s = [statistics.median(r["latencies"]) * 1000 for r in rounds]
        p99s = [sorted(r["latencies"])[int(len(r["latencies"]) * 0.99) - 1] * 1000 for r in rounds]
        print(f"workers {args.workers} ({'PostgreSQL' if postgres else 'SQLite'}), {args.tabs} tabs x {args.views} "
              f"views, {args.rounds} rounds of {args.seconds:.0f} s (medians over the rounds)")
        print(f"  tool calls from views: {statistics.median(rates):.0f}/s, page messages "
              f"{statistics.median(frame_rates):.0f}/s (each call: request, audit x4, call on the server, reply); "
              f"{len(sent)} calls in all")
        print(f"  round trip: p50 {statistics.median(p50s):.1f} ms, p99 {statistics.median(p99s):.1f} ms")
        print(f"  host memory (all processes): before {before / 1024:.0f} MiB, peak {peak[0] / 1024:.0f} MiB")
        for n, kib in enumerate(after, start=1):
            print(f"    after round {n}: {kib / 1024:.0f} MiB = {kib / before:.3f} x before, "
                  f"{kib / after[0]:.3f} x after round 1")
        lost = set(sent) - set(recorded)
        duplicated = len(recorded) - len(set(recorded))
        replies = sum(r["duplicates"] for r in rounds)
        print(f"  audit trail: {len(set(recorded))} of {len(sent)} answered calls on record, "
              f"{len(lost)} lost, {duplicated} duplicated; {replies} duplicated replies")
        if lost or duplicated or replies:
            sys.exit(1)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        if postgres:
            postgres.stop()


if __name__ == "__main__":
    main()
