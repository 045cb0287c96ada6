"""Shared plumbing for the demo MCP App servers: the view template, results, running."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent

HERE = Path(__file__).parent
BRIDGE_MARKER = "<!-- app-bridge -->"
BASE_MARKER = "<!-- app-base -->"


def load_view(filename: str) -> str:
    """Read a view template and inline app_bridge.js (and app_base.css where marked), so the host
    gets one self-contained document."""
    html = (HERE / filename).read_text(encoding="utf-8")
    bridge = (HERE / "app_bridge.js").read_text(encoding="utf-8")
    if BRIDGE_MARKER not in html:
        raise ValueError(f"{filename} has no {BRIDGE_MARKER} marker")
    # "</script" inside the script body would end the element early.
    if "</script" in bridge.lower():
        raise ValueError("app_bridge.js must not contain '</script'")
    base = (HERE / "app_base.css").read_text(encoding="utf-8")
    html = html.replace(BASE_MARKER, f"<style>\n{base}</style>", 1)
    return html.replace(BRIDGE_MARKER, f"<script>\n{bridge}</script>", 1)


def result(text: str, structured: dict[str, Any] | None = None, *, error: bool = False,
           meta: dict[str, Any] | None = None) -> CallToolResult:
    """A tool result with model-facing text, view-facing structured content and, when given, `_meta`."""
    extra: dict[str, Any] = {} if meta is None else {"meta": meta}  # left unset, no `_meta` is sent at all
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=error,
        **extra,
    )


def parse_args(argv: Sequence[str] | None = None, prog: str | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=prog, description="Run a demo MCP App server (stdio by default).")
    parser.add_argument(
        "--http",
        metavar="PORT",
        type=int,
        help="serve Streamable HTTP on http://127.0.0.1:PORT/mcp instead of stdio",
    )
    return parser.parse_args(argv)


def run(server: MCPServer, argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv, prog=f"python -m mcp_apps_host.demo.{server.name}")
    if args.http is None:
        server.run("stdio")
    else:
        # Loopback only: the demos have no authentication.
        server.run("streamable-http", host="127.0.0.1", port=args.http, streamable_http_path="/mcp")
