"""What the benchmarks need to know about an npm peer, asked of it directly with the Python MCP
client: a tool's view template (`_meta.ui.resourceUri` read as a resource) and one result of it."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


@dataclass(frozen=True)
class PeerTool:
    html: str
    arguments: dict[str, Any]
    result: dict[str, Any]


def stdio_params(command: str) -> StdioServerParameters:
    argv = shlex.split(command)
    return StdioServerParameters(command=argv[0], args=argv[1:])


def resource_uri(tool: Any) -> str:
    meta = tool.meta or {}
    ui = meta.get("ui") if isinstance(meta.get("ui"), dict) else {}
    uri = ui.get("resourceUri") or meta.get("ui/resourceUri")
    if not isinstance(uri, str):
        raise SystemExit(f"tool {tool.name!r} declares no view (_meta.ui.resourceUri)")
    return uri


async def peer_tool(command: str, tool_name: str, arguments: dict[str, Any]) -> PeerTool:
    """The peer's template and one result of ``tool_name``: over stdio for a command, over Streamable HTTP for an
    http:// URL (which also warms that server process up)."""
    http = command.startswith("http://")
    transport = streamable_http_client(command) if http else stdio_client(stdio_params(command))
    async with transport as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        if tool_name not in tools:
            raise SystemExit(f"the peer has no tool {tool_name!r}: {sorted(tools)}")
        contents = (await session.read_resource(resource_uri(tools[tool_name]))).contents  # type: ignore[arg-type]
        html = next((c.text for c in contents if hasattr(c, "text")), None)
        if html is None:
            raise SystemExit(f"the view of {tool_name!r} has no text content")
        result = await session.call_tool(tool_name, arguments)
        return PeerTool(html=html, arguments=arguments,
                        result=result.model_dump(mode="json", by_alias=True, exclude_none=True))
