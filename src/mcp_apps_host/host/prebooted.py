"""Views booted ahead: for a template the person has already been shown in this tab, the next view is
mounted hidden before any call needs it, so its app is parsed and started when a call comes.

It waits at ui/initialize: its `toolInfo`, tool input and result exist only once a call takes it
(`Views.take_prebooted`). Bounded by `prebooted_views_per_tab` and `prebooted_views_max_bytes`, one
per template, and replaced by a fresh one after `prebooted_view_max_age` (before the app's SDK gives up
waiting for its answer). Only the host's mount path starts one, after the template passed its checks;
a template held back for the person's review never gets one.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from ..values.templates import Template
from ..values.tools import ToolEntry
from ..views.effects import ViewState
from .core import Host
from .live import LiveView
from .prepared import PreparedProxies


class _Views(Protocol):
    host: Host
    live: dict[str, LiveView]
    prepared: PreparedProxies
    closed: bool

    def mount(self, call_id: int | None, entry: ToolEntry, template: Template, trust: str = ...,
              instance: str | None = ..., widget_state: None = ..., replaces: str | None = ...,
              pinned: bool = ..., conversation: str | None = ..., prebooted: bool = ...) -> LiveView: ...

    def discard(self, view: LiveView, reason: str) -> None: ...


# After the view that asked is up: the app just shown gets the CPU first, the next one boots after.
BOOT_DELAY = 1.0


class PrebootedViews:
    def __init__(self, views: _Views) -> None:
        self.views = views
        self.held: dict[str, tuple[LiveView, asyncio.TimerHandle]] = {}  # by `_key`
        self._after: dict[str, tuple[ToolEntry, Template]] = {}  # booted once this view is up (by handle)

    def boot_after(self, view: LiveView, entry: ToolEntry, template: Template) -> None:
        """Once ``view`` is up (and a moment later, so the two do not race for the CPU), load the next
        proxy for its origin and boot the next view of ``template``."""
        self._after[view.handle] = (entry, template)

    def view_up(self, view: LiveView) -> None:
        after = self._after.pop(view.handle, None)
        if after is not None:
            asyncio.get_running_loop().call_later(BOOT_DELAY, self._next, *after)

    def _next(self, entry: ToolEntry, template: Template) -> None:
        if self.views.closed:
            return
        self.views.prepared.prepare(template)
        self.boot(entry, template)

    def view_gone(self, view: LiveView) -> None:
        self._after.pop(view.handle, None)

    def boot(self, entry: ToolEntry, template: Template) -> None:
        if self.views.closed or not self._wanted(template):
            return
        view = self.views.mount(None, entry, template, prebooted=True)
        loop = asyncio.get_running_loop()
        timer = loop.call_later(self.views.host.limits.prebooted_view_max_age, self._recycle, view, entry, template)
        self.held[self._key(template)] = (view, timer)

    def take(self, template: Template) -> LiveView | None:
        held = self.held.pop(self._key(template), None)
        if held is None:
            return None
        view, timer = held
        timer.cancel()
        if view.handle not in self.views.live or view.session.state != ViewState.RESOURCE_SENT:
            return None  # it failed while it waited, or its conversation was closed
        return view

    def clear(self) -> None:
        for view, timer in self.held.values():
            timer.cancel()
            if view.handle in self.views.live:
                self.views.discard(view, "the booted-ahead view was not needed")
        self.held.clear()
        self._after.clear()

    def drop_origin(self, origin: str) -> None:
        """End the views booted ahead on ``origin`` (its renderer may hang)."""
        for key, (view, timer) in list(self.held.items()):
            if view.mounted.origin == origin:
                timer.cancel()
                del self.held[key]
                if view.handle in self.views.live:
                    self.views.discard(view, "its origin's renderer did not answer a teardown")

    def _key(self, template: Template) -> str:
        """One per template as its server serves it: the same HTML from another server, or with another
        policy, runs on another origin or under another CSP, so it is another view."""
        return f"{self.views.prepared.need(template)} {template.sha256}"

    def _wanted(self, template: Template) -> bool:
        limits = self.views.host.limits
        if template.compat or self._key(template) in self.held or len(self.held) >= limits.prebooted_views_per_tab:
            return False
        held_bytes = sum(len(view.session.spec.html) for view, _ in self.held.values())
        return held_bytes + len(template.html) <= limits.prebooted_views_max_bytes

    def _recycle(self, view: LiveView, entry: ToolEntry, template: Template) -> None:
        if self.held.get(self._key(template), (None,))[0] is not view:
            return
        del self.held[self._key(template)]
        if view.handle in self.views.live:
            self.views.discard(view, f"not taken within prebooted_view_max_age "
                                     f"({self.views.host.limits.prebooted_view_max_age:g} s)")
        self.boot(entry, template)
