"""The tab's conversations: open, start, rename, delete, and replay what one kept.

A replay draws every item again as it was, and mounts each call's view from the template
stored by hash, then feeds it the call's input and result (or how it ended). A call whose result
went to a view already open (`mcp-apps-host/later-results`) mounts no view: its card names that view
again, and that view is given the latest such call's input and result instead of its own call's.
"""

from __future__ import annotations

from typing import Any

from ...chat.markdown import render_markdown
from ...errors import ServerUnavailable, TemplateError
from ...store.conversations import Item
from ...values.calls import CallRecord
from ...values.templates import Template
from ...values.tools import tool_entry
from ...views import events as ev
from . import frames as f
from .driver import ViewDriver
from .journal import Journal
from .pins import Pins
from .runner import CallCard
from .services import TabServices
from .turns import Turns


class ConversationService:
    def __init__(self, tab: TabServices, journal: Journal, turns: Turns | None) -> None:
        self.tab = tab
        self.journal = journal
        self.repo = journal.conversations
        self.turns = turns
        self.pins = Pins(tab, journal, self._back_in_card)
        # Calls of the conversation shown whose view is live in the side panel: (call id, call).
        self._in_panel: dict[str, tuple[int, CallRecord]] = {}
        self._heights: dict[str, int] = {}  # the last height of each view of the open conversation, by instance
        # Of the conversation shown, by view instance: its view's handle on this page, and the latest call
        # given to that view after its own (`mcp-apps-host/later-results`).
        self._handles: dict[str, str] = {}
        self._given_later: dict[str, CallRecord] = {}

    async def open(self, conversation_id: str | None, fresh: bool = False) -> None:
        """Show a conversation: the one asked for, else the newest, else a new one (always new when ``fresh``)."""
        conv = None if fresh or conversation_id is None else await self.journal.call(self.repo.get, conversation_id)
        if conv is None and not fresh:
            recent = await self.journal.call(self.repo.recent, 1)
            conv = recent[0] if recent else None
        if conv is None:
            conv = await self.journal.call(self.repo.create)
        self.tab.calls.cancel_all()
        self.tab.views.drop_all("another conversation was opened", keep_pinned=True)
        self.tab.log.show(conv)
        self.tab.page.send(f.ConversationReset(id=conv.id, title=conv.title))
        await self.send_list()
        self._in_panel.clear()
        await self.pins.restore()
        items = await self.journal.call(self.repo.items, conv.id)
        for item in items:
            self.tab.log.saw(conv.id, item.id)
        if self.turns is not None:
            self.turns.stop()
            self.turns.load([i.data for i in items if i.kind == "history"])
        # Only the last max_live_views views run at once (they are where the page opens: the end); the
        # ones before are placeholders, mounted when scrolled to.
        with_view = [i.id for i in items if i.kind == "tool-call" and isinstance(i.data.get("view"), dict)]
        running = set(with_view[-self.tab.host.limits.max_live_views:])
        parked = len(running) < len(with_view)  # placeholders are drawn at the height their views last had
        self._heights = await self.journal.call(self.repo.view_heights, conv.id) if parked else {}
        self._handles.clear()
        self._given_later = _given_later(items)
        for item in items:
            await self.show(item, placeholder=item.kind == "tool-call" and item.id not in running, replay=True)
        self.tab.views.boot_accepted()  # after the replay: the views in sight start first

    async def rename(self, conversation_id: str, title: str) -> None:
        try:
            await self.journal.call(self.repo.rename, conversation_id, title)
        except ValueError as exc:
            self.tab.page.notice(str(exc), "error")
        if self.tab.log.conversation_id == conversation_id:
            renamed = await self.journal.call(self.repo.get, conversation_id)
            if renamed is not None:
                self.tab.log.show(renamed)
        await self.send_list()

    async def delete(self, conversation_id: str) -> None:
        await self.journal.call(self.repo.delete, conversation_id)
        if self.tab.log.conversation_id == conversation_id:
            await self.open(None)
        else:
            await self.send_list()

    async def send_list(self) -> None:
        items = await self.journal.call(self.repo.recent)
        self.tab.page.send(f.Conversations(current=self.tab.log.conversation_id, items=[
            {"id": c.id, "title": c.title, "updated": c.updated} for c in items]))

    # ---- replay --------------------------------------------------------------------------------------

    async def show(self, item: Item, placeholder: bool = False, replay: bool = False) -> None:
        """Draw one kept item as it was (a replay, or another tab's news); a call's view only as a placeholder
        when told so."""
        data, page = item.data, self.tab.page
        if item.kind == "user":
            page.send(f.UserMessage(text=str(data.get("text", ""))))
        elif item.kind == "assistant":
            text = str(data.get("text", ""))
            page.send(f.AssistantDone(turn=None, text=text, html=render_markdown(text)))
        elif item.kind == "notice":
            page.notice(str(data.get("text", "")), str(data.get("level", "info")))
        elif item.kind == "view-message":
            page.send(f.ChatMessage(role=str(data.get("role", "user")), source=str(data.get("source", "")),
                                    text=str(data.get("text", ""))))
        elif item.kind == "tool-call":
            await self._replay_call(data, placeholder, replay)

    async def _current(self, server: str, stored: Template) -> Template:
        """Under `serve --watch` a replayed view gets its server's template as it is now, not the stored one."""
        if server not in self.tab.host.watch:
            return stored
        try:
            return await self.tab.host.servers.template(server, stored.uri)
        except (TemplateError, ServerUnavailable):
            return stored

    async def _replay_call(self, data: dict[str, Any], placeholder: bool = False, replay: bool = False) -> None:
        call_id = self.tab.runner.new_id()
        record = CallRecord.from_json(data)
        CallCard(self.tab.page, call_id).replay(record)
        if record.delivered_to is not None:
            self._delivered(call_id, record, replay)
            return
        if record.view is None:
            return
        instance = record.instance
        if instance is not None and instance in self.tab.views.pinned_instances():
            self._in_panel[instance] = (call_id, record)  # live in the side panel: not mounted twice
            self._handles[instance] = next(v.handle for v in self.tab.views.live.values() if v.instance == instance)
            return
        if placeholder:
            server = str(record.server)
            handle = self.tab.views.lazy.add_placeholder(
                call_id, server, str(record.tool), self.tab.host.sandbox.origin_for(server),
                lambda replaces: self._replay_view(call_id, record, replaces),
                height=self._heights.get(instance) if instance is not None else None)
            if instance is not None:
                self._handles[instance] = handle
            return
        await self._replay_view(call_id, record)

    def _delivered(self, call_id: int, record: CallRecord, replay: bool) -> None:
        """A call given to a view already open: its card names that view, if it is on this page. In a replay
        the view was given the call's result when mounted (`_given_later`); another tab's call is given now
        to the view here that takes it."""
        instance = record.delivered_to
        live = next((v for v in self.tab.views.live.values() if v.instance == instance), None)
        if not replay and live is not None and live.session.takes_later_results():
            live.drive(ev.LaterResult(record.arguments, record.view_outcome()[0] or {"content": []}))
        handle = live.handle if live is not None else self._handles.get(str(instance))
        if handle is not None:
            self.tab.page.send(f.CallDelivered(call_id=call_id, view=handle))

    async def _back_in_card(self, instance: str) -> None:
        kept = self._in_panel.pop(instance, None)
        if kept is not None:
            await self._replay_view(*kept)

    async def _replay_view(self, call_id: int, record: CallRecord, replaces: str | None = None) -> ViewDriver | None:
        """Mount a kept call's view from its stored template and give it the call's input and result."""
        assert record.view is not None
        row = await self.journal.call(self.repo.load_template, record.view.sha256)
        entry = tool_entry(str(record.server), record.definition or {"name": record.tool})
        views = self.tab.views
        if row is None:
            views.mount_failed(call_id, entry.server, entry.name, "the stored template is missing")
            return None
        instance = record.instance
        state = await self.journal.call(self.repo.load_view_state, instance) if instance else None
        live = views.mount(call_id, entry, await self._current(entry.server, Template.from_stored(row)),
                           instance=instance,
                           widget_state=state.get("structuredContent") if state else None, replaces=replaces)
        given = self._given_later.get(instance, record) if instance is not None else record
        views.replay(live, given.arguments, *given.view_outcome())
        if instance is not None:
            self._handles[instance] = live.handle
        return live


def _given_later(items: list[Item]) -> dict[str, CallRecord]:
    """By view instance, the latest call a view was given after its own (`mcp-apps-host/later-results`)."""
    given: dict[str, CallRecord] = {}
    for item in items:
        if item.kind == "tool-call":
            record = CallRecord.from_json(item.data)
            if record.delivered_to is not None and record.status != "running":
                given[record.delivered_to] = record
    return given
