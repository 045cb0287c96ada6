"""One MCP server: connect with the official SDK, keep its catalog and templates, reconnect.

A server that fails to start, crashes or hangs is reported (status + error) and
retried with backoff; nothing it does can raise out of `run()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import tempfile
import warnings
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import Any

import anyio
import mcp_types as types
from mcp.client import Client, advertise
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from .. import APP_MIME_TYPE, EXTENSION_ID, __version__
from ..policy.trust import review_html
from ..settings import Limits
from .catalog import ToolEntry, tool_entry
from .config import ServerSpec
from .templates import Template, TemplateError, parse_template

log = logging.getLogger("mcp_apps_host.servers")

ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]
# How often a ready server is pinged: a crashed or wedged server is noticed within this.
HEALTH_INTERVAL = 10.0
MISSED_PINGS = 3


class ServerStatus(StrEnum):
    CONNECTING = "connecting"
    READY = "ready"
    ERROR = "error"
    RETRYING = "retrying"
    STOPPED = "stopped"


class ServerUnavailable(RuntimeError):
    """A request was made to a server that is not connected right now."""


def dump(model: Any) -> dict[str, Any]:
    """Serialise an SDK result as the server sent it (`_meta`, camelCase, nothing invented)."""
    return model.model_dump(by_alias=True, exclude_unset=True, mode="json")  # type: ignore[no-any-return]


class ServerConnection:
    def __init__(self, spec: ServerSpec, limits: Limits, on_change: Callable[[ServerConnection], None]) -> None:
        self.spec = spec
        self.limits = limits
        self._on_change = on_change
        self.status = ServerStatus.CONNECTING
        self.error: str | None = None
        self.tools: dict[str, ToolEntry] = {}
        self.templates: dict[str, Template | TemplateError] = {}
        self._client: Client | None = None
        self._wake = asyncio.Event()
        self._refresh_tools = False
        self._refresh_templates: set[str] | None = None  # None: nothing; empty: all
        self._failure: str | None = None
        self._stderr: Any = None

    @property
    def name(self) -> str:
        return self.spec.name

    # ---- lifecycle -------------------------------------------------------------------

    async def run(self) -> None:
        delay = self.limits.reconnect_initial_delay
        while True:
            self._set(ServerStatus.CONNECTING if self.status != ServerStatus.RETRYING else ServerStatus.RETRYING)
            try:
                await self._connected_session()
                delay = self.limits.reconnect_initial_delay  # it was up: start backoff afresh
            except asyncio.CancelledError:
                self._client = None
                self._set(ServerStatus.STOPPED)
                raise
            except BaseException as exc:  # noqa: BLE001 - a server must never take the host down
                self._client = None
                self.error = self._describe_failure(exc)
                log.warning("server %s: %s (retrying in %.0fs)", self.name, self.error, delay)
                self._set(ServerStatus.ERROR)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.limits.reconnect_max_delay)
                self.status = ServerStatus.RETRYING
                continue
            self._client = None
            self.error = self._failure or "the connection ended"
            log.warning("server %s: %s (reconnecting)", self.name, self.error)
            self._set(ServerStatus.ERROR)
            await asyncio.sleep(delay)
            self.status = ServerStatus.RETRYING

    async def _connected_session(self) -> None:
        self._failure = None
        client = Client(
            self._transport(),
            mode="legacy",  # the initialize handshake every deployed server speaks
            extensions=[advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})],
            client_info=types.Implementation(name="mcp-apps-host", version=__version__),
            message_handler=self._on_message,
            logging_callback=self._on_log,
            cache=None,
        )
        # One scope around the whole connection (cancel scopes must nest with the SDK's task
        # groups); its deadline covers start-up only and is lifted once the server is ready.
        with anyio.CancelScope() as scope:
            scope.deadline = anyio.current_time() + self.limits.server_connect_timeout + self.limits.template_read_timeout
            try:
                async with client:
                    self._client = client
                    await self._load_catalog(client)
                    await self._load_templates(client, None)
                    scope.deadline = float("inf")
                    self.error = None
                    self._set(ServerStatus.READY)
                    await self._serve(client)
            finally:
                self._client = None
        if scope.cancelled_caught:
            raise TimeoutError("did not finish connecting in time")

    async def _serve(self, client: Client) -> None:
        """Wait for notifications and health checks until the connection fails."""
        missed = 0
        while self._failure is None:
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), HEALTH_INTERVAL)
            if self._failure is not None:
                return
            if self._refresh_tools:
                self._refresh_tools = False
                await self._load_catalog(client)
                self._set(self.status)
            if self._refresh_templates is not None:
                uris, self._refresh_templates = self._refresh_templates, None
                await self._load_templates(client, uris or None)
                self._set(self.status)
            if not self._wake.is_set():
                try:
                    with anyio.fail_after(HEALTH_INTERVAL), warnings.catch_warnings():
                        # Deprecated only for 2026-07-28 connections; ours use the initialize handshake.
                        warnings.simplefilter("ignore", MCPDeprecationWarning)
                        await client.send_ping()
                    missed = 0
                except TimeoutError:
                    # A server busy with a long synchronous tool may miss a ping or two: restarting it
                    # would kill that call, so only a server silent for a while is given up on.
                    missed += 1
                    if missed >= MISSED_PINGS:
                        self._failure = f"has not answered {missed} pings in a row"
                except Exception as exc:  # noqa: BLE001 - a broken connection
                    self._failure = f"does not answer ping: {self._describe_failure(exc)}"

    def _transport(self) -> Any:
        spec = self.spec
        if spec.url:
            http = create_mcp_http_client(headers=spec.headers or None)
            # Templates can be several MB and arrive as one SSE event.
            return streamable_http_client(
                spec.url, http_client=http, max_sse_event_size=self.limits.max_template_bytes * 2
            )
        # Keep the server's stderr so a failure can say what the server said (one file per start).
        if self._stderr is not None:
            self._stderr.close()
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        params = StdioServerParameters(
            command=spec.command or "",
            args=list(spec.args),
            env={**os.environ, **spec.env} if spec.env else None,
            cwd=spec.cwd,
        )
        return stdio_client(params, errlog=self._stderr)

    def stderr_tail(self, lines: int = 8) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0)
            text = self._stderr.read()
        except (OSError, ValueError):
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])

    def _describe_failure(self, exc: BaseException) -> str:
        if isinstance(exc, TimeoutError):
            text = "did not answer in time"
        elif isinstance(exc, FileNotFoundError):
            text = f"cannot start {self.spec.command!r}: command not found"
        elif isinstance(exc, MCPError):
            text = f"error {exc.code}: {exc.message}"
        elif isinstance(exc, BaseExceptionGroup):
            return "; ".join(self._describe_failure(e) for e in exc.exceptions[:3])
        else:
            text = str(exc) or type(exc).__name__
        tail = self.stderr_tail()
        return f"{text}\n{tail}" if tail and tail not in text else text

    def _set(self, status: ServerStatus) -> None:
        self.status = status
        try:
            self._on_change(self)
        except Exception:  # noqa: BLE001 - a listener's bug must not stop the connection
            log.exception("server %s: change listener failed", self.name)

    # ---- catalog and templates -------------------------------------------------------

    async def _load_catalog(self, client: Client) -> None:
        tools: dict[str, ToolEntry] = {}
        cursor: str | None = None
        for _ in range(100):  # a server that pages forever is cut off
            listing = await client.list_tools(cursor=cursor)
            for tool in listing.tools:
                entry = tool_entry(self.name, dump(tool))
                for problem in entry.problems:
                    log.warning("server %s, tool %s: %s", self.name, entry.name, problem)
                tools[entry.name] = entry
            cursor = listing.next_cursor
            if not cursor:
                break
        self.tools = tools

    async def _list_resource_entries(self, client: Client) -> dict[str, dict[str, Any]]:
        entries: dict[str, dict[str, Any]] = {}
        try:
            cursor: str | None = None
            for _ in range(100):
                listing = await client.list_resources(cursor=cursor)
                for res in listing.resources:
                    entries[str(res.uri)] = dump(res)
                cursor = listing.next_cursor
                if not cursor:
                    break
        except Exception as exc:  # noqa: BLE001 - resources/list is optional; the read still works
            log.info("server %s: resources/list failed (%s); using read metadata only", self.name, exc)
        return entries

    async def _load_templates(self, client: Client, only: set[str] | None) -> None:
        uris = {t.resource_uri for t in self.tools.values() if t.resource_uri}
        if only is not None:
            uris &= only
        if not uris:
            return
        entries = await self._list_resource_entries(client)

        async def load(uri: str) -> None:
            self.templates[uri] = await self._read_template(client, uri, entries.get(uri))

        await asyncio.gather(*(load(uri) for uri in sorted(uris)))

    async def _read_template(self, client: Client, uri: str, entry: dict[str, Any] | None) -> Template | TemplateError:
        if not uri.startswith("ui://"):
            return TemplateError(f"template {uri} of server {self.name!r}: the URI must start with ui://")
        try:
            with anyio.fail_after(self.limits.template_read_timeout):
                result = await client.read_resource(uri)
            template = parse_template(self.name, uri, dump(result), entry, self.limits.max_template_bytes)
            return dataclasses.replace(template, warnings=tuple(review_html(template.html, template.csp)))
        except TemplateError as exc:
            log.warning("%s", exc)
            return exc
        except Exception as exc:  # noqa: BLE001
            err = TemplateError(f"template {uri} of server {self.name!r}: resources/read failed: {self._describe_failure(exc)}")
            log.warning("%s", err)
            return err

    async def template(self, uri: str) -> Template:
        """The cached template, read now if the prefetch has not got it (or failed before)."""
        cached = self.templates.get(uri)
        if isinstance(cached, Template):
            return cached
        client = self._require_client()
        entries = await self._list_resource_entries(client)
        fresh = await self._read_template(client, uri, entries.get(uri))
        self.templates[uri] = fresh
        if isinstance(fresh, TemplateError):
            raise fresh
        return fresh

    # ---- requests ----------------------------------------------------------------------

    def _require_client(self) -> Client:
        if self._client is None or self.status != ServerStatus.READY:
            detail = f": {self.error}" if self.error else ""
            raise ServerUnavailable(f"server {self.name!r} is not connected ({self.status}{detail})")
        return self._client

    async def call_tool(self, name: str, arguments: dict[str, Any], progress: ProgressFn | None = None) -> dict[str, Any]:
        client = self._require_client()
        try:
            result = await client.call_tool(
                name, arguments, read_timeout_seconds=self.limits.tool_call_timeout, progress_callback=progress
            )
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
            self._fail(f"the connection broke during tools/call {name}")
            raise ServerUnavailable(f"server {self.name!r} went away during tools/call {name}") from exc
        return dump(result)

    async def read_resource(self, uri: str) -> dict[str, Any]:
        client = self._require_client()
        return dump(await client.read_resource(uri))

    def _fail(self, reason: str) -> None:
        self._failure = reason
        self._wake.set()

    # ---- notifications from the server ----------------------------------------------

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            self._fail(f"transport error: {self._describe_failure(message)}")
            return
        root = getattr(message, "root", message)
        if isinstance(root, types.ToolListChangedNotification):
            self._refresh_tools = True
            self._refresh_templates = set()
        elif isinstance(root, types.ResourceListChangedNotification):
            self._refresh_templates = set()
        elif isinstance(root, types.ResourceUpdatedNotification):
            uri = str(root.params.uri)
            if self._refresh_templates is None:
                self._refresh_templates = {uri}
            elif self._refresh_templates:
                self._refresh_templates.add(uri)
        else:
            return
        self._wake.set()

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        log.info("server %s [%s] %s", self.name, params.level, params.data)
