"""Every tool call as the conversation shows it: a card, a record kept in the conversation, the audit trail.

A call comes from the person (`/call` or the tool picker), from a view, or from the
model (`turns.py`); each runs through :meth:`CallRunner.run`, which draws the card,
writes the audit trail and the conversation item, and turns failures into messages.
A view's own calls come in as the view's `ToolRunner` (:meth:`CallRunner.for_view`).
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from typing import Any, Final
from urllib.parse import urlsplit

from mcp.shared.exceptions import MCPError, UrlElicitationRequiredError
from mcp_types import REQUEST_TIMEOUT, URL_ELICITATION_REQUIRED

from ...errors import CallFailed, ServerUnavailable
from ...policy.tools import tool_refusal
from ...servers.connection import ProgressFn
from ...servers.oauth import PersonNeeded
from ...telemetry import metrics, spans
from ...values import protocol as M
from ...values.calls import ENDED_WITH_RESULT, CallRecord, CallSource, CallStatus
from ...values.decisions import Direction
from ...values.tools import ToolEntry
from ...views.jsonrpc import INTERNAL_ERROR, REFUSED
from ..process.core import Host
from ..process.lifecycle import Stopping, stopped_error
from . import frames as f
from .asking import TabAsks
from .audit import Auditor
from .driver import ViewDriver
from .journal import ConversationLog
from .page import Page

# A view's own call is drawn, and kept in the conversation, this long after it started; one that ended sooner is
# drawn then too, start and end together, and kept once, as it ended. Most end sooner (a page of results, a poll),
# and a card drawn while the server works, or as the answer arrives, takes the page's time and the machine's (two
# cores shared by the browser, the host and the server) from the answer and from the view's next message.
VIEW_CARD_AFTER_S: Final = 0.1


class CallCard:
    """The frames of one call's card.

    A card can be put off (``started(..., after=seconds)``): then it is drawn that long after the call
    started, as it stands by then (running, or ended), and not while the server works or the answer arrives.
    """

    def __init__(self, page: Page, call_id: int) -> None:
        self.page = page
        self.call_id = call_id
        self._start: f.CallStarted | None = None  # put off, not sent yet
        self._end: f.CallFinished | f.CallFailed | None = None  # came while the start was put off
        self._timer: asyncio.TimerHandle | None = None

    def started(self, server: str | None, tool: str | None, arguments: dict[str, Any], source: str,
                app_tool_of: str | None = None, *, after: float = 0.0) -> None:
        frame = f.CallStarted(call_id=self.call_id, server=server, tool=tool, arguments=arguments,
                              source=source, app_tool_of=app_tool_of)  # type: ignore[arg-type]
        if after <= 0:
            self.page.send(frame)
            return
        self._start = frame
        self._timer = asyncio.get_running_loop().call_later(after, self._show)

    def _show(self) -> None:
        """The card, now, if it was put off; with its end, if the call has ended."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._start is not None:
            frame, self._start = self._start, None
            self.page.send(frame)
        if self._end is not None:
            end, self._end = self._end, None
            self.page.send(end)

    def _ended(self, frame: f.CallFinished | f.CallFailed) -> None:
        if self._start is not None:  # drawn with its start, when that is due
            self._end = frame
        else:
            self.page.send(frame)

    def progress(self, value: float, total: float | None, message: str | None) -> None:
        self._show()  # progress: the person may want to see it, or cancel
        self.page.send(f.CallProgress(call_id=self.call_id, progress=value, total=total, message=message))

    def finished(self, result: dict[str, Any], duration_ms: int) -> None:
        self._ended(f.CallFinished(call_id=self.call_id, result=result, is_error=result.get("isError") is True,
                                   duration_ms=duration_ms))

    def failed(self, error: str, duration_ms: int = 0, cancelled: bool = False) -> None:
        self._ended(f.CallFailed(call_id=self.call_id, error=error, duration_ms=duration_ms, cancelled=cancelled))

    def replay(self, record: CallRecord) -> None:
        """A call kept on record, drawn again as it ended (a call still running then was interrupted)."""
        self.started(record.server, record.tool, record.arguments, record.source, record.app_tool_of)
        status, duration = record.status, record.duration_ms or 0
        if status in ENDED_WITH_RESULT:
            self.page.send(f.CallFinished(call_id=self.call_id, result=record.result,
                                          is_error=status == "tool-error", duration_ms=duration))
        elif status == "running":
            self.failed("interrupted: the host stopped before the call finished", duration, cancelled=True)
        else:
            self.failed(record.error or status, duration, cancelled=status == "cancelled")


