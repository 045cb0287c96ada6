"""App tool call overhead: a view calling a tool of its own server through the host, against a Python
MCP client calling the same tool of the same server directly, over stdio and over Streamable HTTP.

The view's calls are timed inside the view (performance.now around a `tools/call` posted to its
parent and its answer); the direct calls in Python (perf_counter around `call_tool`). Blocks of
calls alternate between the two; p50, p90 and p99 over all calls, and the milliseconds the host adds.
A third path, a `ping` from the same view, is the bridge alone: view → sandbox proxy → page →
WebSocket → host and back, with no server and no tool call behind it.

Over stdio the host and the direct client each start the server (two processes, as a person's
host and a script would). Over HTTP one server process listens on a loopback port and both the host
(`--server NAME=http://127.0.0.1:PORT/mcp`) and the direct client (the SDK's Streamable HTTP client)
call that same process. Each transport gets its own host and page, one after the other.

Run: PYTHONPATH=src .venv/bin/python bench/app_tool_overhead.py [--calls 1000] [--block 50]
     [--transport stdio|http|both]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from playwright.sync_api import Browser, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "browser"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    HostLauncher,
    PeerLauncher,
    peer_stdio_command,
    view_frame,
    wait_servers,
    wait_view,
)
from peerdata import stdio_params  # noqa: E402

SERVER, BIN, TOOL = "vanilla", "mcp-server-basic-vanillajs", "get-time"

# In the view: `count` requests one after the other, each timed from post to answer.
VIEW_CALLS = """async (_body, [method, params, count, start]) => {
  const times = [];
  for (let i = 0; i < count; i++) {
    const id = "bench-" + (start + i);
    const t0 = performance.now();
    await new Promise((resolve, reject) => {
      const on = (e) => {
        if (!e.data || e.data.id !== id) return;
        window.removeEventListener("message", on);
        if (e.data.error) reject(new Error(JSON.stringify(e.data.error)));
        else resolve(e.data.result);
      };
      window.addEventListener("message", on);
      const call = { jsonrpc: "2.0", id, method, params };
      window.parent.postMessage(call, "*");
    });
    times.push(performance.now() - t0);
  }
  return times;
}"""


class DirectClient:
    """A Python MCP client on a thread of its own (the sync Playwright API owns the main one): over stdio
    for a command line, over Streamable HTTP for an http:// URL."""

    def __init__(self, command: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.stop: asyncio.Event | None = None
        self.session: ClientSession | None = None
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._run(command),), daemon=True)
        self.thread.start()
        if not self.ready.wait(30):
            raise SystemExit("the direct MCP client did not connect")

    async def _run(self, command: str) -> None:
        self.stop = asyncio.Event()
        transport = (streamable_http_client(command) if command.startswith("http://")
                     else stdio_client(stdio_params(command)))
        async with transport as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            self.session = session
            self.ready.set()
            await self.stop.wait()

    async def _calls(self, count: int) -> list[float]:
        assert self.session is not None
        times = []
        for _ in range(count):
            t0 = time.perf_counter()
            await self.session.call_tool(TOOL, {})
            times.append((time.perf_counter() - t0) * 1000)
        return times

    def calls(self, count: int) -> list[float]:
        return asyncio.run_coroutine_threadsafe(self._calls(count), self.loop).result(timeout=300)

    def close(self) -> None:
        if self.stop is not None:
            self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(timeout=10)


def percentile(values: list[float], p: int) -> float:
    return statistics.quantiles(values, n=100)[p - 1]


@dataclass
class Times:
    via_host: list[float] = field(default_factory=list)
    direct: list[float] = field(default_factory=list)
    bridge: list[float] = field(default_factory=list)


def measure(browser: Browser, tmp: Path, transport: str, calls: int, block: int) -> Times:
    """One host and one page, its view's calls alternating in blocks with the direct client's."""
    times = Times()
    # The view's calls are allowed by a rule, so no consent question stands between them.
    config = tmp / "host.json"
    config.write_text(json.dumps({"consent": {SERVER: {TOOL: "allow"}}}))
    launcher = HostLauncher(tmp)
    peers = PeerLauncher(tmp)
    client: DirectClient | None = None
    try:
        # Over HTTP, one server process: the host and the direct client both call it.
        spec = peers(BIN) if transport == "http" else peer_stdio_command(BIN)
        client = DirectClient(spec)
        host = launcher({SERVER: spec}, config=config)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        try:
            page = context.new_page()
            page.goto(host.url)
            wait_servers(page, host, [SERVER])
            box = page.locator("[data-testid=chat-input]")
            box.fill(f"/call {SERVER} {TOOL} {{}}")
            box.press("Enter")
            view = wait_view(page, SERVER, TOOL, "ready", timeout=60_000)
            app = view_frame(view).locator("body")
            # Warm both paths up before timing.
            call = ["tools/call", {"name": TOOL, "arguments": {}}]
            ping = ["ping", {}]
            app.evaluate(VIEW_CALLS, [*call, 20, -40])
            app.evaluate(VIEW_CALLS, [*ping, 20, -20])
            client.calls(20)
            done = 0
            while done < calls:
                n = min(block, calls - done)
                times.via_host += app.evaluate(VIEW_CALLS, [*call, n, done])
                times.direct += client.calls(n)
                times.bridge += app.evaluate(VIEW_CALLS, [*ping, n, calls + done])
                done += n
        finally:
            context.close()
    finally:
        if client is not None:
            client.close()
        launcher.close()
        peers.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000, help="calls on each side")
    parser.add_argument("--block", type=int, default=50, help="calls per block; blocks alternate")
    parser.add_argument("--transport", choices=["stdio", "http", "both"], default="both",
                        help="how the host and the direct client reach the server (default: both, stdio first)")
    opts = parser.parse_args()
    transports = ["stdio", "http"] if opts.transport == "both" else [opts.transport]
    results: dict[str, Times] = {}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for transport in transports:
                workdir = Path(tmp) / transport
                workdir.mkdir()
                results[transport] = measure(browser, workdir, transport, opts.calls, opts.block)
        finally:
            browser.close()

    print(f"\napp tool call overhead: {SERVER} {TOOL}, {opts.calls} calls each, alternating blocks of {opts.block}")
    for transport, t in results.items():
        host = [percentile(t.via_host, p) for p in (50, 90, 99)]
        direct = [percentile(t.direct, p) for p in (50, 90, 99)]
        bridge = [percentile(t.bridge, p) for p in (50, 90, 99)]
        added = [h - d for h, d in zip(host, direct, strict=True)]
        print(f"\n{transport}\n{'path':<40} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8}")
        for label, row in (("view → host → server", host),
                           ("Python MCP client → server (direct)", direct),
                           ("added by the host", added),
                           ("the bridge alone: view ping → host", bridge)):
            print(f"{label:<40} " + " ".join(f"{v:8.2f}" for v in row))
    print("\ntarget: ≤ 1 ms added at p50 on loopback (\"added\": the difference of the two percentiles)")


if __name__ == "__main__":
    main()
