"""The views of one tab: mount them, route to each what the page relays, and keep track of which are live.

Each live view has its `ViewDriver` (`driver.py`), which its session's effects go through;
this registry mounts them, hands them over for calls (booted ahead, put away and back), and
hears from each driver when its view is up or has ended (`ViewLifecycle`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import replace
from typing import Any

from ...policy.csp import allow_attribute, build_view_csp
from ...policy.review import csp_entry_for
from ...telemetry import metrics
from ...values.templates import Template
from ...values.tools import ToolEntry
from ...views import effects as fx
from ...views import events as ev
from ...views.context import HostEnvironment
from ...views.session import ViewSession
from ..process.compat import view_html
from ..process.core import Host
from ..process.viewspecs import server_tools, view_spec
from . import frames as f
from .audit import Auditor
from .consents import Consents
from .driver import ViewDriver, ViewNews, ViewPorts
from .lazy import LazyViews
from .page import Page
from .pagetemplates import PageTemplates
from .ports import ToolRunner
from .prebooted import PrebootedViews
from .prestarted import PrestartedProxies

VIEW_CSP = "view-csp"  # the audit trail's record of the policy a view runs under


class LiveViews:
    def __init__(self, host: Host, env: HostEnvironment, page: Page, audit: Auditor, consents: Consents,
                 tools: ToolRunner, news: ViewNews, live: dict[str, ViewDriver]) -> None:
        self.host = host
        self.env = env
        self.page = page
        self.audit = audit
        self.consents = consents
        self.news = news
        self.ports = ViewPorts(host, page, audit, consents, tools, news, self, PageTemplates())
        self.live = live  # by handle; the tab's inspector reads it too
        self.lazy = LazyViews(self)
        self.prestarted = PrestartedProxies(host, page)
        self.prebooted = PrebootedViews(self)
        self.closed = False
        self._tasks: set[asyncio.Task[None]] = set()
        host.origin_hung.add(self.origin_hung)

    # ---- mounting ------------------------------------------------------------------------------

    def mount(self, call_id: int | None, entry: ToolEntry, template: Template, trust: str = "unchecked",
              instance: str | None = None, widget_state: dict[str, Any] | None = None,
              replaces: str | None = None, pinned: bool = False, conversation: str | None = None,
              prebooted: bool = False) -> ViewDriver:
        """Mount a view of ``template`` for a call; with ``prebooted``, for no call yet: it boots hidden and
        waits at ui/initialize until `take_prebooted` gives it one."""
        host = self.host
        conversation = conversation or self.audit.conversation
        prestarted = self.prestarted.take(template)
        mounted = host.register_view(template, lambda report: self.csp_violation(mounted.handle, report),
                                     tool=entry.name, conversation=conversation, prestarted=prestarted)
        allow = allow_attribute(template.permissions, host.granted_permissions)
        policy = build_view_csp(template.csp)  # as applied, without its report address (a signed handle)
        # Each view has its own copy of the environment: the inspector may change one view's context only.
        session = ViewSession(view_spec(host, call_id, entry, template, widget_state), replace(self.env), host.limits)
        session.held_back = prebooted
        view = ViewDriver(mounted, session, self.ports, call_id, instance, trust=trust, pinned=pinned,
                          conversation=conversation)
        self.live[mounted.handle] = view
        metrics.LIVE_VIEWS.inc()
        self.page.send(f.ViewMount(
            view=mounted.handle, call_id=call_id, server=entry.server, tool=entry.name,
            proxy_url=host.proxy_url(mounted.handle), sandbox_origin=mounted.origin,
            prefers_border=template.prefers_border is not False, permissions=allow,
            template_sha256=template.sha256, trust=None if prebooted else trust, warnings=list(template.warnings),
            replaces=replaces, pinned=pinned,
            prestarted=prestarted.handle if prestarted is not None and prestarted.handle == mounted.handle else None,
            prebooted=prebooted, csp=policy, connect_domains=list(template.csp.connect_domains)))
        # Once per view: the policy it runs under, and what it widened (the inspector shows it beside its messages).
        self.audit("host->view", VIEW_CSP, server=entry.server, view=mounted.handle, decision="allowed", reason=policy,
                   payload=template.csp.to_json())
        if not prebooted:
            self.lazy.mounted(view)
        # The template goes now, while the proxy loads; the page hands it over on the proxy's ready.
        view.drive(ev.SendResource())
        return view

    def take_prebooted(self, call_id: int, entry: ToolEntry, template: Template, trust: str,
                       instance: str | None) -> ViewDriver | None:
        """The view booted ahead for ``template``, now this call's (shown under it), or None."""
        view = self.prebooted.take(template)
        if view is None:
            return None
        if view.server != entry.server or view.mounted.origin != self.host.sandbox.origin_for(template.server,
                                                                                           template.domain):
            # Never another server's view (its origin holds that server's storage): start afresh.
            self.discard(view, "booted for another server")
            return None
        view.call_id, view.instance, view.trust = call_id, instance, trust
        self.live[view.handle] = self.live.pop(view.handle)  # in the order views were given calls (`later.py`)
        self.lazy.mounted(view)
        self.page.send(f.ViewAdopt(view=view.handle, call_id=call_id, server=entry.server, tool=entry.name,
                                   trust=trust))
        view.drive(ev.Take(view_spec(self.host, call_id, entry, template, None)))
        return view

    def replay(self, view: ViewDriver, arguments: dict[str, Any] | None, result: dict[str, Any] | None,
               cancelled: str | None) -> None:
        """Give a view mounted again what its call gave the one before it."""
        if arguments is None:
            return
        view.drive(ev.ToolInput(arguments))
        if result is not None:
            view.drive(ev.ToolResult(result))
        elif cancelled is not None:
            view.drive(ev.ToolCancelled(cancelled))

    def remount(self, old: ViewDriver, template: Template, trust: str) -> ViewDriver:
        """The same view from a new template, in the old one's place, given what the old one was given."""
        assert old.call_id is not None
        state = old.session.model_context
        new = self.mount(old.call_id, old.session.spec.tool, template, trust, instance=old.instance,
                         widget_state=state.structured_content if state else None, replaces=old.handle)
        old.session.handle(ev.Fail("replaced by a new version of its template"))  # its place goes to the new one
        self.forget(old, remove=False)
        session = old.session
        self.replay(new, session.last_input, session.last_result, session.last_cancelled)
        return new

    def mount_failed(self, call_id: int, server: str, tool: str, error: str) -> None:
        """A container with no frame, so the error shows where the view would have been."""
        handle = f"failed-{call_id}"
        self.page.send(f.ViewMount(view=handle, call_id=call_id, server=server, tool=tool, proxy_url=None,
                                   sandbox_origin=self.host.sandbox.origin_for(server), prefers_border=True,
                                   permissions=""))
        self.page.send(f.ViewStateFrame(view=handle, state="error", error=error))

    # ---- from the page and the servers -----------------------------------------------------------

    def message(self, handle: str, message: Any) -> None:
        view = self.live.get(handle)
        if view is not None:
            view.from_view(message)

    def csp_violation(self, handle: str, report: dict[str, Any]) -> None:
        """A CSP report from the browser: say which request was blocked and which declaration would allow it."""
        view = self.live.get(handle)
        if view is None:
            return
        blocked = str(report.get("blocked-uri") or report.get("blockedURL") or "")[:500]
        directive = str(report.get("effective-directive") or report.get("violated-directive") or "")[:100]
        entry = csp_entry_for(blocked, directive) if blocked else None
        hint = (f"; declare {entry[1]!r} in _meta.ui.csp.{entry[0]} to allow it" if entry
                else "; no _meta.ui.csp entry can allow this")
        text = f"CSP blocked {blocked or 'a request'} ({directive or 'unknown directive'}){hint}"
        self.page.send(f.ViewLog(view=handle, level="error", text=text))
        self.audit("view->host", "csp-violation", server=view.server, view=handle, decision="refused", reason=text,
                   payload=report)

    def close(self, handle: str, reason: str) -> None:
        if self.lazy.parked.pop(handle, None) is not None:  # a placeholder: nothing runs to tear down
            self.page.send(f.ViewRemove(view=handle))
            return
        view = self.live.get(handle)
        if view is not None:
            view.drive(ev.Teardown(reason))

    def display_mode(self, handle: str, mode: str) -> None:
        view = self.live.get(handle)
        if view is not None:
            view.drive(ev.DisplayModeRequested(mode))

    def container(self, handle: str, mode: str, width: int, height: int) -> None:
        view = self.live.get(handle)
        if view is not None:
            view.drive(ev.ContainerMeasured(mode, width, height))

    def override_context(self, handle: str, display_mode: str | None, **changes: Any) -> None:
        """The inspector's controls, for one view: its host context changes live."""
        view = self.live.get(handle)
        if view is None:
            return
        if changes:
            view.drive(ev.HostContextChanged(changes))
        if display_mode is not None:
            view.drive(ev.DisplayModeRequested(display_mode))
        env = view.session.env
        if "container_width" in changes or "container_height" in changes:
            self.page.send(f.ViewSize(view=handle, width=env.container_width, height=env.container_height,
                                      fixed=True))

    def context_changed(self, **changes: Any) -> None:
        for view in list(self.live.values()):
            view.drive(ev.HostContextChanged(changes))

    def servers_changed(self) -> None:
        """A server may have changed its tools: its views may call what it offers now, and are told."""
        for view in list(self.live.values()):
            spec = view.session.spec
            tools = server_tools(self.host, view.server)
            if tools["server_tools"] != spec.server_tools or tools["all_tools"] != spec.all_tools \
                    or tools["view_tools"] != spec.view_tools:
                view.drive(ev.ServerToolsChanged(replace(spec, **tools)))
        self.prestarted.refresh()

    def boot_accepted(self) -> None:
        """Boot ahead, in the background, the templates the person has already accepted (`PrebootedViews`)."""
        self._background(self.prebooted.boot_accepted())

    def _background(self, work: Coroutine[Any, Any, None]) -> None:
        if self.closed:
            work.close()
            return
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def intent(self, server: str | None, tool: str | None) -> None:
        """The person is about to call a tool: the views booted ahead that lapsed boot again, and the template
        of the tool named goes to the page now, so a view of it mounts without carrying it, and its view boots
        ahead (`PrebootedViews.boot_named`). Only a template read when its server connected, of a tool this
        person may call, not on a block-list."""
        self.prebooted.wake()
        template = self.host.servers.template_read(server, tool) if server and tool else None
        if template is None or (self.host.trust is not None and self.host.trust.blocked(template)):
            return
        ahead = self.ports.page_templates.ahead(template, view_html(template))
        if ahead is not None:
            self.page.send(ahead)
        entry = self.host.servers.tool(server, tool) if server and tool else None
        if entry is not None:
            self._background(self.prebooted.boot_named(entry, template))

    def discard(self, view: ViewDriver, reason: str) -> None:
        """End a view that was never shown (booted ahead, not taken): no teardown, its frame goes."""
        view.session.handle(ev.Fail(reason))  # nobody saw it: nothing to tell the page but that it goes
        self.forget(view, remove=True)

    def close_all(self, reason: str) -> None:
        """The tab is gone: drop every view, and boot none ahead any more."""
        self.closed = True
        self.host.origin_hung.discard(self.origin_hung)
        self.drop_all(reason)

    def origin_hung(self, origin: str) -> None:
        """Nothing started ahead on ``origin`` (proxy, booted view) is kept: its renderer may hang."""
        self.prebooted.drop_origin(origin)
        self.prestarted.drop_origin(origin)

    def pinned_instances(self) -> set[str]:
        return {v.instance for v in self.live.values() if v.pinned and v.instance}

    def drop_all(self, reason: str, keep_pinned: bool = False) -> None:
        """The page is going away or showing another conversation: nobody can answer a teardown. Views
        pinned to the side panel stay when only the conversation changes."""
        self.prebooted.clear()
        for view in list(self.live.values()):
            if keep_pinned and view.pinned:
                continue
            view.session.handle(ev.Fail(reason))  # nobody is there to hear it: its effects go nowhere
            self.forget(view, remove=False)
        self.lazy.reset()
        self.consents.clear_views()

    # ---- what each driver tells of its view (ViewLifecycle) ---------------------------------------------

    def ready(self, view: ViewDriver) -> None:
        self.prebooted.view_up(view)
        self.lazy.ready()

    def ended(self, view: ViewDriver, change: fx.StateChanged) -> None:
        if change.state == fx.ViewState.CLOSED and self.lazy.closed(view):
            return  # put away out of sight: the page keeps a placeholder, not a closed view
        self.page.send(f.ViewStateFrame(view=view.handle, state=str(change.state), error=change.error))
        # A failed view stays in sight with its error, unless nobody saw it (booted ahead, never taken).
        self.forget(view, remove=change.state == fx.ViewState.CLOSED or self.prebooted.failed(view))

    def forget(self, view: ViewDriver, remove: bool) -> None:
        view.stop()
        if self.live.pop(view.handle, None) is not None:
            metrics.LIVE_VIEWS.dec()
        self.lazy.forget(view.handle)
        self.prebooted.view_gone(view)
        self.host.unregister_view(view.handle)
        self.news.view_gone(view)
        if remove:
            self.page.send(f.ViewRemove(view=view.handle))