class KeptCall:
    """A call's record in the conversation. Put off (``after`` seconds), it is kept once the call has lasted that
    long, or as it ended if sooner: a view's own calls mostly end sooner, and are then written once, not appended
    running and updated ended (two writes a call, which under load the database had to take for every call)."""

    def __init__(self, log: ConversationLog, record: CallRecord, key: int | None, after: float = 0.0) -> None:
        self._log, self._record, self._key = log, record, key
        self._into = log.conversation_id  # where it belongs, whichever the tab shows when it is kept
        self._timer: asyncio.TimerHandle | None = None
        if key is None:
            if after > 0:
                self._timer = asyncio.get_running_loop().call_later(after, self._keep)
            else:
                self._keep()

    def _keep(self) -> None:
        self._timer = None
        if self._into is not None:  # a call made with no conversation shown is kept in none
            self._key = self._log.keep_call(self._record, self._into)

    def ended(self) -> None:
        """The record has ended: kept as it is now."""
        if self._timer is not None:
            self._timer.cancel()
            self._keep()
        else:
            self._log.rekeep_call(self._key, self._record)


class CallRunner:
    def __init__(self, host: Host, page: Page, log: ConversationLog, audit: Auditor, asks: TabAsks) -> None:
        self.host = host
        self.page = page
        self.log = log
        self.audit = audit
        self.asks = asks
        self._ids = itertools.count()

    def new_id(self) -> int:
        return next(self._ids)

    def refusal(self, server: str, tool: str) -> str | None:
        """Why the server's entry (``"tools"``) refuses this tool, or None. A tool the server has not listed
        is judged without annotations: under read-only or only it is refused."""
        conn = self.host.servers.connections.get(server)
        if conn is None:
            return None  # the call fails on its own: no such server
        entry = conn.tools.get(tool) or ToolEntry(server, tool, {}, None, frozenset())
        return tool_refusal(conn.spec.tools, entry)

    async def for_view(self, server: str, tool: str, arguments: dict[str, Any],
                       on_progress: ProgressFn) -> dict[str, Any]:
        record = CallRecord(server, tool, arguments, "view")
        return await self.run(self.new_id(), server, tool, arguments, "view", on_progress, record=record)

    async def run(self, call_id: int, server: str, tool: str, arguments: dict[str, Any], source: CallSource,
                  on_progress: ProgressFn | None = None, *, record: CallRecord,
                  key: int | None = None, app_tool_of: ViewDriver | None = None) -> dict[str, Any]:
        """One tool call as the conversation shows it (started, progress, finished or failed), kept on record.

        With ``app_tool_of`` the tool is one that view offers of its own, and the view runs it; its messages
        are in the audit trail as the view's traffic. Returns the result; raises :class:`CallFailed` when
        there is none.
        """
        with self.host.lifecycle.call():  # refused once the process stops; waited for while it runs
            if source == "view":  # the span of the view's own request is this call's
                return await self._run(call_id, server, tool, arguments, source, on_progress, record, key,
                                       app_tool_of)
            with spans.tool_call(server, tool, source, arguments) as span:
                result = await self._run(call_id, server, tool, arguments, source, on_progress, record, key,
                                         app_tool_of)
                spans.finish(span, "tool-error" if result.get("isError") is True else "ok", end=False)
                return result

    async def _run(self, call_id: int, server: str, tool: str, arguments: dict[str, Any], source: CallSource,
                   on_progress: ProgressFn | None, record: CallRecord, key: int | None,
                   app_tool_of: ViewDriver | None) -> dict[str, Any]:
        started = time.monotonic()
        card = CallCard(self.page, call_id)
        kept = KeptCall(self.log, record, key, after=VIEW_CARD_AFTER_S if source == "view" else 0.0)

        def finish(status: CallStatus, result: dict[str, Any] | None, error: str | None) -> None:
            duration = round((time.monotonic() - started) * 1000)

            def draw() -> None:
                if result is not None:
                    card.finished(result, duration)
                else:
                    card.failed(error or status, duration, cancelled=status == "cancelled")

            if source == "view":
                # The view's answer is sent in this same step: it goes to the page first, and the page
                # draws the card after handing the answer on, not before.
                asyncio.get_running_loop().call_soon(draw)
            else:
                draw()
            record.ended(status, result, error, duration)
            kept.ended()

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

        card.started(server, tool, arguments, source, app_tool_of.label if app_tool_of else None,
                     after=VIEW_CARD_AFTER_S if source == "view" else 0.0)
        to_server = app_tool_of is None
        # The one place every call to a server passes, whoever made it: the server's tool rules.
        refused = self.refusal(server, tool) if to_server else None
        if refused is not None:
            self.audit(_FROM[source], M.TOOLS_CALL, server=server, msg_id=call_id, decision="refused", reason=refused,
                       payload={"name": tool, "arguments": arguments})
            finish("failed", None, refused)
            metrics.tool_call(server, tool, source, "refused")
            raise CallFailed(refused, REFUSED)
        if to_server:
            self.audit("host->server", M.TOOLS_CALL, server=server, msg_id=call_id, reason=f"called by the {source}",
                       payload={"name": tool, "arguments": arguments})
        timing = metrics.CallTiming()
        try:
            if app_tool_of is not None:
                result = await app_tool_of.call_app_tool(tool, arguments)
            else:
                with self.asks.calling(server), metrics.timing_call() as timing:  # asked meanwhile: in this tab
                    result = await self._call_server(server, tool, arguments, relay)
        except asyncio.CancelledError:
            lifecycle = self.host.lifecycle
            if not lifecycle.timed_out:
                finish("cancelled", None, None)
                if to_server:
                    self.audit("host->server", M.CANCELLED, server=server, msg_id=call_id, reason="cancelled")
                    metrics.tool_call(server, tool, source, "cancelled")
                raise
            # Ended by the process's stop at its timeout, not by anyone asking: a failure, said so on record,
            # and the caller (a view among them) gets it as an error answer.
            error = stopped_error(lifecycle.timeout)
            finish("failed", None, error)
            if to_server:
                self.audit("host->server", M.CANCELLED, server=server, msg_id=call_id, reason=error)
                metrics.tool_call(server, tool, source, "failed")
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            raise Stopping(error) from None
        except Exception as exc:  # every failure is shown where it happened
            error = _describe_call_error(server, tool, exc)
            finish("failed", None, error)
            if to_server:
                self.audit("server->host", M.TOOLS_CALL, server=server, msg_id=call_id, reason=error)
                metrics.tool_call(server, tool, source, "timeout" if _timed_out(exc) else "failed")
            raise CallFailed(error, exc.code if isinstance(exc, MCPError) else INTERNAL_ERROR) from exc
        finish("tool-error" if result.get("isError") is True else "ok", result, None)
        if to_server:
            self.audit("server->host", M.TOOLS_CALL, server=server, msg_id=call_id, payload=result)
            metrics.tool_call(server, tool, source, "error" if result.get("isError") is True else "ok")
            metrics.host_time(server, source, time.monotonic() - started - timing.server_seconds)
        return result

    async def _call_server(self, server: str, tool: str, arguments: dict[str, Any],
                           relay: ProgressFn) -> dict[str, Any]:
        """The call, made once more when the server first wants something of the person: signing in on
        their own connection, or visiting pages of its own (URL elicitation, error -32042)."""
        try:
            return await self.host.servers.get(server).call_tool(tool, arguments, relay)
        except PersonNeeded:
            pass
        except MCPError as exc:
            if exc.code != URL_ELICITATION_REQUIRED:
                raise
            await self._visit(server, UrlElicitationRequiredError.from_error(exc.error))
        return await self.host.servers.get(server).call_tool(tool, arguments, relay)

    async def _visit(self, server: str, needed: UrlElicitationRequiredError) -> None:
        """Each page the server names, offered to the person (opened only on their click); then the server's
        word that it is done, or the person's (that word never comes on some protocol versions)."""
        conn = self.host.servers.get(server)
        for wanted in needed.elicitations:
            answer = await self.asks.elicit(server, wanted.model_dump(mode="json", by_alias=True, exclude_none=True))
            if answer.get("action") != "accept":
                raise CallFailed(f"{server}: the person did not open the page the server asked for "
                                 f"({answer.get('action')})")
            told = asyncio.create_task(conn.elicitation_done(wanted.elicitation_id or "", math.inf))
            asked = asyncio.create_task(self.asks.confirm(
                server, f"Finished on {urlsplit(wanted.url).hostname}? The call is made again when you go on."))
            try:
                await asyncio.wait({told, asked}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (told, asked):
                    task.cancel()
                await asyncio.gather(told, asked, return_exceptions=True)
            if not told.cancelled() and told.result() is True:
                continue
            if asked.cancelled() or asked.result() is not True:
                raise CallFailed(f"{server}: the person did not finish on the page the server asked for")


_FROM: dict[CallSource, Direction] = {"model": "model->host", "view": "view->host", "person": "host->server"}


def _timed_out(exc: Exception) -> bool:
    return isinstance(exc, TimeoutError) or (isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT)


def _describe_call_error(server: str, tool: str, exc: Exception) -> str:
    if isinstance(exc, MCPError):
        return f"{server}/{tool} failed: {exc.message} (error {exc.code})"
    if isinstance(exc, TimeoutError):
        return f"{server}/{tool} did not answer in time"
    if isinstance(exc, (ServerUnavailable, CallFailed)):
        return str(exc)
    return f"{server}/{tool} failed: {exc or type(exc).__name__}"
