"""Views pinned to the side panel: the same view instance (same handle, same audit trail) stays live
across turns and conversation switches until unpinned; the pins are kept per person, so a reload or a
restart mounts them in the panel again with their input and result."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from ...store.view_pins import ViewPin
from ...values.calls import INTERRUPTED, CallRecord, CallStatus, ViewRef
from ...values.templates import Template
from ...values.tools import tool_entry
from . import frames as f
from .driver import ViewDriver
from .journal import Journal
from .services import TabServices

log = logging.getLogger("mcp_apps_host.pins")


def call_record(view: ViewDriver) -> CallRecord:
    """What it takes to mount the view again: its call as the conversation keeps it."""
    s = view.session
    template = view.mounted.template
    status: CallStatus = ("ok" if s.last_result is not None else "cancelled" if s.last_cancelled is not None
                          else "running")
    return CallRecord(s.spec.server, s.spec.tool.name, s.last_input or {}, "person", status,
                      definition=s.spec.tool.definition, result=s.last_result,
                      view=ViewRef(template.sha256, template.uri), instance=view.instance)


class Pins:
    def __init__(self, tab: TabServices, journal: Journal,
                 back_in_card: Callable[[str], Awaitable[None]] | None = None) -> None:
        self.tab = tab
        self.journal = journal
        # Mount a view instance again under its call in the conversation shown (when its card has no view).
        self.back_in_card = back_in_card

    async def set(self, handle: str, pinned: bool) -> None:
        view = self.tab.views.live.get(handle)
        store = self.tab.host.view_pins
        if view is None or store is None or view.pinned == pinned:
            return
        if pinned:
            if not view.instance or view.conversation is None:
                self.tab.page.notice("This view cannot be pinned: it is not part of a kept conversation.", "error")
                return
            try:
                await self.tab.host.write(store.pin, view.instance, view.conversation, call_record(view).to_json(),
                                          urgent=True)
            except ValueError as exc:
                self.tab.page.notice(str(exc), "error")
                return
            view.pinned = True
            self.tab.page.send(f.ViewPinned(view=handle, pinned=True))
            return
        await self.tab.host.write(store.unpin, view.instance or "", urgent=True)
        view.pinned = False
        self.tab.page.send(f.ViewPinned(view=handle, pinned=False))
        if view.conversation != self.tab.log.conversation_id or view.in_panel:
            # No place for it in the column: its conversation is not shown, or it was drawn in the panel
            # (brought back after a reload). It ends; under its call, a fresh one takes its place.
            self.tab.views.close(handle, "unpinned from the side panel")
            if view.conversation == self.tab.log.conversation_id and view.instance and self.back_in_card:
                await self.back_in_card(view.instance)

    async def restore(self) -> None:
        """Mount in the panel each pin of this person's that is not live in this tab yet."""
        store = self.tab.host.view_pins
        if store is None:
            return
        live = self.tab.views.pinned_instances()
        for pin in await asyncio.to_thread(store.list):
            if pin.instance not in live:
                try:
                    await self._mount(pin)
                except Exception:  # one pin that cannot come back must not keep the others away
                    log.exception("could not mount a pinned view")

    async def _mount(self, pin: ViewPin) -> None:
        call = CallRecord.from_json(pin.call)
        row = await self.journal.call(self.journal.conversations.load_template, call.view.sha256 if call.view else None)
        if row is None:
            self.tab.page.notice(f"A pinned view of {call.server} could not come back: its template is "
                                 "no longer kept.", "warning")
            return
        entry = tool_entry(str(call.server), call.definition or {"name": call.tool})
        state = await self.journal.call(self.journal.conversations.load_view_state, pin.instance)
        views = self.tab.views
        live = views.mount(self.tab.runner.new_id(), entry, Template.from_stored(row), instance=pin.instance,
                           widget_state=state.get("structuredContent") if state else None, pinned=True,
                           conversation=pin.conversation)
        live.in_panel = True
        views.replay(live, call.arguments, call.result, None if call.result is not None else INTERRUPTED)
