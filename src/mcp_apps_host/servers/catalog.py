"""What a server offers, read through the SDK: its tools, its resource list, its templates."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Any

import anyio
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from ..errors import TemplateError
from ..settings import Limits
from ..telemetry import spans
from ..values.protocol import RESOURCE_NOT_FOUND_CODES
from ..values.templates import Template
from ..values.tools import ToolEntry, tool_entry
from .templates import parse_template

log = logging.getLogger("mcp_apps_host.servers")

MAX_PAGES = 100  # a server that pages forever is cut off


def dump(model: Any) -> dict[str, Any]:
    """Serialise an SDK result as the server sent it (`_meta`, camelCase, nothing invented)."""
    return model.model_dump(by_alias=True, exclude_unset=True, mode="json")  # type: ignore[no-any-return]


async def list_tools(client: Client, server: str) -> dict[str, ToolEntry]:
    tools: dict[str, ToolEntry] = {}
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        listing = await client.list_tools(cursor=cursor)
        for tool in listing.tools:
            entry = tool_entry(server, dump(tool))
            for problem in entry.problems:
                log.warning("server %s, tool %s: %s", server, entry.name, problem)
            tools[entry.name] = entry
        cursor = listing.next_cursor
        if not cursor:
            break
    return tools


async def list_resource_entries(client: Client, server: str) -> dict[str, dict[str, Any]]:
    """`resources/list` by URI; empty when the server has none (the read's metadata is enough)."""
    entries: dict[str, dict[str, Any]] = {}
    try:
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            listing = await client.list_resources(cursor=cursor)
            for res in listing.resources:
                entries[str(res.uri)] = dump(res)
            cursor = listing.next_cursor
            if not cursor:
                break
    except Exception as exc:  # resources/list is optional; the read still works
        log.info("server %s: resources/list failed (%s); using read metadata only", server, exc)
    return entries


async def read_template(client: Client, server: str, uri: str, entry: dict[str, Any] | None, limits: Limits,
                        prepare: Callable[[Template], Template],
                        describe: Callable[[BaseException], str]) -> Template | TemplateError:
    """One template, read and checked; an error (returned, not raised) says what was wrong."""
    if not uri.startswith("ui://"):
        return TemplateError(f"template {uri} of server {server!r}: the URI must start with ui://")
    with spans.step("resources/read", **{spans.METHOD: "resources/read", spans.SERVER: server,
                                         spans.RESOURCE_URI: uri[:200]}) as span:
        read = await _read_template(client, server, uri, entry, limits, prepare, describe)
        spans.finish(span, "error" if isinstance(read, TemplateError) else "ok", end=False)
        return read


async def _read_template(client: Client, server: str, uri: str, entry: dict[str, Any] | None, limits: Limits,
                         prepare: Callable[[Template], Template],
                         describe: Callable[[BaseException], str]) -> Template | TemplateError:
    try:
        with anyio.fail_after(limits.template_read_timeout):
            result = await client.read_resource(uri)
        return prepare(parse_template(server, uri, dump(result), entry, limits.max_template_bytes))
    except TemplateError as exc:
        log.warning("%s", exc)
        return exc
    except Exception as exc:  # the template's error says what happened
        if isinstance(exc, MCPError) and exc.code in RESOURCE_NOT_FOUND_CODES and "not found" in exc.message.lower():
            # Both spellings of "not found": -32002 before 2026-07-28, -32602 from then on.
            reason = f"the server has no such resource (not found, error {exc.code})"
        else:
            reason = f"resources/read failed: {describe(exc)}"
        err = TemplateError(f"template {uri} of server {server!r}: {reason}")
        log.warning("%s", err)
        return err


async def read_templates(client: Client, server: str, uris: Iterable[str], limits: Limits,
                         prepare: Callable[[Template], Template],
                         describe: Callable[[BaseException], str]) -> dict[str, Template | TemplateError]:
    """Several templates at once, with the `resources/list` entries that may hold their `_meta.ui`."""
    wanted = sorted(set(uris))
    if not wanted:
        return {}
    entries = await list_resource_entries(client, server)
    read = await asyncio.gather(*(read_template(client, server, uri, entries.get(uri), limits, prepare, describe)
                                  for uri in wanted))
    return dict(zip(wanted, read, strict=True))
