"""App tool call overhead: a view calling a tool of its own server through the host, against a Python
MCP client calling the same tool of the same server directly, both over stdio.

The view's calls are timed inside the view (performance.now around a `tools/call` posted to its
parent and its answer); the direct calls in Python (perf_counter around `call_tool`). Blocks of
calls alternate between the two; medians and p99 over all calls, and the milliseconds the host adds.
A third path, a `ping` from the same view, is the bridge alone: view → sandbox proxy → page →
WebSocket → host and back, with no server and no tool call behind it.

Run: PYTHONPATH=src .venv/bin/python bench/app_tool_overhead.py [--calls 1000] [--block 50]
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
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import stdio_client
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "browser"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import CHROMIUM, CHROMIUM_ARGS, HostLauncher, peer_stdio_command, view_frame, wait_servers, wait_view  # noqa: E402
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
    """A Python MCP client on a thread of its own (the sync Playwright API owns the main one)."""

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
        async with stdio_client(stdio_params(command)) as (read, write), ClientSession(read, write) as session:
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


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000, help="calls on each side")
    parser.add_argument("--block", type=int, default=50, help="calls per block; blocks alternate")
    opts = parser.parse_args()
    command = peer_stdio_command(BIN)
    via_host: list[float] = []
    direct: list[float] = []
    bridge: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        # The view's calls are allowed by a rule, so no consent question stands between them.
        config = Path(tmp) / "host.json"
        config.write_text(json.dumps({"consent": {SERVER: {TOOL: "allow"}}}))
        launcher = HostLauncher(Path(tmp))
        client = DirectClient(command)
        try:
            host = launcher({SERVER: command}, config=config)
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 900})
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
                while done < opts.calls:
                    n = min(opts.block, opts.calls - done)
                    via_host += app.evaluate(VIEW_CALLS, [*call, n, done])
                    direct += client.calls(n)
                    bridge += app.evaluate(VIEW_CALLS, [*ping, n, opts.calls + done])
                    done += n
                browser.close()
        finally:
            client.close()
            launcher.close()

    host_p50, direct_p50 = statistics.median(via_host), statistics.median(direct)
    host_p99, direct_p99 = p99(via_host), p99(direct)
    print(f"\napp tool call overhead: {SERVER} {TOOL} over stdio, {opts.calls} calls each, alternating blocks of "
          f"{opts.block}\n")
    print(f"{'path':<40} {'p50 ms':>8} {'p99 ms':>8}")
    print(f"{'view → host → server':<40} {host_p50:8.2f} {host_p99:8.2f}")
    print(f"{'Python MCP client → server (direct)':<40} {direct_p50:8.2f} {direct_p99:8.2f}")
    print(f"{'added by the host':<40} {host_p50 - direct_p50:8.2f} {host_p99 - direct_p99:8.2f}")
    print(f"{'the bridge alone: view ping → host':<40} {statistics.median(bridge):8.2f} {p99(bridge):8.2f}")
    print("\ntarget: ≤ 1 ms added at p50 on loopback")


if __name__ == "__main__":
    main()
