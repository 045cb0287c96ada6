"""The views of one tab: mount them, hand them what the page relays, carry out their effects.

`ViewSession` (sans-IO) makes every protocol decision; this module does the I/O it
asks for, one handler per kind of effect (the table at the end): frames to the page,
requests to the view's own server (`proxied.py`), timers, consent questions.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from ..policy.csp import allow_attribute, granted_permissions
from ..policy.review import csp_entry_for
from ..values.protocol import SANDBOX_RESOURCE_READY
from ..values.templates import Template
from ..values.tools import ToolEntry
from ..views import effects as fx
from ..views.context import HostEnvironment, ViewSpec
from ..views.jsonrpc import json_text
from ..views.session import ViewSession
from . import frames as f
from .audit import Auditor
from .compat import view_html
from .consents import Consents
from .core import Host, MountedView
from .page import Page
from .proxied import Proxied, ViewCallRunner

log = logging.getLogger("mcp_apps_host.views")


@dataclass
class LiveView:
    mounted: MountedView
    session: ViewSession
    call_id: int | None
    instance: str | None = None  # the conversation's id for this view, kept with its state
    tasks: dict[Any, asyncio.Task[None]] = field(default_factory=dict)  # proxied requests by view request id
    timers: list[asyncio.TimerHandle] = field(default_factory=list)

    @property
    def handle(self) -> str:
        return self.mounted.handle

    @property
    def server(self) -> str:
        return self.session.spec.server


class ViewListener(Protocol):
    """What the conversation wants to hear about its views."""

    def chat_message(self, view: LiveView, message: fx.PostChatMessage) -> None: ...

    def model_context(self, view: LiveView, update: fx.ModelContextUpdated) -> None: ...

    def view_gone(self, view: LiveView) -> None: ...


class Views:
    def __init__(self, host: Host, env: HostEnvironment, page: Page, audit: Auditor, consents: Consents,
                 run_view_call: ViewCallRunner, listener: ViewListener) -> None:
        self.host = host
        self.env = env
        self.page = page
        self.audit = audit
        self.consents = consents
        self.listener = listener
        self.proxied = Proxied(host, audit, run_view_call, self.apply)
        self.live: dict[str, LiveView] = {}
        self._audited: object = None  # the decision already written with its message

    # ---- mounting ------------------------------------------------------------------------------

    def mount(self, call_id: int, entry: ToolEntry, template: Template, trust: str = "unchecked",
              instance: str | None = None, widget_state: dict[str, Any] | None = None,
              replaces: str | None = None) -> LiveView:
        host = self.host
        mounted = host.register_view(template, lambda report: self.csp_violation(mounted.handle, report),
                                     tool=entry.name, conversation=self.audit.conversation)
        conn = host.servers.connections.get(entry.server)
        tools = list(conn.tools.values()) if conn else []
        allow = allow_attribute(template.permissions, host.granted_permissions)
        spec = ViewSpec(
            server=entry.server,
            tool=entry,
            html=view_html(template),
            call_id=call_id,
            csp=template.csp.to_json(),
            permissions=granted_permissions(template.permissions, host.granted_permissions),
            allow=allow,
            app_tools=frozenset(t.name for t in tools if t.app_visible),
            all_tools=frozenset(t.name for t in tools),
            decide_tool_call=lambda name: self._decide_tool_call(entry.server, name),
            max_download_bytes=host.limits.max_download_bytes,
            decide_sampling=lambda: self._decide_sampling(entry.server),
            sampling_enabled=self._sampling_enabled(entry.server),
            compat=template.compat,
            widget_state=widget_state,
        )
        # Each view has its own copy of the environment: the inspector may change one view's context only.
        view = LiveView(mounted, ViewSession(spec, replace(self.env), host.limits), call_id, instance)
        self.live[mounted.handle] = view
        self.page.send(f.ViewMount(
            view=mounted.handle, call_id=call_id, server=entry.server, tool=entry.name,
            proxy_url=host.proxy_url(mounted.handle), sandbox_origin=mounted.origin,
            prefers_border=template.prefers_border is not False, permissions=allow,
            template_sha256=template.sha256, trust=trust, warnings=list(template.warnings), replaces=replaces))
        return view

    def remount(self, old: LiveView, template: Template, trust: str) -> LiveView:
        """The same view from a new template, in the old one's place, given what the old one was given."""
        assert old.call_id is not None
        state = old.session.model_context
        new = self.mount(old.call_id, old.session.spec.tool, template, trust, instance=old.instance,
                         widget_state=state.structured_content if state else None, replaces=old.handle)
        old.session.fail("replaced by a new version of its template")
        self._forget(old, remove=False)
        session = old.session
        if session.last_input is not None:
            self.apply(new, new.session.tool_input(session.last_input))
            if session.last_result is not None:
                self.apply(new, new.session.tool_result(session.last_result))
            elif session.last_cancelled is not None:
                self.apply(new, new.session.tool_cancelled(session.last_cancelled))
        return new

    def mount_failed(self, call_id: int, server: str, tool: str, error: str) -> None:
        """A container with no frame, so the error shows where the view would have been."""
        handle = f"failed-{call_id}"
        self.page.send(f.ViewMount(view=handle, call_id=call_id, server=server, tool=tool, proxy_url=None,
                                   sandbox_origin=self.host.sandbox.origin_for(server), prefers_border=True,
                                   permissions=""))
        self.page.send(f.ViewStateFrame(view=handle, state="error", error=error))

    def _decide_tool_call(self, server: str, name: str) -> tuple[str, str, bool]:
        entry = self.host.servers.tool(server, name)
        if entry is None:
            return "deny", f"server {server!r} has no tool {name!r}", False
        decision, reason = self.host.consent.decide(server, entry, "view")
        return decision, reason, decision == "ask" and self.host.consent.can_remember(server, name)

    def _sampling_enabled(self, server: str) -> bool:
        settings = self.host.sampling.settings.get(server)
        return self.host.agent is not None and settings is not None and settings.enabled

    def _decide_sampling(self, server: str) -> tuple[str, str]:
        if self.host.agent is None:
            return "deny", "no model is configured (--model)"
        return self.host.sampling.check(server)

    # ---- from the page ---------------------------------------------------------------------------

    def message(self, handle: str, message: Any) -> None:
        view = self.live.get(handle)
        if view is None:
            return
        effects = view.session.receive(message)
        # One row for the message, carrying what was decided about it.
        verdict = next((e for e in effects if isinstance(e, (fx.Refused, fx.Decided))), None)
        decision = "refused" if isinstance(verdict, fx.Refused) else verdict.decision if verdict else None
        raw = message if isinstance(message, dict) else {"value": message}
        method = raw.get("method")
        self.audit("view->host", method if isinstance(method, str) else None, server=view.server, view=handle,
                   msg_id=raw.get("id"), decision=decision, reason=verdict.reason if verdict else None, payload=raw)
        self._audited = verdict
        try:
            self.apply(view, effects)
        finally:
            self._audited = None

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
        view = self.live.get(handle)
        if view is not None:
            self.apply(view, view.session.teardown(reason))

    def display_mode(self, handle: str, mode: str) -> None:
        view = self.live.get(handle)
        if view is not None:
            self.apply(view, view.session.set_display_mode(mode))

    def override_context(self, handle: str, display_mode: str | None, **changes: Any) -> None:
        """The inspector's controls, for one view: its host context changes live."""
        view = self.live.get(handle)
        if view is None:
            return
        if changes:
            self.apply(view, view.session.host_context_changed(**changes))
        if display_mode is not None:
            self.apply(view, view.session.switch_display_mode(display_mode))
        env = view.session.env
        if "container_width" in changes or "container_height" in changes:
            self.page.send(f.ViewSize(view=handle, width=env.container_width, height=env.container_height))

    def context_changed(self, **changes: Any) -> None:
        for view in list(self.live.values()):
            self.apply(view, view.session.host_context_changed(**changes))

    def drop_all(self, reason: str) -> None:
        """The page is going away or showing another conversation: nobody can answer a teardown."""
        for view in list(self.live.values()):
            view.session.fail(reason)
            self._forget(view, remove=False)
        self.consents.clear_views()

    # ---- effects ---------------------------------------------------------------------------------

    def apply(self, view: LiveView, effects: list[fx.Effect]) -> None:
        for effect in effects:
            _HANDLERS[type(effect)](self, view, effect)

    def _post(self, view: LiveView, effect: fx.PostToView) -> None:
        msg = effect.message
        if msg.get("method") != SANDBOX_RESOURCE_READY:  # the template is on record by hash
            self.audit("host->view", msg.get("method"), server=view.server, view=view.handle, msg_id=msg.get("id"),
                       payload=msg)
        self.page.send(f.ViewPost(view=view.handle, message=msg))

    def _decided(self, view: LiveView, effect: fx.Decided) -> None:
        if effect is not self._audited:
            self.audit("view->host", effect.method, server=view.server, view=view.handle, msg_id=effect.request_id,
                       decision=effect.decision, reason=effect.reason)

    def _refused(self, view: LiveView, effect: fx.Refused) -> None:
        log.info("view %s (%s): refused %s: %s", view.handle[:8], view.server, effect.method, effect.reason)
        if effect is not self._audited:
            self.audit("view->host", effect.method, server=view.server, view=view.handle, decision="refused",
                       reason=effect.reason)
        self.page.send(f.ViewLog(view=view.handle, level="warning",
                                 text=f"refused {effect.method or 'message'}: {effect.reason}"))

    def _state(self, view: LiveView, effect: fx.StateChanged) -> None:
        self.page.send(f.ViewStateFrame(view=view.handle, state=str(effect.state), error=effect.error))
        if effect.state in (fx.ViewState.CLOSED, fx.ViewState.ERROR):
            self._forget(view, remove=effect.state == fx.ViewState.CLOSED)

    def _ask(self, view: LiveView, ask: fx.AskConsent) -> None:
        def answered(allow: bool, remember: bool) -> None:
            if view.handle not in self.live:
                return
            if allow and remember and ask.kind == "tool-call" and ask.can_remember:
                self.host.consent.remember_allow(view.server, ask.subject)
                self.audit("view->host", "tools/call", server=view.server, view=view.handle, msg_id=ask.token,
                           decision="consented", reason=f"the person chose always allow {view.server}/{ask.subject}")
            self.apply(view, view.session.answer_consent(ask.token, allow))

        question = {"kind": ask.kind, "server": view.server, "title": ask.title, "detail": ask.detail,
                    "subject": ask.subject, "can_remember": ask.can_remember, **ask.extra}
        self.consents.ask(question, view.handle, answered)

    def _model_context(self, view: LiveView, effect: fx.ModelContextUpdated) -> None:
        summary = json_text({"content": effect.content, "structuredContent": effect.structured_content})
        self.page.send(f.ViewContext(view=view.handle, text=summary[:2000]))
        self.listener.model_context(view, effect)

    def _timer(self, view: LiveView, seconds: float, fire: Callable[[], list[fx.Effect]]) -> None:
        loop = asyncio.get_running_loop()
        view.timers.append(loop.call_later(seconds, lambda: self.apply(view, fire())))

    def _forget(self, view: LiveView, remove: bool) -> None:
        self.consents.withdraw(view.handle)
        for timer in view.timers:
            timer.cancel()
        for task in view.tasks.values():
            task.cancel()
        view.tasks.clear()
        self.live.pop(view.handle, None)
        self.host.unregister_view(view.handle)
        self.listener.view_gone(view)
        if remove:
            self.page.send(f.ViewRemove(view=view.handle))


