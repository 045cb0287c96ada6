"""A person's message to the model, and everything the turn does: streamed text, tool calls
with their views (mounted while the arguments stream), results, and the Stop button."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...chat import events as ev
from ...chat.agent import AgentLoop, ToolOutcome
from ...chat.history import HistoryItem, ModelContextStore, UserMessage, item_from_dict, item_to_dict
from ...chat.markdown import render_markdown
from ...chat.tools import ModelTool, ToolTable
from ...errors import CallFailed, IllegalTransition
from ...telemetry import metrics, spans
from ...values import protocol as M
from ...values.calls import CallRecord
from ...values.content import error_result
from ...values.tools import ToolEntry
from ...views import events as vev
from . import frames as f
from .driver import ViewDriver
from .offered import OfferedTools
from .runner import CallCard
from .services import TabServices

log = logging.getLogger("mcp_apps_host.turns")


@dataclass
class _ModelCall:
    """One tool call the model is making, from its first streamed byte to its result."""

    call_id: int
    entry: ToolEntry | None
    record: CallRecord
    app_tool: ModelTool | None = None  # a tool a view offers of its own
    view: ViewDriver | None = None
    mounting: asyncio.Task[ViewDriver | None] | None = None
    input_sent: bool = False
    later: bool = False  # a view of the tool is open that takes later calls: the result goes there, none is mounted
    waiting: list[Callable[[ViewDriver], None]] = field(default_factory=list)  # view updates before it is mounted

    def to_view(self, update: Callable[[ViewDriver], None]) -> None:
        if self.view is not None:
            update(self.view)
        elif self.mounting is not None:
            self.waiting.append(update)


class Turns:
    def __init__(self, tab: TabServices, loop: AgentLoop, offered: OfferedTools) -> None:
        self.tab = tab
        self.loop = loop
        self.offered = offered
        self.history: list[HistoryItem] = []
        self.context = ModelContextStore()
        self.task: asyncio.Task[None] | None = None
        self._queued: list[str] = []
        self._calls: dict[str, _ModelCall] = {}
        self._text: list[str] = []
        self._turn = 0
        self._tools: ToolTable | None = None

    # ---- conversation switching -------------------------------------------------------------------

    def load(self, stored: list[dict[str, Any]]) -> None:
        self.history = []
        for data in stored:
            try:
                self.history.append(item_from_dict(data))
            except (KeyError, TypeError, ValueError):
                log.warning("skipped a stored history item that no longer parses")
        self.context = ModelContextStore()

    def heard(self, data: dict[str, Any]) -> None:
        """What another tab of this conversation told the model: part of this tab's history too."""
        try:
            self.history.append(item_from_dict(data))
        except (KeyError, TypeError, ValueError):
            log.warning("skipped a history item from another tab that does not parse")

    def stop(self) -> None:
        self._queued.clear()
        if self.task is not None:
            self.task.cancel()

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    # ---- starting a turn -------------------------------------------------------------------------------

    def say(self, text: str, source: str | None = None) -> None:
        """A message from the person (or, approved by them, from a view) for the model."""
        if self.running:
            self._queued.append(text)
            self.tab.page.notice("The model is still answering; your message goes next (Stop to interrupt).")
            return
        self.task = asyncio.create_task(self._run(text, source))

    async def _run(self, text: str, source: str | None) -> None:
        tab = self.tab
        self._turn += 1
        self._text = []
        tab.page.send(f.TurnState(running=True))
        if source is None:  # the page shows what the person typed at once; it is on record for a replay
            tab.log.keep("user", {"text": text})
        # What views shared since the last turn goes first, labelled as theirs; then the message.
        for note in self.context.take_pending():
            self._remember(note)
        self._remember(UserMessage(text))
        self._tools = self.offered.table()
        try:
            with spans.step("model turn") as span:  # the model's tool calls are spans inside it
                await self.loop.run_turn(list(self.history), self._tools, self._execute, self._on_event,
                                         on_item=self._remember)
                spans.finish(span, "ok", end=False)
        except asyncio.CancelledError:
            self._finish_text()
            for call in self._calls.values():
                if call.view is not None:
                    _cancel(call.view, "stopped by the person")
            tab.page.notice("Stopped.")
            raise
        finally:
            self._calls.clear()
            tab.page.send(f.TurnState(running=False))
            if self._queued:
                asyncio.get_running_loop().call_soon(self.say, self._queued.pop(0))

    def _remember(self, item: HistoryItem) -> None:
        self.history.append(item)
        self.tab.log.keep("history", item_to_dict(item))

    # ---- what the model does ----------------------------------------------------------------------------

    def _on_event(self, event: ev.Event) -> None:
        tab = self.tab
        if isinstance(event, ev.TextDelta):
            self._text.append(event.text)
            tab.page.send(f.AssistantDelta(turn=self._turn, text=event.text))
        elif isinstance(event, ev.TurnFinished):
            self._finish_text()
        elif isinstance(event, ev.ToolCallStarted):
            self._finish_text()
            self._started(event)
        elif isinstance(event, ev.ToolCallArgsDelta):
            call = self._calls.get(event.call_id)
            if call is not None and event.parsed is not None and not call.input_sent:
                parsed = event.parsed
                call.to_view(lambda v: v.drive(vev.ToolInputPartial(parsed)))
        elif isinstance(event, ev.ToolCallFinished):
            call = self._calls.get(event.call_id)
            if call is not None:
                call.input_sent = True
                call.record.arguments = event.arguments
                arguments = event.arguments
                call.to_view(lambda v: v.drive(vev.ToolInput(arguments)))
        elif isinstance(event, (ev.ToolCallInvalid, ev.ToolCallCancelled)):
            call = self._calls.get(event.call_id)
            reason = event.error if isinstance(event, ev.ToolCallInvalid) else event.reason
            if call is not None:
                call.to_view(lambda v: _cancel(v, reason))
                CallCard(tab.page, call.call_id).failed(reason, cancelled=isinstance(event, ev.ToolCallCancelled))
        elif isinstance(event, ev.StepLimitReached):
            self._notice(event.message)
        elif isinstance(event, ev.ModelError):
            self._finish_text()
            self._notice(f"The model failed: {event.message}", "error")

    def _finish_text(self) -> None:
        text = "".join(self._text).strip()
        self._text = []
        if text:
            self.tab.page.send(f.AssistantDone(turn=self._turn, text=text, html=render_markdown(text)))
            self.tab.log.keep("assistant", {"text": text})

    def _notice(self, text: str, level: str = "info") -> None:
        """A line in the conversation that is also on record."""
        self.tab.page.notice(text, level)
        self.tab.log.keep("notice", {"level": level, "text": text})

    def _started(self, event: ev.ToolCallStarted) -> None:
        tab = self.tab
        offered = self._tools.get(event.name) if self._tools is not None else None
        if offered is not None and offered.view is not None:  # a view's own tool: nothing to mount
            record = CallRecord(offered.server, offered.name, {}, "model", app_tool_of=offered.view_label)
            self._calls[event.call_id] = _ModelCall(tab.runner.new_id(), None, record, app_tool=offered)
            return
        entry = tab.host.servers.tool(offered.server, offered.name) if offered else None
        call_id = tab.runner.new_id()
        call = _ModelCall(call_id, entry, CallRecord(entry.server if entry else None,
                                                     entry.name if entry else event.name, {}, "model",
                                                     definition=entry.definition if entry else None))
        self._calls[event.call_id] = call
        call.later = entry is not None and tab.later.target(entry) is not None
        if entry is not None and entry.resource_uri and not call.later:
            # Mount at once: the template is cached, so the view is up while the arguments stream.
            call.mounting = asyncio.create_task(tab.mounting.mount(call_id, entry, call.record))

            def mounted(task: asyncio.Task[ViewDriver | None]) -> None:
                if task.cancelled() or task.exception() is not None or task.result() is None:
                    call.waiting.clear()
                    return
                call.view = task.result()
                for update in call.waiting:
                    update(call.view)  # type: ignore[arg-type]
                call.waiting.clear()

            call.mounting.add_done_callback(mounted)

    async def _execute(self, server: str, tool: str, arguments: dict[str, Any], model_call_id: str) -> ToolOutcome:
        tab = self.tab
        call = self._calls.get(model_call_id)
        if call is not None and call.app_tool is not None:
            try:
                result = await self.offered.for_model(call.call_id, call.app_tool, arguments, call.record)
            except CallFailed as exc:
                result = error_result(str(exc))
            return ToolOutcome.from_call_result(result)
        entry = tab.host.servers.tool(server, tool)
        if call is None or entry is None:
            return ToolOutcome.error(f"tool {tool!r} of server {server!r} is not available")
        if call.mounting is not None:
            await asyncio.wait([call.mounting])
        if tab.runner.refusal(server, tool) is None:  # refused by the server's tool rules: nobody is asked
            decision, reason = tab.host.consent.decide(server, entry, "model")
            tab.audit("model->host", M.TOOLS_CALL, server=server, msg_id=call.call_id,
                      decision="allowed" if decision == "allow" else "refused" if decision == "deny" else "asked",
                      reason=reason, payload={"name": tool, "arguments": arguments})
            allowed = decision == "allow"
            if decision == "ask":
                with spans.step("consent tool-call", **{spans.SERVER: server, spans.TOOL: tool}) as asked:
                    allowed = await tab.consents.ask_model_tool_call(entry, arguments)
                    spans.finish(asked, "allowed" if allowed else "denied", end=False)
            if not allowed:
                metrics.tool_call(server, tool, "model", "refused" if decision == "deny" else "declined")
                return self._not_run(call, server, tool, arguments,
                                     reason if decision == "deny" else "the person declined")
        key = None
        if call.later:  # kept here, so that the view it goes to is kept with it once the call has ended
            call.record.view_pending = True
            key = tab.log.keep_call(call.record)
        try:
            result = await tab.runner.run(call.call_id, server, tool, arguments, "model", record=call.record, key=key)
        except CallFailed as exc:
            result = error_result(str(exc))
        except asyncio.CancelledError:
            if call.later:
                tab.later.ended_without_result(call.record, key)
            if call.view is not None:
                _cancel(call.view, "stopped by the person")
            raise
        if call.later:
            await tab.later.finish(call.call_id, entry, call.record, key, arguments, result)
        elif call.view is not None:
            view = call.view
            if not call.input_sent:
                view.drive(vev.ToolInput(arguments))
            view.drive(vev.ToolResult(result))
        return ToolOutcome.from_call_result(result)

    def _not_run(self, call: _ModelCall, server: str, tool: str, arguments: dict[str, Any], why: str) -> ToolOutcome:
        """Refused by policy or by the person: the card, the record and the view say so; the model hears why."""
        card = CallCard(self.tab.page, call.call_id)
        card.started(server, tool, arguments, "model")
        card.failed(f"not run: {why}")
        call.record.not_run(arguments, why)
        self.tab.log.keep_call(call.record)
        if call.view is not None:
            _cancel(call.view, why)
        return ToolOutcome.from_call_result(error_result(f"Not run: {why}."))


def _cancel(view: ViewDriver, reason: str) -> None:
    try:
        view.drive(vev.ToolCancelled(reason))
    except IllegalTransition:
        pass  # it already has its result
