"""Tool calls as the conversation shows them: a card per call, kept on record, cancellable.

A call comes from the person (`/call` or the tool picker), from a view, or from the
model (`turns.py`); all of them run through :meth:`Calls.run`, which draws the card,
writes the audit trail and the conversation item, and turns failures into messages.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from typing import Any

from mcp.shared.exceptions import MCPError

from ..errors import CallFailed, ServerUnavailable
from ..servers.connection import ProgressFn
from ..values import protocol as M
from ..values.content import error_result
from ..values.tools import ToolEntry
from ..views.jsonrpc import INTERNAL_ERROR
from . import frames as f
from .asking import TabAsks
from .audit import Auditor
from .core import Host
from .journal import ConversationLog
from .mounting import Mounting
from .page import Page
from .views import LiveView, Views


class CallCard:
    """The frames of one call's card."""

    def __init__(self, page: Page, call_id: int) -> None:
        self.page = page
        self.call_id = call_id

    def started(self, server: str | None, tool: str | None, arguments: dict[str, Any], source: str,
                app_tool_of: str | None = None) -> None:
        self.page.send(f.CallStarted(call_id=self.call_id, server=server, tool=tool, arguments=arguments,
                                     source=source, app_tool_of=app_tool_of))  # type: ignore[arg-type]

    def progress(self, value: float, total: float | None, message: str | None) -> None:
        self.page.send(f.CallProgress(call_id=self.call_id, progress=value, total=total, message=message))

    def finished(self, result: dict[str, Any], duration_ms: int) -> None:
        self.page.send(f.CallFinished(call_id=self.call_id, result=result, is_error=result.get("isError") is True,
                                      duration_ms=duration_ms))

    def failed(self, error: str, duration_ms: int = 0, cancelled: bool = False) -> None:
        self.page.send(f.CallFailed(call_id=self.call_id, error=error, duration_ms=duration_ms, cancelled=cancelled))

    def replay(self, record: dict[str, Any]) -> None:
        """A call kept on record, drawn again as it ended (a call still running then was interrupted)."""
        self.started(record.get("server"), record.get("tool"), record.get("arguments", {}),
                     record.get("source", "person"), record.get("appToolOf"))
        status, duration = record.get("status"), record.get("durationMs", 0)
        if status in ("ok", "tool-error"):
            self.page.send(f.CallFinished(call_id=self.call_id, result=record.get("result"),
                                          is_error=status == "tool-error", duration_ms=duration))
        elif status == "running":
            self.failed("interrupted: the host stopped before the call finished", duration, cancelled=True)
        else:
            self.failed(record.get("error") or str(status), duration, cancelled=status == "cancelled")


