"""The person's tool calls (`/call` or the tool picker): the call and its view start together, the
view is given the call's input and result, and the card can cancel it. A view of the tool already open
that takes later calls (`later.py`) is given the result instead, and no view is mounted."""

from __future__ import annotations

import asyncio
from typing import Any

from ...errors import CallFailed, ServerUnavailable
from ...values.calls import CallRecord
from ...values.content import error_result
from ...values.tools import ToolEntry
from ...views import events as ev
from .driver import ViewDriver
from .journal import ConversationLog
from .later import LaterResults
from .mounting import Mounting
from .page import Page
from .runner import CallRunner


class Calls:
    def __init__(self, runner: CallRunner, page: Page, log: ConversationLog, mounting: Mounting,
                 later: LaterResults) -> None:
        self.runner = runner
        self.host = runner.host
        self.page = page
        self.log = log
        self.mounting = mounting
        self.later = later
        self.running: dict[int, asyncio.Task[None]] = {}  # the person's calls, cancellable from their card
        self._before_signin: set[asyncio.Task[None]] = set()  # calls that wait for the person to sign in first

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
        if entry is None and conn.signin is not None and conn.status != "ready":
            # A server the person has not signed in to yet: its tools are known once they have.
            task = asyncio.create_task(self._after_signin(server, tool, arguments))
            self._before_signin.add(task)
            task.add_done_callback(self._before_signin.discard)
            return
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
        self._start(entry, arguments)

    def from_view(self, server: str, tool: str, arguments: dict[str, Any]) -> str | None:
        """A view asked to open the view of ``tool`` and the person allowed it: the call is the person's own
        (its card, its view, the same rules), or why it could not start."""
        conn = self.host.servers.connections.get(server)
        entry = conn.tools.get(tool) if conn is not None and str(conn.status) == "ready" else None
        if entry is None or not entry.resource_uri or not entry.model_visible:
            return f"tool {tool!r} of server {server!r} has no view a person may open now"
        self._start(entry, arguments)
        return None

    def _start(self, entry: ToolEntry, arguments: dict[str, Any]) -> None:
        """Run a call of the person's, kept in `running` until it ends."""
        call_id = self.runner.new_id()
        self.running[call_id] = asyncio.create_task(self._person_call(call_id, entry, arguments))

    async def _after_signin(self, server: str, tool: str, arguments: dict[str, Any]) -> None:
        self.page.notice(f"/call {server} {tool} waits for you to sign in to {server}.")
        try:
            await self.host.servers.get(server).ready()
        except ServerUnavailable as exc:
            self.page.notice(f"/call {server} {tool}: {exc}", "error")
            return
        self.from_page(server, tool, arguments)

    async def _person_call(self, call_id: int, entry: ToolEntry, arguments: dict[str, Any]) -> None:
        # The call may end before its view is known: another tab draws the call only once it is.
        record = CallRecord(entry.server, entry.name, arguments, "person", definition=entry.definition,
                            view_pending=bool(entry.resource_uri))
        # A view of this tool open that takes later calls: the result goes there once the call ends.
        later = self.later.target(entry) is not None
        # The call and the view start together: the template is normally cached, and a view
        # held back for the person's review must not hold back the call.
        key = self.log.keep_call(record)
        call = asyncio.create_task(self.runner.run(call_id, entry.server, entry.name, arguments, "person",
                                            record=record, key=key))
        view: ViewDriver | None = None
        try:
            if entry.resource_uri and not later:
                try:
                    view = await self.mounting.mount(call_id, entry, record)
                finally:
                    record.view_pending = False
                    self.log.rekeep_call(key, record)
                if view is not None:
                    view.drive(ev.ToolInput(arguments))
            try:
                result = await asyncio.shield(call)
            except CallFailed as exc:
                result = error_result(str(exc))
        except asyncio.CancelledError:
            if later:
                self.later.ended_without_result(record, key)
            call.cancel()
            await asyncio.gather(call, return_exceptions=True)
            if view is not None:
                view.drive(ev.ToolCancelled("cancelled by the person"))
            raise
        finally:
            self.running.pop(call_id, None)
        if later:
            await self.later.finish(call_id, entry, record, key, arguments, result)
        elif view is not None:
            view.drive(ev.ToolResult(result))

    def cancel(self, call_id: int) -> None:
        task = self.running.get(call_id)
        if task is not None:
            task.cancel()  # the SDK sends notifications/cancelled to the server

    def cancel_all(self) -> None:
        for task in [*self.running.values(), *self._before_signin]:
            task.cancel()

    async def close(self) -> None:
        """Cancel the person's calls and wait until they have ended."""
        tasks = [*self.running.values(), *self._before_signin]
        self.cancel_all()
        await asyncio.gather(*tasks, return_exceptions=True)
