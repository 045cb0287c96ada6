"""Where a view's `tools/call` spends its time inside the host, without a browser.

One tab runs in this process on a socket the benchmark holds (the page's end of the WebSocket), against
a real MCP server over stdio and a real SQLite audit trail. A view that has done its handshake sends
`tools/call` of an app tool, one after the other; each call is timed from the moment its frame is handed
to the host to the moment the reply frame is written to the socket, and split into:

- server: the MCP SDK's call_tool, the server's own time and the transport (what a direct client pays);
- audit wait: the socket's writer waiting for the audit trail to commit before the reply may leave;
- host: everything else (frame parsing, the view session, policy, the call's card and record, tasks).

A direct Python MCP client calling the same tool of another copy of the same server, alternating in
blocks with the view's calls, is the baseline. Prints p50/p90/p99 of each part.

Run: PYTHONPATH=src .venv/bin/python bench/view_call_trace.py [--calls 2000] [--block 100]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.unit.tabdriver import Socket, app_for, open_tab, reply_to, view_handshake  # noqa: E402

SERVER = [sys.executable, str(ROOT / "tests" / "fixtures" / "failing.py"), "fine"]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Timed:
    """Time spent inside one awaited callable, per call, in milliseconds."""

    def __init__(self) -> None:
        self.spans: list[float] = []

    def wrap(self, fn: Any) -> Any:
        async def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                self.spans.append((time.perf_counter() - start) * 1000)
        return timed


class TracedSocket(Socket):
    """Stamps when each frame is handed to the host and when each frame leaves; a call's reply wakes its waiter
    (no polling: a loop kept busy would keep the audit writer's thread from the GIL and time that instead)."""

    def __init__(self) -> None:
        super().__init__(stamp=time.perf_counter)
        self.put_at: dict[int, float] = {}
        self.replied: dict[int, asyncio.Future[float]] = {}

    async def send_text(self, text: str) -> None:
        await super().send_text(text)
        frame, stamp = self.sent[-1]
        message = frame.get("message") if frame["type"] == "view-post" else None
        waiter = self.replied.get(message.get("id")) if isinstance(message, dict) else None
        if waiter is not None and not waiter.done() and ("result" in message or "error" in message):
            waiter.set_result(stamp)

    def put_call(self, view: str, request_id: int) -> asyncio.Future[float]:
        self.replied[request_id] = asyncio.get_running_loop().create_future()
        self.put_at[request_id] = time.perf_counter()
        self.put({"type": "view-message", "view": view, "message": {
            "jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": f"call {request_id}"}}}})
        return self.replied[request_id]


async def view_calls(socket: TracedSocket, view: str, first_id: int, count: int) -> list[float]:
    times = []
    for request_id in range(first_id, first_id + count):
        replied = await asyncio.wait_for(socket.put_call(view, request_id), 60)
        times.append((replied - socket.put_at[request_id]) * 1000)
        del socket.replied[request_id]
    return times


async def connection_calls(conn: Any, count: int) -> list[float]:
    times = []
    for i in range(count):
        start = time.perf_counter()
        await conn.call_tool("echo", {"text": f"call {i}"})
        times.append((time.perf_counter() - start) * 1000)
    return times


async def direct_calls(session: ClientSession, count: int) -> list[float]:
    times = []
    for i in range(count):
        start = time.perf_counter()
        await session.call_tool("echo", {"text": f"call {i}"})
        times.append((time.perf_counter() - start) * 1000)
    return times


async def main(calls: int, block: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        app = app_for({"fine": {"command": SERVER[0], "args": SERVER[1:], "apps": True}}, f"sqlite:///{tmp}/h.db")
        host = app.host
        assert host.audit is not None
        server_time, audit_wait = Timed(), Timed()
        host.audit.drain = audit_wait.wrap(host.audit.drain)  # type: ignore[method-assign]
        params = StdioServerParameters(command=SERVER[0], args=SERVER[1:])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as direct:
            await direct.initialize()
            socket = TracedSocket()
            async with open_tab(app, socket):
                conn = host.servers.get("fine")
                unwrapped = conn.call_tool
                conn.call_tool = server_time.wrap(conn.call_tool)  # type: ignore[method-assign]
                socket.put({"type": "call", "server": "fine", "tool": "fine-view", "arguments": {}})
                view = (await socket.until(lambda f: f["type"] in ("view-mount", "view-adopt")))["view"]
                view_handshake(socket, view)
                await socket.until(reply_to(view, 1))
                socket.put({"type": "view-message", "view": view,
                            "message": {"jsonrpc": "2.0", "method": "ui/notifications/initialized"}})
                await view_calls(socket, view, 1000, 50)  # warm-up
                await direct_calls(direct, 50)
                server_time.spans.clear()
                audit_wait.spans.clear()
                through_host: list[float] = []
                plain: list[float] = []
                alone: list[float] = []
                next_id = 10_000
                while len(through_host) < calls:
                    through_host += await view_calls(socket, view, next_id, block)
                    next_id += block
                    plain += await direct_calls(direct, block)
                    alone += await connection_calls(SimpleNamespace(call_tool=unwrapped), block)
    waits = audit_wait.spans[-len(through_host):]
    servers = server_time.spans[-len(through_host):]
    rows = [
        ("view → host → server → view (frame in to reply out)", through_host),
        ("  of which: the server call (SDK call_tool)", servers),
        ("  of which: the reply waiting for its audit commit", waits),
        ("  of which: the host's own work (the rest)",
         [t - s - w for t, s, w in zip(through_host, servers, waits, strict=False)]),
        ("the host's own connection → server, with no view", alone),
        ("direct Python MCP client → server", plain),
    ]
    print(f"{len(through_host)} view calls and {len(plain)} direct calls, alternating in blocks of {block}\n")
    print(f"{'path':58} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8}")
    for name, values in rows:
        print(f"{name:58} {statistics.median(values):8.2f} {pct(values, 0.9):8.2f} {pct(values, 0.99):8.2f}")
    added = [t - d for t, d in zip(sorted(through_host), sorted(plain), strict=False)]
    print(f"\nadded by the host (view p-quantile minus direct p-quantile): p50 {statistics.median(added):.2f} ms, "
          f"p99 {pct(through_host, 0.99) - pct(plain, 0.99):.2f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--block", type=int, default=100)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.block))
