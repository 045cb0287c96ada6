"""One browser tab: its services, and a table routing each page frame to the one that handles it.

The page relays every view message here; `LiveViews` hands it to its view's `ViewDriver`,
whose `ViewSession` decides; calls, consents, template trust and conversations each have
their own service (`TabServices`), and model turns run in `Turns`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ...errors import DatabaseUnavailable, InvalidFrame
from ...telemetry import metrics
from ...telemetry.context import about
from ...values.apptools import AppTool
from ...values.calls import CallRecord
from ...values.content import content_text
from ...version import __version__
from ...views.context import HostEnvironment
from ...views.effects import ModelContextUpdated, PostChatMessage
from ...views.theme import host_styles
from ..process.core import Host
from ..process.signins import SIGNOUT_METHOD
from . import frames as f
from .asking import TabAsks
from .audit import Auditor
from .calls import Calls
from .commands import Commands
from .consents import Consents
from .conversations import ConversationService
from .driver import ViewDriver
from .heights import ViewHeights
from .inspector import Inspector
from .journal import ConversationLog
from .later import LaterResults
from .liveviews import LiveViews
from .mounting import Mounting
from .offered import OfferedTools
from .page import Page
from .runner import CallRunner
from .services import TabServices
from .turns import Turns
from .withheld import withhold

log = logging.getLogger("mcp_apps_host.tab")


class Tab:
    def __init__(self, host: Host, send: Callable[[f.HostFrame], None]) -> None:
        self.host = host
        self.env = HostEnvironment(styles=host_styles())
        page = Page(send)
        self.id = secrets.token_hex(8)  # tells this tab's own news from another's on the bus
        self._shown: set[int] = set()  # items of another tab already drawn here
        self._background: set[asyncio.Task[None]] = set()
        # On SQLite the conversation's writes take turns with the audit trail's on its writer's thread.
        conversation = ConversationLog(host.conversations, self._written, host.write,
                                       lambda shown: host.conversation_news.watch(shown, self._heard),
                                       host.limits.database_wait_timeout, host.item_appends)
        live: dict[str, ViewDriver] = {}  # the live views by handle, kept by `views`
        self.inspector = Inspector(host.audit, page, live)
        audit = Auditor(host.audit, host.identity, lambda: conversation.conversation_id, self.inspector.touched)
        consents = Consents(page, host.consent)
        asks = TabAsks(page, consents, audit, host.limits, host.identity.key)
        runner = CallRunner(host, page, conversation, audit, asks)
        views = LiveViews(host, self.env, page, audit, consents, tools=runner, news=self, live=live)
        mounting = Mounting(host, page, views, audit, conversation)
        later = LaterResults(views, mounting, page, conversation)
        calls = Calls(runner, page, conversation, mounting, later)
        self.services = TabServices(host, page, conversation, audit, consents, views, mounting, runner, calls, asks,
                                    later)
        if host.asks is not None:
            host.asks.attach(asks)
        self.offered = OfferedTools(self.services)
        self.turns = Turns(self.services, host.agent, self.offered) if host.agent is not None else None
        journal = conversation.journal
        self.conversations = ConversationService(self.services, journal, self.turns) if journal is not None else None
        self.commands = Commands(self.services, self.turns)
        self.heights = ViewHeights(journal)
        self._audit = audit
        self._routes: dict[type, Callable[[Any], Awaitable[None] | None]] = {
            f.Hello: self._hello,
            f.Chat: lambda fr: self.commands.chat(fr.text),
            f.Call: lambda fr: calls.from_page(fr.server, fr.tool, fr.arguments),
            f.Stop: lambda fr: self.turns.stop() if self.turns is not None else None,
            f.Cancel: lambda fr: calls.cancel(fr.call_id),
            f.Intent: lambda fr: views.intent(fr.server, fr.tool),
            f.SignInDecline: lambda fr: self._decline_signin(fr.server, fr.state),
            f.SignOut: lambda fr: self._sign_out(fr.server),
            f.ViewMessage: lambda fr: views.message(fr.view, fr.message),
            f.ViewDisplayModeRequest: lambda fr: views.display_mode(fr.view, fr.mode),
            f.ViewContainer: lambda fr: views.container(fr.view, fr.mode, fr.width, fr.height),
            f.ViewVisible: lambda fr: views.lazy.visibility(fr.view, fr.visible),
            f.ViewPin: self._pin,
            f.ViewClose: lambda fr: views.close(fr.view, "closed by the person"),
            f.ViewHostContext: self._view_host_context,
            f.InspectorOpen: lambda fr: self.inspector.open(fr.view),
            f.InspectorClose: lambda fr: self.inspector.close(fr.view),
            f.Theme: self._theme,
            f.Preferences: self._preferences,
            f.ConsentReply: lambda fr: consents.reply(fr.id, fr.allow, fr.remember),
            f.TrustReply: lambda fr: mounting.answer(fr.call_id, fr.accept),
            f.AppToolCall: lambda fr: self.offered.from_page(fr.view, fr.tool, fr.arguments),
            f.ElicitReply: lambda fr: asks.reply(fr.id, fr.action, fr.content),
            f.ConversationNew: lambda fr: self._with_conversations(lambda c: c.open(None, fresh=True)),
            f.ConversationOpen: lambda fr: self._with_conversations(lambda c: c.open(fr.id)),
            f.ConversationRename: lambda fr: self._with_conversations(lambda c: c.rename(fr.id, fr.title)),
            f.ConversationDelete: lambda fr: self._with_conversations(lambda c: c.delete(fr.id)),
        }
        self._generations = {name: c.generation for name, c in host.servers.connections.items()}
        self._unsubscribe = host.servers.subscribe(self._servers_changed)
        metrics.TABS.inc()

    @property
    def page(self) -> Page:
        return self.services.page

    def withhold(self, frame: f.HostFrame, error: DatabaseUnavailable) -> f.HostFrame:
        """What goes to the page instead of ``frame`` when its audit record could not be committed."""
        return withhold(frame, error, self._audit)

    # ---- from the page -------------------------------------------------------------------------------

    async def receive(self, data: Any) -> None:
        """One decoded frame from the page. Nothing in it can end the tab: a frame that is not one
        of the page protocol's, or that fails while handled, is logged and told to the page."""
        self.services.asks.last_active = time.monotonic()
        try:
            frame = f.parse_page_frame(data)
        except InvalidFrame as exc:
            log.warning("the page sent a frame the host does not accept: %s", exc)
            self.page.notice(f"The host did not accept a frame from the page ({exc}).", "error")
            return
        view = getattr(frame, "view", None)  # the frames about one view name its handle
        try:
            # Log lines written while this frame is handled (and by the tasks it starts) name who and what.
            with about(self.host.identity.tenant, self.host.identity.user, view if isinstance(view, str) else None):
                result = self._routes[type(frame)](frame)
                if inspect.isawaitable(result):
                    await result
        except Exception:  # one bad frame must not end the tab
            log.exception("could not handle a %r frame from the page", frame.type)
            self.page.notice(f"The host could not handle that ({frame.type}); see the host's log.", "error")

    async def _hello(self, hello: f.Hello) -> None:
        self.page.send(f.Welcome(version=__version__, worker=os.getpid(), admin=self.host.identity.admin))
        env = self.env
        env.theme = hello.theme or "light"
        env.locale = hello.locale or env.locale
        env.time_zone = hello.time_zone or env.time_zone
        env.user_agent = hello.user_agent or env.user_agent
        env.touch, env.hover = hello.touch, hello.hover
        env.reduced_motion, env.contrast, env.forced_colors = hello.reduced_motion, hello.contrast, hello.forced_colors
        if hello.viewport_width is not None:
            env.max_width = min(hello.viewport_width, self.host.limits.max_view_width)
        self._send_theme()
        self._servers_changed()
        await self._with_conversations(lambda c: c.open(hello.conversation))

    async def _pin(self, frame: f.ViewPin) -> None:
        if self.conversations is None:
            self.page.notice("Views can be pinned only when conversations are kept (a database).", "error")
            return
        await self.conversations.pins.set(frame.view, frame.pinned)

    def _theme(self, frame: f.Theme) -> None:
        self.env.theme = frame.theme
        self._send_theme()
        self.services.views.context_changed(theme=self.env.theme, styles=self.env.styles)

    def _preferences(self, frame: f.Preferences) -> None:
        env = self.env
        env.reduced_motion, env.contrast, env.forced_colors = frame.reduced_motion, frame.contrast, frame.forced_colors
        self.services.views.context_changed(reduced_motion=env.reduced_motion, contrast=env.contrast,
                                            forced_colors=env.forced_colors)

    def _view_host_context(self, frame: f.ViewHostContext) -> None:
        fields = (("theme", frame.theme), ("locale", frame.locale), ("time_zone", frame.time_zone),
                  ("container_width", frame.container_width), ("container_height", frame.container_height),
                  ("platform", frame.platform), ("touch", frame.touch), ("hover", frame.hover))
        changes: dict[str, Any] = {k: v for k, v in fields if v is not None}
        if frame.theme is not None:
            changes["styles"] = self.env.styles  # the SDK merges top-level keys: styles go whole
        self.services.views.override_context(frame.view, frame.display_mode, **changes)
        self.inspector.touched(frame.view)

    def _decline_signin(self, server: str, state: str) -> None:
        signin = self.host.servers.get(server).signin
        if signin is not None and signin.state == state:
            signin.decline()

    async def _sign_out(self, server: str) -> None:
        await self.host.servers.get(server).sign_out()
        if self.host.signins is not None:
            self.host.signins.audit(self.host.identity, server, "allowed", method=SIGNOUT_METHOD)
        self.page.notice(f"Signed out of {server}.")

    def _send_theme(self) -> None:
        self.page.send(f.HostTheme(theme=self.env.theme, variables=self.env.styles.get("variables", {})))

    def _servers_changed(self) -> None:
        self.page.send(f.Servers(servers=self.host.servers.snapshot()))
        self.services.views.servers_changed()
        if self.services.log.current is not None:  # the views booted ahead are its conversation's
            self.services.views.boot_accepted()
        for name, conn in self.host.servers.connections.items():
            if conn.generation == self._generations.get(name) or str(conn.status) != "ready":
                continue
            self._generations[name] = conn.generation
            if name in self.host.watch:  # under --watch its open views follow its templates
                for view in [v for v in self.services.views.live.values() if v.server == name]:
                    asyncio.get_running_loop().create_task(self.services.mounting.remount(view))

    async def _with_conversations(self, action: Callable[[ConversationService], Awaitable[None]]) -> None:
        if self.conversations is not None:  # without a store there is one conversation, kept nowhere
            await action(self.conversations)

    # ---- another tab of the same conversation (here or on another worker) --------------------------------

    def _written(self, conversation: str, item: int, kind: str, op: str) -> None:
        self.services.log.saw(conversation, item)
        self.host.bus.publish("conversation", {"conversation": conversation, "item": item, "kind": kind, "op": op,
                                               "tab": self.id})

    def _heard(self, news: dict[str, Any]) -> None:
        if news.get("tab") == self.id or news.get("conversation") != self.services.log.conversation_id:
            return
        if news.get("missed") is True and self.conversations is not None:
            self._in_background(self._catch_up(self.conversations, str(news["conversation"])))
            return
        item = news.get("item")
        if not isinstance(item, int) or item in self._shown or self.conversations is None:
            return
        self._in_background(self._show(self.conversations, str(news["conversation"]), item))

    def _in_background(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _catch_up(self, conversations: ConversationService, conversation: str) -> None:
        """The bus was away: draw the items other tabs wrote meanwhile, newer than any this tab knows."""
        latest = self.services.log.latest
        for item in await conversations.journal.call(conversations.repo.items, conversation):
            if item.id > latest:
                await self._show(conversations, conversation, item.id)

    async def _show(self, conversations: ConversationService, conversation: str, item_id: int) -> None:
        item = await conversations.journal.call(conversations.repo.item, conversation, item_id)
        if item is None or item_id in self._shown or conversation != self.services.log.conversation_id:
            return
        if item.kind == "tool-call" and ((call := CallRecord.from_json(item.data)).status == "running"
                                         or call.view_pending):
            return  # drawn once it has ended and its view is known
        self._shown.add(item_id)
        self.services.log.saw(conversation, item_id)
        if item.kind == "history":
            if self.turns is not None:
                self.turns.heard(item.data)
        else:
            await conversations.show(item)

    # ---- what views send into the conversation (ViewNews) ---------------------------------------

    def chat_message(self, view: ViewDriver, message: PostChatMessage) -> None:
        text = content_text(message.content)
        data = {"role": message.role, "source": view.server, "text": text}
        self.page.send(f.ChatMessage(role=message.role, source=view.server, text=text, view=view.handle))
        self.services.log.keep("view-message", data)
        if self.turns is not None:
            self.turns.say(text, source=view.server)  # the person approved it: it is their message now

    def model_context(self, view: ViewDriver, update: ModelContextUpdated) -> None:
        journal, conversation = self.services.log.journal, self.services.log.conversation_id
        if journal is not None and conversation is not None and view.instance is not None:
            state = {"content": update.content, "structuredContent": update.structured_content}
            journal.run(journal.conversations.save_view_state, view.instance, conversation, state)
        if self.turns is not None:
            self.turns.context.update(view.handle, view.server, view.session.spec.tool.name,
                                      update.content, update.structured_content)

    def app_tools_changed(self, view: ViewDriver, tools: tuple[AppTool, ...]) -> None:
        self.offered.changed(view, tools)

    def open_view(self, view: ViewDriver, tool: str, arguments: dict[str, Any]) -> str | None:
        return self.services.calls.from_view(view.server, tool, arguments)

    def resized(self, view: ViewDriver, height: int) -> None:
        self.heights.resized(view, height)

    def view_gone(self, view: ViewDriver) -> None:
        self.offered.gone(view)
        if self.turns is not None:
            self.turns.context.forget(view.handle)

    # ---- end of the tab ----------------------------------------------------------------------------------

    async def close(self) -> None:
        """The tab went away: nobody can answer a teardown, so drop everything at once."""
        metrics.TABS.dec()
        self._unsubscribe()
        for task in self._background:
            task.cancel()
        if self.host.asks is not None:
            self.host.asks.detach(self.services.asks)
        if self.turns is not None:
            self.turns.stop()
        self.services.calls.cancel_all()
        self.offered.cancel_all()
        self.services.views.close_all("the page was closed")
        await self.services.calls.close()
        await self.services.log.close()