class Calls:
    def __init__(self, host: Host, page: Page, log: ConversationLog, audit: Auditor, views: Views,
                 mounting: Mounting, asks: TabAsks) -> None:
        self.host = host
        self.asks = asks
        self.page = page
        self.log = log
        self.audit = audit
        self.views = views
        self.mounting = mounting
        self.running: dict[int, asyncio.Task[None]] = {}  # the person's calls, cancellable from their card
        self._ids = itertools.count()

    def new_id(self) -> int:
        return next(self._ids)

    # ---- the person's calls --------------------------------------------------------------------

    def from_page(self, server: str, tool: str, arguments: Any) -> None:
        if not isinstance(arguments, dict):
            self.page.notice(f"/call {server} {tool}: the arguments must be a JSON object", "error")
            return
        try:
            conn = self.host.servers.get(server)
        except ServerUnavailable as exc:
            self.page.notice(str(exc), "error")
            return
        entry = conn.tools.get(tool)
        if entry is None and conn.status != "ready":  # say why its tools are unknown, not that it lacks one
            why = f": {conn.error}" if conn.error else ""
            self.page.notice(f"server {server!r} is not connected ({conn.status}{why})", "error")
            return
        if entry is None:
            known = ", ".join(t.name for t in conn.tools.values() if t.model_visible) or "none yet"
            self.page.notice(f"server {server!r} has no tool {tool!r} (tools: {known})", "error")
            return
        if not entry.model_visible:
            # Same rule as for a model: tools meant only for their app are not called from the chat.
            why = f"malformed _meta.ui: {'; '.join(entry.problems)}" if entry.problems else \
                f"visibility {sorted(entry.visibility)}"
            self.page.notice(f"tool {tool!r} of server {server!r} is only callable by its app ({why})", "error")
            return
        for problem in entry.problems:  # said where the call is, not only in the host's log
            self.page.notice(f"tool {tool!r} of server {server!r} has malformed _meta.ui: {problem}")
        call_id = self.new_id()
        self.running[call_id] = asyncio.create_task(self._person_call(call_id, entry, arguments))

    async def _person_call(self, call_id: int, entry: ToolEntry, arguments: dict[str, Any]) -> None:
        record: dict[str, Any] = {"server": entry.server, "tool": entry.name, "arguments": arguments,
                                  "source": "person", "definition": entry.definition, "status": "running"}
        if entry.resource_uri:
            # The call may end before its view is known: another tab draws the call only once it is.
            record["viewPending"] = True
        # The call and the view start together: the template is normally cached, and a view
        # held back for the person's review must not hold back the call.
        key = self.log.keep("tool-call", record)
        call = asyncio.create_task(self.run(call_id, entry.server, entry.name, arguments, "person",
                                            record=record, key=key))
        view: LiveView | None = None
        try:
            if entry.resource_uri:
                try:
                    view = await self.mounting.mount(call_id, entry, record)
                finally:
                    record.pop("viewPending", None)
                    self.log.rekeep(key, record)
                if view is not None:
                    self.views.apply(view, view.session.tool_input(arguments))
            try:
                result = await asyncio.shield(call)
            except CallFailed as exc:
                result = error_result(str(exc))
        except asyncio.CancelledError:
            call.cancel()
            await asyncio.gather(call, return_exceptions=True)
            if view is not None:
                self.views.apply(view, view.session.tool_cancelled("cancelled by the person"))
            raise
        finally:
            self.running.pop(call_id, None)
        if view is not None:
            self.views.apply(view, view.session.tool_result(result))

    def cancel(self, call_id: int) -> None:
        task = self.running.get(call_id)
        if task is not None:
            task.cancel()  # the SDK sends notifications/cancelled to the server

    def cancel_all(self) -> None:
        for task in list(self.running.values()):
            task.cancel()

    async def close(self) -> None:
        """Cancel the person's calls and wait until they have ended."""
        tasks = list(self.running.values())
        self.cancel_all()
        await asyncio.gather(*tasks, return_exceptions=True)

    # ---- any call ------------------------------------------------------------------------------------

    async def for_view(self, server: str, tool: str, arguments: dict[str, Any],
                       on_progress: ProgressFn) -> dict[str, Any]:
        record = {"server": server, "tool": tool, "arguments": arguments, "source": "view", "status": "running"}
        return await self.run(self.new_id(), server, tool, arguments, "view", on_progress, record)

    async def run(self, call_id: int, server: str, tool: str, arguments: dict[str, Any], source: str,
                  on_progress: ProgressFn | None = None, record: dict[str, Any] | None = None,
                  key: int | None = None, app_tool_of: LiveView | None = None) -> dict[str, Any]:
        """One tool call as the conversation shows it (started, progress, finished or failed), kept on record.

        With ``app_tool_of`` the tool is one that view offers of its own, and the view runs it; its messages
        are in the audit trail as the view's traffic. Returns the result; raises :class:`CallFailed` when
        there is none.
        """
        started = time.monotonic()
        card = CallCard(self.page, call_id)
        record = record if record is not None else {}
        if key is None:
            key = self.log.keep("tool-call", record)

        def finish(status: str, result: dict[str, Any] | None, error: str | None) -> None:
            duration = round((time.monotonic() - started) * 1000)
            if result is not None:
                card.finished(result, duration)
            else:
                card.failed(error or status, duration, cancelled=status == "cancelled")
            record.update(status=status, result=result, error=error, durationMs=duration)
            self.log.rekeep(key, record)

        shown_at = -math.inf

        async def relay(progress: float, total: float | None, message: str | None) -> None:
            nonlocal shown_at
            now = time.monotonic()
            if now - shown_at < self.host.limits.progress_interval and (total is None or progress < total):
                return  # a flood of progress: the latest is shown every progress_interval
            shown_at = now
            card.progress(progress, total, message)
            if on_progress is not None:
                await on_progress(progress, total, message)

        card.started(server, tool, arguments, source, app_tool_of.label if app_tool_of else None)
        to_server = app_tool_of is None
        if to_server:
            self.audit("host->server", M.TOOLS_CALL, server=server, msg_id=call_id, reason=f"called by the {source}",
                       payload={"name": tool, "arguments": arguments})
        try:
            if app_tool_of is not None:
                result = await self.views.call_app_tool(app_tool_of.handle, tool, arguments)
            else:
                with self.asks.calling(server):  # what the server asks meanwhile is asked in this tab
                    result = await self.host.servers.get(server).call_tool(tool, arguments, relay)
        except asyncio.CancelledError:
            finish("cancelled", None, None)
            if to_server:
                self.audit("host->server", M.CANCELLED, server=server, msg_id=call_id, reason="cancelled")
            raise
        except Exception as exc:  # every failure is shown where it happened
            error = _describe_call_error(server, tool, exc)
            finish("failed", None, error)
            if to_server:
                self.audit("server->host", M.TOOLS_CALL, server=server, msg_id=call_id, reason=error)
            raise CallFailed(error, exc.code if isinstance(exc, MCPError) else INTERNAL_ERROR) from exc
        finish("tool-error" if result.get("isError") is True else "ok", result, None)
        if to_server:
            self.audit("server->host", M.TOOLS_CALL, server=server, msg_id=call_id, payload=result)
        return result


def _describe_call_error(server: str, tool: str, exc: Exception) -> str:
    if isinstance(exc, MCPError):
        return f"{server}/{tool} failed: {exc.message} (error {exc.code})"
    if isinstance(exc, TimeoutError):
        return f"{server}/{tool} did not answer in time"
    if isinstance(exc, (ServerUnavailable, CallFailed)):
        return str(exc)
    return f"{server}/{tool} failed: {exc or type(exc).__name__}"
