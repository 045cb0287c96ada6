"""Whether a connected server still answers, in the words of the protocol it speaks.

Servers before 2026-07-28 are pinged. 2026-07-28 servers have no `ping` (a ping would be
refused, and a host that took that for a dead server would reconnect forever): they are
asked `server/discover` instead, which every such server answers at any time.
"""

from __future__ import annotations

import logging
import warnings
from typing import cast

import anyio
from mcp.client import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import LoggingLevel

from ..values.protocol import MODERN_MCP_VERSIONS

log = logging.getLogger("mcp_apps_host.servers")


def is_modern(client: Client) -> bool:
    """The server speaks 2026-07-28 or later (no initialize handshake, no ping, subscriptions/listen)."""
    return client.protocol_version in MODERN_MCP_VERSIONS


async def health_check(client: Client, timeout: float) -> None:
    """Return when the server answered; TimeoutError when it did not in ``timeout`` seconds; any
    other exception when the connection is broken."""
    with anyio.fail_after(timeout):
        if is_modern(client):
            await client.session.send_discover(client.protocol_version)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)  # deprecated for 2026-07-28 only
                await client.send_ping()


async def set_log_level(client: Client, level: str, server: str) -> None:
    """Servers before 2026-07-28 that log are told the level once; later ones get it with each request."""
    if is_modern(client) or client.server_capabilities.logging is None:
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client.set_logging_level(cast(LoggingLevel, level))
    except MCPError as exc:
        log.info("server %s: logging/setLevel failed: %s", server, exc.message)
