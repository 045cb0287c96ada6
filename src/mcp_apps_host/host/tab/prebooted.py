"""Views booted ahead: for a template the person has already accepted (when the page loads) or been shown
in this tab (the next one), a view is mounted hidden before any call needs it, so its app is parsed and
started when a call comes.

The person naming a tool they are about to call boots its view too, a template never seen included, when
a call would render it without asking (`boot_named`).

It waits at ui/initialize: its `toolInfo`, tool input and result exist only once a call takes it
(`LiveViews.take_prebooted`). Bounded by `prebooted_views_per_tab` and `prebooted_views_max_bytes`, one
per template. One not taken within `prebooted_view_max_age` (before the app's SDK gives up waiting for
its answer) lapses: it is ended, and boots again only when the person shows they are about to call a
tool (`wake`), so a page left open costs nothing while nobody uses it. One starts only for a template
that would render without asking; a template held back for the person's review never gets one.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from ...telemetry import metrics
from ...values.templates import Template
from ...values.tools import ToolEntry
from ...views.effects import ViewState
from ..process.core import Host
from .driver import ViewDriver
from .prestarted import PrestartedProxies

log = logging.getLogger("mcp_apps_host.prebooted")


class _Views(Protocol):
    host: Host
    live: dict[str, ViewDriver]
    prestarted: PrestartedProxies
    closed: bool

    def mount(self, call_id: int | None, entry: ToolEntry, template: Template, trust: str = ...,
              instance: str | None = ..., widget_state: None = ..., replaces: str | None = ...,
              pinned: bool = ..., conversation: str | None = ..., prebooted: bool = ...) -> ViewDriver: ...

    def discard(self, view: ViewDriver, reason: str) -> None: ...


# After the view that asked is up: the app just shown gets the CPU first, the next one boots after.
BOOT_DELAY = 1.0


class PrebootedViews:
    def __init__(self, views: _Views) -> None:
        self.views = views
        self.held: dict[str, tuple[ViewDriver, asyncio.TimerHandle]] = {}  # by `_key`
        self._after: dict[str, tuple[ToolEntry, Template]] = {}  # booted once this view is up (by handle)
        self._looked_at: set[str] = set()  # templates `boot_accepted` asked trust about (by `_key`)
        self._lapsed: dict[str, tuple[ToolEntry, Template]] = {}  # ended unused; boot again on `wake` (by `_key`)
        self._counted = 0  # len(held) as the metric last heard it

    def boot_after(self, view: ViewDriver, entry: ToolEntry, template: Template) -> None:
        """Once ``view`` is up (and a moment later, so the two do not race for the CPU), load the next
        proxy for its origin and boot the next view of ``template``."""
        self._after[view.handle] = (entry, template)

    def view_up(self, view: ViewDriver) -> None:
        after = self._after.pop(view.handle, None)
        if after is not None:
            asyncio.get_running_loop().call_later(BOOT_DELAY, self._next, *after)

    def failed(self, view: ViewDriver) -> bool:
        """Whether ``view`` failed while held for a call (its app never asked, or its frame broke); it is let
        go, and its frame should go too: nobody sees it, and it would keep its origin's renderer in use."""
        for key, (held, timer) in list(self.held.items()):
            if held is view:
                timer.cancel()
                del self.held[key]
                self._released("dropped")
                return True
        return False

    def _next(self, entry: ToolEntry, template: Template) -> None:
        if self.views.closed:
            return
        self.views.prestarted.prepare(template)
        self.boot(entry, template)

    async def boot_accepted(self) -> None:
        """Boot ahead the templates of the ready servers that the person has already accepted (their hash is
        pinned for them, or a list allows it): the first view of one in a fresh page starts as a later one
        does. Without trust checks nothing counts as accepted: those views boot ahead once shown."""
        trust = self.views.host.trust
        if trust is None:
            return
        for entry, template in self._known():
            key = self._key(template)
            if key in self._looked_at or not self._wanted(template):
                continue
            self._looked_at.add(key)  # once per tab: one accepted later boots ahead once shown
            try:
                accepted = await asyncio.to_thread(trust.accepted, template)
            except Exception:  # the pins could not be read: the view simply starts when called
                log.exception("could not tell whether a template is accepted")
                return
            if accepted and not self._shown_here(template):
                self.boot(entry, template)
        self.views.prestarted.refresh()  # a proxy taken by a view booted here is loaded again for the next

    async def boot_named(self, entry: ToolEntry, template: Template) -> None:
        """The person named this tool (typed `/call SERVER TOOL`, pointed at it): its view boots now when a
        call would render it without asking, a template never seen included. Pressing Enter would run it
        with no question; until a call takes it, it waits at ui/initialize knowing nothing of any call."""
        trust = self.views.host.trust
        if not self._wanted(template):
            return
        try:
            unasked = trust is None or await asyncio.to_thread(trust.renders_unasked, template)
        except Exception:  # the pins could not be read: the view simply starts when called
            log.exception("could not tell whether a template renders without asking")
            return
        if unasked and not self.views.closed and self._wanted(template) and not self._shown_here(template):
            self.views.prestarted.prepare(template)
            self.boot(entry, template)

    def _shown_here(self, template: Template) -> bool:
        """A call mounted it (while trust was asked, or Enter came right after the tool was named): its next
        view boots once that one is up (`boot_after`), and one booted now would only take the CPU from it."""
        return any(t.sha256 == template.sha256 and t.server == template.server for _, t in self._after.values())

    def _known(self) -> list[tuple[ToolEntry, Template]]:
        """A tool of each template the ready servers have read, for the person's or the model's calls."""
        known: dict[str, tuple[ToolEntry, Template]] = {}
        for conn in self.views.host.servers.connections.values():
            if str(conn.status) != "ready":
                continue
            for entry in conn.tools.values():
                template = conn.templates.get(entry.resource_uri) if entry.resource_uri else None
                if isinstance(template, Template) and entry.model_visible:
                    known.setdefault(self._key(template), (entry, template))
        return list(known.values())

    def view_gone(self, view: ViewDriver) -> None:
        self._after.pop(view.handle, None)

    def boot(self, entry: ToolEntry, template: Template) -> None:
        if self.views.closed or not self._wanted(template):
            return
        view = self.views.mount(None, entry, template, prebooted=True)
        loop = asyncio.get_running_loop()
        timer = loop.call_later(self.views.host.limits.prebooted_view_max_age, self._lapse, view, entry, template)
        self.held[self._key(template)] = (view, timer)
        self._released(None)

    def take(self, template: Template) -> ViewDriver | None:
        held = self.held.pop(self._key(template), None)
        if held is None:
            return None
        view, timer = held
        timer.cancel()
        if view.handle not in self.views.live or view.session.state != ViewState.RESOURCE_SENT:
            self._released("dropped")
            return None  # it failed while it waited, or its conversation was closed
        self._released("taken")
        return view

    def clear(self) -> None:
        for view, timer in self.held.values():
            timer.cancel()
            if view.handle in self.views.live:
                self.views.discard(view, "the booted-ahead view was not needed")
        self.held.clear()
        self._released("dropped")
        self._after.clear()
        self._looked_at.clear()  # another conversation: its views boot ahead again
        self._lapsed.clear()

    def drop_origin(self, origin: str) -> None:
        """End the views booted ahead on ``origin`` (its renderer may hang)."""
        for key, (view, timer) in list(self.held.items()):
            if view.mounted.origin == origin:
                timer.cancel()
                del self.held[key]
                if view.handle in self.views.live:
                    self.views.discard(view, "its origin's renderer did not answer a teardown")
        self._released("dropped")

    def _key(self, template: Template) -> str:
        """One per template as its server serves it: the same HTML from another server, or with another
        policy, runs on another origin or under another CSP, so it is another view."""
        return f"{self.views.prestarted.need(template)} {template.sha256}"

    def _wanted(self, template: Template) -> bool:
        limits = self.views.host.limits
        if template.compat or self._key(template) in self.held or len(self.held) >= limits.prebooted_views_per_tab:
            return False
        if self.views.host.hung_lately(template):
            return False
        held_bytes = sum(len(view.session.spec.html) for view, _ in self.held.values())
        return held_bytes + len(template.html) <= limits.prebooted_views_max_bytes

    def _lapse(self, view: ViewDriver, entry: ToolEntry, template: Template) -> None:
        key = self._key(template)
        if self.held.get(key, (None,))[0] is not view:
            return
        del self.held[key]
        self._released("lapsed")
        if view.handle in self.views.live:
            self.views.discard(view, f"not taken within prebooted_view_max_age "
                                     f"({self.views.host.limits.prebooted_view_max_age:g} s)")
        self._lapsed[key] = (entry, template)

    def _released(self, how: metrics.PrebootEnd | None) -> None:
        """The metrics hear how many are held now, and how those no longer held went."""
        change, self._counted = len(self.held) - self._counted, len(self.held)
        metrics.PREBOOTED_HELD.inc(change)
        if how is not None and change < 0:
            metrics.PREBOOTED_ENDED.labels(how).inc(-change)

    def wake(self) -> None:
        """The person is about to call a tool: boot again what lapsed unused."""
        lapsed, self._lapsed = self._lapsed, {}
        for entry, template in lapsed.values():
            self.boot(entry, template)
