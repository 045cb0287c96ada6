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

With ``--trace`` the view's round trips are split where they cross the page: the view's post to the
page's hearing it (view → sandbox proxy → page), the page's work until its WebSocket frame leaves, the
host (WebSocket frame out → frame back), and the way down (frame in → the view's hearing the answer).
The stamps are `performance.timeOrigin + performance.now()` in each document (one clock for the browser).
Each document's origin of time is its own reading of that clock, so a leg that starts in one document and
ends in another carries their difference: up and down split the way through the page unevenly (a view and
its proxy, in one process, showed 0.1 ms one way and 0.7 the other), while their sum is exact.

Run: PYTHONPATH=src .venv/bin/python bench/app_tool_overhead.py [--calls 1000] [--block 50]
     [--transport stdio|http|both] [--trace]
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
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from playwright.sync_api import Browser, Locator, Page, sync_playwright

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
  const stamps = {};
  for (let i = 0; i < count; i++) {
    const id = "bench-" + (start + i);
    const t0 = performance.now();
    stamps[id] = [performance.timeOrigin + t0];
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
    const t1 = performance.now();
    stamps[id].push(performance.timeOrigin + t1);
    times.push(t1 - t0);
  }
  return [times, stamps];
}"""

# In the page (before its own scripts): when a bench request reaches the page from the proxy, when its
# WebSocket frame leaves, and when the host's frame with its answer comes in.
PAGE_STAMPS = """(() => {
  const now = () => performance.timeOrigin + performance.now();
  const stamps = (window.__benchStamps = {});
  const benchId = (text) => { const m = /"id":"(bench-[-0-9]+)"/.exec(text); return m ? m[1] : null; };
  window.addEventListener("message", (e) => {
    const id = e.data && typeof e.data.id === "string" && e.data.id.startsWith("bench-") ? e.data.id : null;
    if (id && e.data.method) stamps[id] = { pageIn: now() };
  }, true);
  window.WebSocket = class extends window.WebSocket {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (e) => {
        const at = now();
        if (typeof e.data !== "string" || !e.data.includes("bench-")) return;
        const frame = JSON.parse(e.data);
        const id = frame.type === "view-post" && frame.message ? frame.message.id : null;
        if (id && stamps[id] && !stamps[id].wsIn) stamps[id].wsIn = at;
      });
    }
    send(data) {
      const id = typeof data === "string" ? benchId(data) : null;
      if (id && stamps[id] && !stamps[id].wsOut) stamps[id].wsOut = now();
      super.send(data);
    }
  };
})();"""

# The legs of a traced round trip, in order.
LEGS = ("up: view → proxy → page", "page: until its frame leaves", "host: frame out → frame in",
        "down: frame in → view")


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
    # With --trace: per path ("tools/call", "ping"), each leg's milliseconds (LEGS).
    legs: dict[str, dict[str, list[float]]] = field(default_factory=dict)

    def add_legs(self, path: str, view: dict[str, list[float]], page: dict[str, dict[str, float]]) -> None:
        legs = self.legs.setdefault(path, {leg: [] for leg in LEGS})
        for msg_id, (posted, heard) in view.items():
            at = page.get(msg_id, {})
            if not {"pageIn", "wsOut", "wsIn"} <= at.keys():
                continue
            points = [posted, at["pageIn"], at["wsOut"], at["wsIn"], heard]
            for leg, start, end in zip(LEGS, points, points[1:], strict=False):
                legs[leg].append(end - start)


def timed(app: Locator, page: Page, args: list[Any], times: Times, path: str, trace: bool) -> list[float]:
    """Run a block of the view's requests; with ``trace``, keep where each one's time went."""
    took, view_stamps = app.evaluate(VIEW_CALLS, args)
    if trace:
        times.add_legs(path, view_stamps, page.evaluate("window.__benchStamps"))
    return list(took)


def measure(browser: Browser, tmp: Path, transport: str, calls: int, block: int, trace: bool = False) -> Times:
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
        if trace:
            context.add_init_script(PAGE_STAMPS)
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
                times.via_host += timed(app, page, [*call, n, done], times, "tools/call", trace)
                times.direct += client.calls(n)
                times.bridge += timed(app, page, [*ping, n, calls + done], times, "ping", trace)
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
    parser.add_argument("--trace", action="store_true", help="split the view's round trips where they cross the page")
    opts = parser.parse_args()
    transports = ["stdio", "http"] if opts.transport == "both" else [opts.transport]
    results: dict[str, Times] = {}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for transport in transports:
                workdir = Path(tmp) / transport
                workdir.mkdir()
                results[transport] = measure(browser, workdir, transport, opts.calls, opts.block, opts.trace)
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
        for path, legs in t.legs.items():
            print(f"\n{transport} {path}, where the round trip goes")
            print(f"{'leg':<40} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8}")
            for leg, values in legs.items():
                print(f"{leg:<40} " + " ".join(f"{percentile(values, p):8.2f}" for p in (50, 90, 99)))
    print("\ntarget: ≤ 3 ms added at p50 and ≤ 9 ms at p99 on loopback (\"added\": the difference of the percentiles)")


if __name__ == "__main__":
    main()
