"""What speaking both MCP generations costs at connect time: the host's `mode="auto"` (probe
`server/discover`, else the initialize handshake) against the handshake alone, per server.

For each server it times, over N runs, starting the connection until the server's tools are
listed (process start included for stdio), and prints the medians side by side with the
protocol version the server spoke.

Run: .venv/bin/python bench/connect_modes.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "servers.py"
PEERS = ROOT / "tests" / "peers" / "node_modules" / ".bin"

SERVERS = {
    "npm server-basic-vanillajs (handshake only)": [str(PEERS / "mcp-server-basic-vanillajs"), "--stdio"],
    "npm server-debug (handshake only)": [str(PEERS / "mcp-server-debug"), "--stdio"],
    "fixture legacy (handshake only)": [sys.executable, str(FIXTURES), "legacy"],
    "fixture dual (both)": [sys.executable, str(FIXTURES), "dual"],
    "fixture modern (2026-07-28 only)": [sys.executable, str(FIXTURES), "modern"],
}


async def connect_once(argv: list[str], mode: str) -> tuple[float, str]:
    started = time.perf_counter()
    transport = stdio_client(StdioServerParameters(command=argv[0], args=argv[1:]))
    async with Client(transport, mode=mode, cache=None) as client:
        await client.list_tools()
        return time.perf_counter() - started, client.protocol_version


async def measure(argv: list[str], mode: str, runs: int) -> tuple[float | None, str]:
    times, version = [], "-"
    for _ in range(runs):
        try:
            elapsed, version = await connect_once(argv, mode)
        except Exception as exc:  # the handshake alone cannot reach a 2026-07-28-only server
            while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
                exc = exc.exceptions[0]
            return None, f"fails: {str(exc).splitlines()[0][:70]}"
        times.append(elapsed)
    return statistics.median(times), version


async def main(runs: int) -> None:
    print(f"median of {runs} connects (start to tools listed), seconds")
    print(f"{'server':46} {'handshake only':>16} {'auto':>8}  spoken (auto)")
    for name, argv in SERVERS.items():
        legacy, legacy_version = await measure(argv, "legacy", runs)
        auto, version = await measure(argv, "auto", runs)
        shown = f"{legacy:16.2f}" if legacy is not None else f"{'n/a':>16}"
        print(f"{name:46} {shown} {auto:8.2f}  {version}" if auto is not None else f"{name:46} {shown} {'n/a':>8}")
        if legacy is None:
            print(f"{'':46}   handshake only {legacy_version}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    anyio.run(main, parser.parse_args().runs)