def _start(view: LiveView, request_id: Any, work: Any) -> None:
    view.tasks[request_id] = asyncio.create_task(work)


def _cancel(view: LiveView, request_id: Any) -> None:
    task = view.tasks.pop(request_id, None)
    if task is not None:
        task.cancel()


_Handler = Callable[[Views, LiveView, Any], None]
_HANDLERS: dict[type, _Handler] = {
    fx.PostToView: Views._post,
    fx.Decided: Views._decided,
    fx.Refused: Views._refused,
    fx.StateChanged: Views._state,
    fx.AskConsent: Views._ask,
    fx.ModelContextUpdated: Views._model_context,
    fx.PostChatMessage: lambda vs, v, e: vs.listener.chat_message(v, e),
    fx.ProxyToolCall: lambda vs, v, e: _start(v, e.request_id, vs.proxied.tool_call(v, e)),
    fx.ProxyResourceRead: lambda vs, v, e: _start(v, e.request_id, vs.proxied.resource_read(v, e)),
    fx.Sample: lambda vs, v, e: _start(v, e.request_id, vs.proxied.sample(v, e)),
    fx.CancelProxied: lambda vs, v, e: _cancel(v, e.request_id),
    fx.Download: lambda vs, v, e: vs.page.send(f.Download(view=v.handle, filename=e.filename, mime_type=e.mime_type,
                                                          text=e.text, blob=e.blob)),
    fx.DisplayModeChanged: lambda vs, v, e: vs.page.send(f.ViewDisplayMode(view=v.handle, mode=e.mode)),
    fx.Resize: lambda vs, v, e: vs.page.send(f.ViewSize(view=v.handle, width=e.width, height=e.height)),
    fx.Log: lambda vs, v, e: vs.page.send(f.ViewLog(view=v.handle, level=e.level, text=e.text)),
    fx.OpenLink: lambda vs, v, e: vs.page.send(f.OpenLink(url=e.url)),
    fx.StartInitTimer: lambda vs, v, e: vs._timer(v, e.seconds, v.session.init_timed_out),
    fx.StartTeardownTimer: lambda vs, v, e: vs._timer(v, e.seconds, v.session.teardown_timed_out),
}
