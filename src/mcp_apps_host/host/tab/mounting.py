"""From a tool call to a mounted view: fetch the template, check its trust, ask the person
about a changed one, then mount it, keeping it for replays meanwhile."""

from __future__ import annotations

import asyncio
import uuid

from ...errors import ServerUnavailable, TemplateError
from ...policy.trust import TrustVerdict
from ...store.outage import write_retried
from ...values.calls import CallRecord, ViewRef
from ...values.templates import Template
from ...values.tools import ToolEntry
from ...views import events as ev
from ..process.core import Host
from . import frames as f
from .audit import Auditor
from .driver import ViewDriver
from .journal import ConversationLog
from .liveviews import LiveViews
from .page import Page


class Mounting:
    def __init__(self, host: Host, page: Page, views: LiveViews, audit: Auditor, log: ConversationLog) -> None:
        self.host = host
        self.page = page
        self.views = views
        self.audit = audit
        self.log = log
        self._held: dict[int, asyncio.Future[bool]] = {}  # calls whose view waits for the person's review

    async def mount(self, call_id: int, entry: ToolEntry, record: CallRecord) -> ViewDriver | None:
        """The call's view, or None when it cannot render (the reason is shown and kept in ``record``)."""
        assert entry.resource_uri
        try:
            template = await self.host.servers.template(entry.server, entry.resource_uri)
        except (TemplateError, ServerUnavailable) as exc:
            self._failed(call_id, entry, record, str(exc))
            return None
        saved = asyncio.ensure_future(self._save(template))  # beside the trust check and the mount
        trust = "unchecked"
        if self.host.trust is not None:
            verdict = await self.host.write(self.host.trust.check, template, urgent=True)  # pins one used first
            trust = verdict.status
            if verdict.status == "blocked":
                self._failed(call_id, entry, record, verdict.reason)
                return None
            if not verdict.render and entry.server in self.host.watch:
                trust = await self._accept_watched(entry, verdict)
            elif not verdict.render and not await self._ask(call_id, entry, verdict):
                self._failed(call_id, entry, record, "the person did not accept the changed template")
                return None
        # The view instance's id goes with the call's item: its kept state is found by it on a replay.
        instance = record.instance = record.instance or uuid.uuid4().hex
        # A view of this template booted ahead takes the call; else one is mounted now. Either way the
        # next view of it boots ahead once this one is up (the template has passed its checks).
        view = self.views.take_prebooted(call_id, entry, template, trust, instance)
        if view is None:
            view = self.views.mount(call_id, entry, template, trust, instance=instance)
        self.views.prebooted.boot_after(view, entry, template)
        # The call's item names the view only once its template is kept (`_save`), but the view need not wait
        # for that: on a template never seen the write queued behind the pin's and held the mount up.
        try:
            await saved
        except asyncio.CancelledError:  # the caller, cancelled, never gets the view to tell it so
            view.drive(ev.ToolCancelled("the call was cancelled"))
            raise
        record.view = ViewRef(template.sha256, template.uri)
        return view

    def _failed(self, call_id: int, entry: ToolEntry, record: CallRecord, reason: str) -> None:
        self.views.mount_failed(call_id, entry.server, entry.name, reason)
        record.view_error = reason

    # ---- trust prompts -----------------------------------------------------------------------------

    async def _ask(self, call_id: int, entry: ToolEntry, verdict: TrustVerdict) -> bool:
        """A server serves a different template for a URI the person has used: show old and new, wait for a yes."""
        held: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._held[call_id] = held
        self.page.send(f.ViewHeld(call_id=call_id, server=entry.server, tool=entry.name, uri=entry.resource_uri,
                                  old_sha256=verdict.pinned_sha256, new_sha256=verdict.sha256,
                                  old_size=verdict.pinned_size, new_size=verdict.size, reason=verdict.reason))
        self.audit("server->host", "template-changed", server=entry.server, decision="asked", reason=verdict.reason)
        accepted = await held
        self.audit("server->host", "template-changed", server=entry.server,
                   decision="consented" if accepted else "declined", reason="the person reviewed the changed template")
        if accepted and self.host.trust is not None:
            await self.host.write(self.host.trust.accept, entry.server, str(entry.resource_uri), verdict.sha256,
                                  verdict.size, urgent=True)
        return accepted

    async def _accept_watched(self, entry: ToolEntry, verdict: TrustVerdict) -> str:
        """Under `serve --watch` the person is editing this server: its new template is theirs."""
        assert self.host.trust is not None
        await self.host.write(self.host.trust.accept, entry.server, str(entry.resource_uri), verdict.sha256,
                              verdict.size, urgent=True)
        self.audit("server->host", "template-changed", server=entry.server, decision="consented",
                   reason="the server's watched files changed (serve --watch)")
        return "changed"

    async def remount(self, view: ViewDriver) -> ViewDriver | None:
        """Render an open view again from its server's current template, with its last input and result
        (`serve --watch`); None when the template is the same or cannot be used."""
        entry = view.session.spec.tool
        if not entry.resource_uri:
            return None
        try:
            template = await self.host.servers.template(entry.server, entry.resource_uri)
        except (TemplateError, ServerUnavailable):
            return None
        if template.sha256 == view.mounted.template.sha256 or view.handle not in self.views.live:
            return None
        trust = "unchecked"
        if self.host.trust is not None:
            verdict = await self.host.write(self.host.trust.check, template, urgent=True)
            if verdict.status == "blocked":
                return None
            trust = verdict.status if verdict.render else await self._accept_watched(entry, verdict)
        await self._save(template)
        return self.views.remount(view, template, trust)

    def answer(self, call_id: int, accept: bool) -> None:
        held = self._held.pop(call_id, None)
        if held is not None and not held.done():
            held.set_result(accept)

    # ---- templates kept for replays ------------------------------------------------------------------

    async def _save(self, template: Template) -> None:
        """Keep the template before any item naming it is written: another tab of the conversation, told of
        the item at once, loads the template by its hash (an item queued in the journal before it may be
        written with the view's reference, so the template does not wait in that queue)."""
        journal = self.log.journal
        if journal is None or template.sha256 in self.host.saved_templates:
            return
        conversations = journal.conversations
        await write_retried(lambda: conversations.save_template(template.sha256, template.server, template.uri,
                                                                template.html, template.meta()),
                            "a view's template", self.host.limits.database_wait_timeout,
                            lambda write: self.host.write(write, urgent=True))
        self.host.saved_templates.add(template.sha256)
