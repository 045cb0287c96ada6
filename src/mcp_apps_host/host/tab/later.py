"""`mcp-apps-host/later-results` (beyond the spec): a later call of a tool goes to the view of that tool
already open, when its app declared the capability, instead of a new view being mounted for it.

Whoever made the call (the person, the model, a view's open-view), the decision is taken twice: when
the call starts (is there such a view? then none is mounted for it) and when it ends (the newest such
view then is given the call's input and result; if none is left, the call gets a view of its own after all).
"""

from __future__ import annotations

from typing import Any

from ...values.calls import CallRecord
from ...values.tools import ToolEntry
from ...views import events as ev
from . import frames as f
from .driver import ViewDriver
from .journal import ConversationLog
from .liveviews import LiveViews
from .mounting import Mounting
from .page import Page


class LaterResults:
    def __init__(self, views: LiveViews, mounting: Mounting, page: Page, log: ConversationLog) -> None:
        self.views = views
        self.mounting = mounting
        self.page = page
        self.log = log

    def target(self, entry: ToolEntry) -> ViewDriver | None:
        """The most recently mounted view of ``entry``'s tool in the conversation shown that takes a later call."""
        if not entry.resource_uri:
            return None
        conversation = self.log.conversation_id
        for view in reversed(list(self.views.live.values())):
            if (view.server == entry.server and view.session.spec.tool.name == entry.name
                    and view.conversation == conversation and view.session.takes_later_results()):
                return view
        return None

    async def finish(self, call_id: int, entry: ToolEntry, record: CallRecord, key: int | None,
                     arguments: dict[str, Any], result: dict[str, Any]) -> ViewDriver | None:
        """The ended call's input and result, to the open view that takes them, or (that view gone meanwhile)
        to a view mounted for the call now; the call's record says which. The view, or None."""
        try:
            view = self.target(entry)
            if view is not None:
                view.drive(ev.LaterResult(arguments, result))
                record.delivered_to = view.instance
                self.page.send(f.CallDelivered(call_id=call_id, view=view.handle))
                return view
            view = await self.mounting.mount(call_id, entry, record)
            if view is not None:
                view.drive(ev.ToolInput(arguments))
                view.drive(ev.ToolResult(result))
            return view
        finally:
            record.view_pending = False  # another tab draws the call once this is known
            self.log.rekeep_call(key, record)

    def ended_without_result(self, record: CallRecord, key: int | None) -> None:
        """A call meant for an open view ended with nothing to give it (cancelled, not run): it has no view."""
        record.view_pending = False
        self.log.rekeep_call(key, record)
