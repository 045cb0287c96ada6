"""Long conversations stay light: beyond `max_live_views`, views far out of sight are torn down
(`ui/resource-teardown`, waiting for the reply or `teardown_timeout`) and leave a placeholder; when the
placeholder comes into sight the view is mounted again and given its input and result once more.

The page says which views are in (or near) sight (`view-visible`); this module chooses which views
to put away and brings them back. A view in sight, out of the inline flow (fullscreen, pip), with
requests in flight, or whose call has not ended is never put away.
"""

from __future__ import annotations

import itertools
import logging
import secrets
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

from ...values.templates import Template
from ...values.tools import ToolEntry
from ...views import events as ev
from ...views.effects import ViewState
from ..process.core import Host
from . import frames as f
from .driver import ViewDriver
from .page import Page

log = logging.getLogger("mcp_apps_host.lazy")

# Mount the view again in the placeholder's place (the handle it replaces); None if it cannot be.
Restore = Callable[[str], Awaitable[ViewDriver | None]]

PARK_REASON = "out of sight: the conversation keeps only max_live_views views running"


class _Views(Protocol):
    """What this module uses of the tab's `LiveViews`."""

    host: Host
    page: Page
    live: dict[str, ViewDriver]

    def mount(self, call_id: int, entry: ToolEntry, template: Template, trust: str = ...,
              instance: str | None = ..., widget_state: dict[str, Any] | None = ...,
              replaces: str | None = ...) -> ViewDriver: ...

    def replay(self, view: ViewDriver, arguments: dict[str, Any] | None, result: dict[str, Any] | None,
               cancelled: str | None) -> None: ...

    def forget(self, view: ViewDriver, remove: bool) -> None: ...


def to_tear_down(live: Iterable[str], last_seen: dict[str, int], visible: set[str], keep: set[str],
                 max_live: int) -> list[str]:
    """The views to put away so that at most ``max_live`` run: the longest out of sight first, never
    one in sight or one of ``keep``. ``live`` in mount order (the oldest first on a tie)."""
    live = list(live)
    excess = len(live) - max_live
    if excess <= 0:
        return []
    order = {h: i for i, h in enumerate(live)}
    candidates = [h for h in live if h not in visible and h not in keep]
    candidates.sort(key=lambda h: (last_seen.get(h, -1), order[h]))
    return candidates[:excess]


class LazyViews:
    def __init__(self, views: _Views) -> None:
        self.views = views
        self.parked: dict[str, Restore] = {}  # placeholder handle -> how to mount it again
        self.visible: set[str] = set()
        self.last_seen: dict[str, int] = {}
        self.parking: set[str] = set()  # torn down to be put away, waiting for the view's reply
        self._clock = itertools.count()

    @property
    def max_live(self) -> int:
        return self.views.host.limits.max_live_views

    # ---- what the page sees ----------------------------------------------------------------------

    def mounted(self, view: ViewDriver) -> None:
        """A new view is drawn where the person is looking (the end of the conversation, or a placeholder
        they scrolled to) until the page says otherwise."""
        self.visible.add(view.handle)
        self.last_seen[view.handle] = next(self._clock)
        self.enforce()

    def ready(self) -> None:
        """A view kept running while it started may go now: mounted on the way past (a placeholder the
        page scrolled through), it would otherwise run out of sight until the next view came or went."""
        self.enforce()

    async def visibility(self, handle: str, visible: bool) -> None:
        if handle in self.parked:
            if visible:
                await self.unpark(handle)
            return
        if handle not in self.views.live:
            return
        self.last_seen[handle] = next(self._clock)
        if visible:
            self.visible.add(handle)
        else:
            self.visible.discard(handle)
            self.enforce()

    def _kept(self, view: ViewDriver) -> bool:
        """Views that must keep running whatever the count."""
        s = view.session
        return (view.pinned or s.state != ViewState.READY or s.display_mode != "inline" or s.busy()
                or (s.last_input is not None and s.last_result is None and s.last_cancelled is None))

    def enforce(self) -> None:
        running = [h for h, v in self.views.live.items()
                   if h not in self.parking and v.session.state != ViewState.TEARING_DOWN]
        keep = {h for h in running if self._kept(self.views.live[h])}
        for handle in to_tear_down(running, self.last_seen, self.visible, keep, self.max_live):
            self.park(self.views.live[handle])

    # ---- putting away and bringing back ----------------------------------------------------------

    def park(self, view: ViewDriver) -> None:
        self.parking.add(view.handle)
        view.drive(ev.Teardown(PARK_REASON))

    def closed(self, view: ViewDriver) -> bool:
        """The view's teardown finished: True when it was being put away (it now waits as a placeholder)."""
        if view.handle not in self.parking:
            return False
        self.parking.discard(view.handle)
        restore = self._restore_live(view)
        self.views.forget(view, remove=False)
        self.parked[view.handle] = restore
        self.views.page.send(f.ViewParked(view=view.handle))
        return True

    def add_placeholder(self, call_id: int, server: str, tool: str, sandbox_origin: str, restore: Restore,
                        height: int | None = None) -> str:
        """A view of a replayed conversation drawn as a placeholder only (of the ``height`` its frame last had,
        when known), mounted when it comes into sight."""
        handle = secrets.token_urlsafe(18)
        self.parked[handle] = restore
        self.views.page.send(f.ViewMount(view=handle, call_id=call_id, server=server, tool=tool, proxy_url=None,
                                         sandbox_origin=sandbox_origin, prefers_border=True, permissions="",
                                         parked=True, height=height))
        return handle

    async def unpark(self, handle: str) -> ViewDriver | None:
        restore = self.parked.pop(handle, None)
        if restore is None:
            return None
        try:
            return await restore(handle)
        except Exception:  # a view that cannot come back must not take the tab with it
            log.exception("could not mount a view again")
            self.views.page.send(f.ViewStateFrame(view=handle, state="error",
                                                  error="This view could not be mounted again."))
            return None

    def _restore_live(self, view: ViewDriver) -> Restore:
        """What it takes to mount a view put away from this tab: the same template, input and result."""
        session, views = view.session, self.views
        spec, template, trust = session.spec, view.mounted.template, view.trust
        given = (session.last_input, session.last_result, session.last_cancelled)
        state = session.model_context.structured_content if session.model_context else spec.widget_state
        call_id, instance = view.call_id, view.instance

        async def restore(replaces: str) -> ViewDriver | None:
            if call_id is None:
                return None
            new = views.mount(call_id, spec.tool, template, trust, instance=instance, widget_state=state,
                              replaces=replaces)
            views.replay(new, *given)
            return new

        return restore

    def forget(self, handle: str) -> None:
        self.visible.discard(handle)
        self.last_seen.pop(handle, None)

    def reset(self) -> None:
        """Another conversation is shown: its placeholders are not this one's."""
        self.parked.clear()
        self.visible.clear()
        self.last_seen.clear()
        self.parking.clear()
