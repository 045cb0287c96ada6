"""The tools the views of one tab offer of their own (app-provided tools).

What each view offers is drawn on the view (`view-tools`) and offered to the model next to
the servers' tools, under a name that says which view it belongs to. The person calls one
from the view's list; the model's calls go through the consent policy first. Every call is
a card in the conversation and in the audit trail with its view. A view's tools go when the
view goes.
"""

from __future__ import annotations

import asyncio
from typing import Any, NoReturn

from ...chat.tools import ModelTool, ToolTable, ViewTools, tool_table_from_entries, with_app_tools
from ...errors import CallFailed
from ...policy.tools import tool_refusal
from ...values import protocol as M
from ...values.apptools import AppTool
from ...values.calls import CallRecord
from . import frames as f
from .driver import ViewDriver
from .runner import CallCard
from .services import TabServices


class OfferedTools:
    def __init__(self, tab: TabServices) -> None:
        self.tab = tab
        self.offered: dict[str, ViewTools] = {}  # by view handle
        self.running: set[asyncio.Task[None]] = set()  # the person's calls

    # ---- what the views offer ------------------------------------------------------------------

    def changed(self, view: ViewDriver, tools: tuple[AppTool, ...]) -> None:
        known = self.offered.get(view.handle)
        if (known.tools if known else ()) == tools:
            return  # the same list again (a view that keeps saying its tools changed): nothing to tell
        if tools:
            self.offered[view.handle] = ViewTools(view.handle, view.server, view.label, tools)
        else:
            self.offered.pop(view.handle, None)
        self.tab.audit("view->host", M.TOOLS_LIST, server=view.server, view=view.handle,
                       reason=f"the view offers {len(tools)} tool(s) of its own",
                       payload=[t.definition() for t in tools])
        self._send(view.handle)

    def gone(self, view: ViewDriver) -> None:
        if self.offered.pop(view.handle, None) is not None:
            self.tab.page.send(f.ViewTools(view=view.handle, tools=[]))

    def table(self) -> ToolTable:
        """The model's tools: every server's (with "model" visibility), then the views' own."""
        servers = self.tab.host.servers.connections.values()
        table = tool_table_from_entries(t for conn in servers for t in conn.tools.values())
        refused = frozenset((t.server, t.name) for conn in servers for t in conn.tools.values()
                            if tool_refusal(conn.spec.tools, t) is not None)
        return with_app_tools(table.withholding(refused), self.offered.values())  # refused: not offered

    def _send(self, handle: str) -> None:
        group = self.offered.get(handle)
        table = self.table()
        tools = [] if group is None else [
            {**t.definition(), "readOnly": t.read_only, "modelName": table.model_name(group.server, t.name, handle)}
            for t in group.tools]
        self.tab.page.send(f.ViewTools(view=handle, tools=tools))

    def _find(self, handle: str, name: str) -> tuple[ViewDriver, ViewTools, AppTool]:
        group = self.offered.get(handle)
        tool = next((t for t in group.tools if t.name == name), None) if group else None
        view = self.tab.views.live.get(handle)
        if group is None or tool is None or view is None:
            raise CallFailed(f"app tool {name!r} is not offered: its view is closed or no longer lists it")
        return view, group, tool

    # ---- the person's calls --------------------------------------------------------------------

    def from_page(self, handle: str, name: str, arguments: dict[str, Any]) -> None:
        try:
            view, group, _tool = self._find(handle, name)
        except CallFailed as exc:
            self.tab.page.notice(str(exc), "error")
            return
        call_id = self.tab.runner.new_id()
        record = CallRecord(group.server, name, arguments, "person", app_tool_of=group.label)
        task = asyncio.create_task(self._person_call(call_id, view, name, arguments, record))
        self.running.add(task)
        task.add_done_callback(self.running.discard)

    async def _person_call(self, call_id: int, view: ViewDriver, name: str, arguments: dict[str, Any],
                           record: CallRecord) -> None:
        try:
            await self.tab.runner.run(call_id, view.server, name, arguments, "person", record=record,
                                     app_tool_of=view)
        except CallFailed:
            pass  # the card says why

    # ---- the model's calls ---------------------------------------------------------------------

    async def for_model(self, call_id: int, tool: ModelTool, arguments: dict[str, Any],
                        record: CallRecord) -> dict[str, Any]:
        """Run the model's call of an app tool through the consent policy; the result, or CallFailed."""
        tab = self.tab
        assert tool.view is not None
        try:
            view, group, app_tool = self._find(tool.view, tool.name)
        except CallFailed as exc:
            self._not_run(call_id, tool, arguments, record, str(exc))
        decision, reason = tab.host.consent.decide_app_tool(group.server, app_tool)
        tab.audit("model->host", M.TOOLS_CALL, server=group.server, view=group.view, msg_id=call_id,
                  decision="allowed" if decision == "allow" else "refused" if decision == "deny" else "asked",
                  reason=f"app tool of {group.label}: {reason}", payload={"name": tool.name, "arguments": arguments})
        if decision == "ask":
            allowed = await tab.consents.ask_app_tool_call(group.view, group.server, group.label, tool.name,
                                                          arguments, _app_name(view.session.app_info))
            tab.audit("model->host", M.TOOLS_CALL, server=group.server, view=group.view, msg_id=call_id,
                      decision="consented" if allowed else "declined", reason="the person answered")
            if not allowed:
                gone = view.handle not in tab.views.live
                self._not_run(call_id, tool, arguments, record,
                              f"the view {group.label} closed before the person answered" if gone
                              else "the person declined")
        elif decision == "deny":
            self._not_run(call_id, tool, arguments, record, reason)
        if view.handle not in tab.views.live:
            self._not_run(call_id, tool, arguments, record, f"the view {group.label} closed while the person decided")
        return await tab.runner.run(call_id, group.server, tool.name, arguments, "model", record=record,
                                   app_tool_of=view)

    def _not_run(self, call_id: int, tool: ModelTool, arguments: dict[str, Any], record: CallRecord,
                 why: str) -> NoReturn:
        card = CallCard(self.tab.page, call_id)
        card.started(tool.server, tool.name, arguments, "model", record.app_tool_of)
        card.failed(f"not run: {why}")
        record.not_run(arguments, why)
        self.tab.log.keep_call(record)
        raise CallFailed(f"Not run: {why}.")

    def cancel_all(self) -> None:
        for task in list(self.running):
            task.cancel()


def _app_name(info: dict[str, Any]) -> str:
    """The view's own word for its name and version (`appInfo`), short: it is shown, not trusted."""
    name, version = info.get("name"), info.get("version")
    return " ".join(v[:60] for v in (name, version) if isinstance(v, str) and v.strip())
