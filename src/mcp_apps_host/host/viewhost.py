"""The views of one tab: mount them, carry out what their `ViewSession` decides, ask the person.

`ViewSession` (sans-IO) makes every protocol decision; this module does the I/O
it asks for: posts to the page, proxies requests to the view's own server, runs
timers, and relays consent questions and answers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcp.shared.exceptions import MCPError

from ..chat.sampling import create_message
from ..policy.csp import ViewCsp, allow_attribute, granted_permissions
from ..policy.trust import csp_entry_for
from ..servers.catalog import ToolEntry
from ..servers.templates import Template
from ..store.audit import AuditEvent
from ..views import session as vs
from ..views.jsonrpc import INTERNAL_ERROR, json_text
from .core import Host, MountedView

log = logging.getLogger("mcp_apps_host.views")

Emit = Callable[[dict[str, Any]], None]
# Runs a tool call a view asked for, as the conversation shows it; returns the result or raises CallFailed.
ViewCallRunner = Callable[[str, str, dict[str, Any], Callable[[float, float | None, str | None], Awaitable[None]]],
                          Awaitable[dict[str, Any]]]


class CallFailed(Exception):
    """A tool call ended without a result; the message is what a person sees."""

    def __init__(self, message: str, code: int = INTERNAL_ERROR) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class LiveView:
    mounted: MountedView
    session: vs.ViewSession
    call_id: int | None
    tasks: dict[Any, asyncio.Task[None]] = field(default_factory=dict)  # proxied requests by view request id
    timers: list[asyncio.TimerHandle] = field(default_factory=list)

    @property
    def handle(self) -> str:
        return self.mounted.handle

    @property
    def server(self) -> str:
        return self.session.spec.server


class ViewListener:
    """What the conversation wants to hear about views (the defaults ignore it)."""

    def chat_message(self, view: LiveView, message: vs.PostChatMessage) -> None: ...

    def model_context(self, view: LiveView, update: vs.ModelContextUpdated) -> None: ...

    def view_gone(self, view: LiveView) -> None: ...


class ViewHost:
    def __init__(self, host: Host, env: vs.HostEnvironment, emit: Emit, run_view_call: ViewCallRunner,
                 listener: ViewListener | None = None, conversation: Callable[[], str | None] = lambda: None) -> None:
        self.host = host
        self.env = env
        self.emit = emit
        self._run_view_call = run_view_call
        self._listener = listener or ViewListener()
        self._conversation = conversation
        self._person: dict[int, asyncio.Future[tuple[bool, bool]]] = {}  # consents not tied to a view
        self.views: dict[str, LiveView] = {}
        self._consents: dict[int, tuple[str, vs.AskConsent]] = {}
        self._next_consent = 0
        self._audited: object = None  # the decision already written with its message

    # ---- the audit trail ----------------------------------------------------------------------

    def audit(self, view: LiveView | None, direction: str, method: str | None, msg_id: Any = None,
              decision: str | None = None, reason: str | None = None, payload: Any = None,
              server: str | None = None) -> None:
        if self.host.audit is None:
            return
        try:
            self.host.audit.record_nowait(AuditEvent(
                direction=direction, method=method, server=server or (view.server if view else None),
                view=view.handle if view else None, conversation=self._conversation(), msg_id=msg_id,
                decision=decision, reason=reason, payload=payload))
        except Exception:  # noqa: BLE001 - the audit must never break the protocol
            log.exception("could not queue an audit event")

    def _sampling_enabled(self, server: str) -> bool:
        settings = self.host.sampling.settings.get(server)
        return self.host.agent is not None and settings is not None and settings.enabled

    def _decide_sampling(self, server: str) -> tuple[str, str]:
        if self.host.agent is None:
            return "deny", "no model is configured (--model)"
        return self.host.sampling.check(server)

    def _decide_tool_call(self, server: str, name: str) -> tuple[str, str, bool]:
        conn = self.host.servers.connections.get(server)
        entry = conn.tools.get(name) if conn else None
        if entry is None:
            return "deny", f"server {server!r} has no tool {name!r}", False
        decision, reason = self.host.consent.decide(server, entry, "view")
        return decision, reason, decision == "ask" and self.host.consent.can_remember(server, name)

    # ---- mounting ------------------------------------------------------------------------------

    def mount(self, call_id: int, entry: ToolEntry, template: Template, trust: str = "unchecked") -> LiveView:
        mounted = self.host.register_view(self, template)
        conn = self.host.servers.connections.get(entry.server)
        tools = list(conn.tools.values()) if conn else []
        allow = allow_attribute(template.permissions, self.host.granted_permissions)
        spec = vs.ViewSpec(
            server=entry.server,
            tool=entry,
            html=template.html,
            call_id=call_id,
            csp=template.csp.to_json(),
            permissions=granted_permissions(template.permissions, self.host.granted_permissions),
            allow=allow,
            app_tools=frozenset(t.name for t in tools if t.app_visible),
            all_tools=frozenset(t.name for t in tools),
            decide_tool_call=lambda name: self._decide_tool_call(entry.server, name),
            max_download_bytes=self.host.limits.max_download_bytes,
            decide_sampling=lambda: self._decide_sampling(entry.server),
            sampling_enabled=self._sampling_enabled(entry.server),
        )
        view = LiveView(mounted, vs.ViewSession(spec, self.env, self.host.limits), call_id)
        self.views[mounted.handle] = view
        self.emit({"type": "view-mount", "view": mounted.handle, "callId": call_id, "server": entry.server,
                   "tool": entry.name, "proxyUrl": self.host.proxy_url(mounted.handle),
                   "sandboxOrigin": mounted.origin,
                   "prefersBorder": template.prefers_border is not False, "permissions": allow,
                   "templateSha256": template.sha256, "trust": trust, "warnings": list(template.warnings)})
        return view

    def mount_failed(self, call_id: int, server: str, tool: str, error: str) -> None:
        """A container with no frame, so the error shows where the view would have been."""
        handle = f"failed-{call_id}"
        self.emit({"type": "view-mount", "view": handle, "callId": call_id, "server": server, "tool": tool,
                   "proxyUrl": None, "sandboxOrigin": self.host.sandbox_origin, "prefersBorder": True,
                   "permissions": ""})
        self.emit({"type": "view-state", "view": handle, "state": "error", "error": error})

    # ---- from the page -------------------------------------------------------------------------

    def message(self, handle: Any, message: Any) -> None:
        view = self.views.get(handle) if isinstance(handle, str) else None
        if view is None:
            return
        effects = view.session.receive(message)
        # One row for the message, carrying what was decided about it.
        verdict = next((e for e in effects if isinstance(e, (vs.Refused, vs.Decided))), None)
        decision = "refused" if isinstance(verdict, vs.Refused) else verdict.decision if verdict else None
        raw = message if isinstance(message, dict) else {"value": message}
        self.audit(view, "view->host", _str_or_none(raw.get("method")), raw.get("id"), decision,
                   verdict.reason if verdict else None, raw)
        self._audited = verdict
        try:
            self.apply(view, effects)
        finally:
            self._audited = None

    def csp_violation(self, handle: str, report: dict[str, Any]) -> None:
        """A CSP report from the browser: say which request was blocked and which declaration would allow it."""
        view = self.views.get(handle)
        if view is None:
            return
        blocked = str(report.get("blocked-uri") or report.get("blockedURL") or "")[:500]
        directive = str(report.get("effective-directive") or report.get("violated-directive") or "")[:100]
        entry = csp_entry_for(blocked, directive) if blocked else None
        hint = (f"; declare {entry[1]!r} in _meta.ui.csp.{entry[0]} to allow it" if entry
                else "; no _meta.ui.csp entry can allow this")
        text = f"CSP blocked {blocked or 'a request'} ({directive or 'unknown directive'}){hint}"
        self.emit({"type": "view-log", "view": handle, "level": "error", "text": text})
        self.audit(view, "view->host", "csp-violation", None, "refused", text, report)

    def close(self, handle: Any, reason: str) -> None:
        view = self.views.get(handle) if isinstance(handle, str) else None
        if view is not None:
            self.apply(view, view.session.teardown(reason))

    def display_mode(self, handle: Any, mode: Any) -> None:
        view = self.views.get(handle) if isinstance(handle, str) else None
        if view is not None and isinstance(mode, str):
            self.apply(view, view.session.set_display_mode(mode))

    def context_changed(self, **changes: Any) -> None:
        for view in list(self.views.values()):
            self.apply(view, view.session.host_context_changed(**changes))

    def ask_person(self, kind: str, server: str, title: str, detail: str, subject: str,
                   can_remember: bool) -> asyncio.Future[tuple[bool, bool]]:
        """A consent question that belongs to no view (a model's tool call): resolves to (allow, remember)."""
        consent_id = self._next_consent
        self._next_consent += 1
        answer: asyncio.Future[tuple[bool, bool]] = asyncio.get_running_loop().create_future()
        self._person[consent_id] = answer
        answer.add_done_callback(lambda _f: self._person.pop(consent_id, None))
        self.emit({"type": "consent", "id": consent_id, "kind": kind, "server": server, "view": None, "title": title,
                   "detail": detail, "subject": subject, "canRemember": can_remember})
        return answer

    def consent_reply(self, consent_id: Any, allow: bool, remember: bool = False) -> None:
        person = self._person.get(consent_id) if isinstance(consent_id, int) else None
        if person is not None:
            if not person.done():
                person.set_result((allow, remember))
            return
        entry = self._consents.pop(consent_id, None) if isinstance(consent_id, int) else None
        if entry is None:
            return
        handle, ask = entry
        view = self.views.get(handle)
        if view is None:
            return
        if allow and remember and ask.kind == "tool-call" and ask.can_remember:
            self.host.consent.remember_allow(view.server, ask.subject)
            self.audit(view, "view->host", "tools/call", ask.token, "consented",
                       f"the person chose always allow {view.server}/{ask.subject}")
        self.apply(view, view.session.answer_consent(ask.token, allow))

    def drop_all(self, reason: str) -> None:
        """The page is going away or showing another conversation: nobody can answer a teardown."""
        for view in list(self.views.values()):
            view.session.fail(reason)
            self._forget(view, remove=False)
        self._consents.clear()

    # ---- effects ---------------------------------------------------------------------------------

    def apply(self, view: LiveView, effects: list[vs.Effect]) -> None:
        for effect in effects:
            self._apply_one(view, effect)

    def _apply_one(self, view: LiveView, effect: vs.Effect) -> None:  # noqa: C901 - one branch per effect
        handle = view.handle
        if isinstance(effect, vs.PostToView):
            msg = effect.message
            if msg.get("method") != "ui/notifications/sandbox-resource-ready":  # the template is on record by hash
                self.audit(view, "host->view", _str_or_none(msg.get("method")), msg.get("id"), payload=msg)
            self.emit({"type": "view-post", "view": handle, "message": msg})
        elif isinstance(effect, vs.Decided):
            if effect is not self._audited:
                self.audit(view, "view->host", effect.method, effect.request_id, effect.decision, effect.reason)
        elif isinstance(effect, vs.Sample):
            view.tasks[effect.request_id] = asyncio.create_task(self._sample(view, effect))
        elif isinstance(effect, vs.Download):
            self.emit({"type": "download", "view": handle, "filename": effect.filename, "mimeType": effect.mime_type,
                       "text": effect.text, "blob": effect.blob})
        elif isinstance(effect, vs.StateChanged):
            self.emit({"type": "view-state", "view": handle, "state": str(effect.state), "error": effect.error})
            if effect.state in (vs.ViewState.CLOSED, vs.ViewState.ERROR):
                self._forget(view, remove=effect.state == vs.ViewState.CLOSED)
        elif isinstance(effect, vs.DisplayModeChanged):
            self.emit({"type": "view-display-mode", "view": handle, "mode": effect.mode})
        elif isinstance(effect, vs.Resize):
            self.emit({"type": "view-size", "view": handle, "width": effect.width, "height": effect.height})
        elif isinstance(effect, vs.Log):
            self.emit({"type": "view-log", "view": handle, "level": effect.level, "text": effect.text})
        elif isinstance(effect, vs.Refused):
            log.info("view %s (%s): refused %s: %s", handle[:8], view.server, effect.method, effect.reason)
            if effect is not self._audited:
                self.audit(view, "view->host", effect.method, None, "refused", effect.reason)
            self.emit({"type": "view-log", "view": handle, "level": "warning",
                       "text": f"refused {effect.method or 'message'}: {effect.reason}"})
        elif isinstance(effect, vs.ProxyToolCall):
            view.tasks[effect.request_id] = asyncio.create_task(self._proxy_tool_call(view, effect))
        elif isinstance(effect, vs.ProxyResourceRead):
            view.tasks[effect.request_id] = asyncio.create_task(self._proxy_resource_read(view, effect))
        elif isinstance(effect, vs.CancelProxied):
            task = view.tasks.pop(effect.request_id, None)
            if task is not None:
                task.cancel()
        elif isinstance(effect, vs.AskConsent):
            consent_id = self._next_consent
            self._next_consent += 1
            self._consents[consent_id] = (handle, effect)
            self.emit({"type": "consent", "id": consent_id, "kind": effect.kind, "server": view.server, "view": handle,
                       "title": effect.title, "detail": effect.detail, "subject": effect.subject,
                       "canRemember": effect.can_remember, **effect.extra})
        elif isinstance(effect, vs.OpenLink):
            self.emit({"type": "open-link", "url": effect.url})
        elif isinstance(effect, vs.PostChatMessage):
            self._listener.chat_message(view, effect)
        elif isinstance(effect, vs.ModelContextUpdated):
            summary = json_text({"content": effect.content, "structuredContent": effect.structured_content})
            self.emit({"type": "view-context", "view": handle, "text": summary[:2000]})
            self._listener.model_context(view, effect)
        elif isinstance(effect, vs.StartInitTimer):
            self._timer(view, effect.seconds, view.session.init_timed_out)
        elif isinstance(effect, vs.StartTeardownTimer):
            self._timer(view, effect.seconds, view.session.teardown_timed_out)

    def _timer(self, view: LiveView, seconds: float, fire: Callable[[], list[vs.Effect]]) -> None:
        loop = asyncio.get_running_loop()
        view.timers.append(loop.call_later(seconds, lambda: self.apply(view, fire())))

    def _forget(self, view: LiveView, remove: bool) -> None:
        for consent_id, (handle, _ask) in list(self._consents.items()):
            if handle == view.handle:  # nobody is waiting for that answer any more
                del self._consents[consent_id]
                self.emit({"type": "consent-dismiss", "id": consent_id})
        for timer in view.timers:
            timer.cancel()
        for task in view.tasks.values():
            task.cancel()
        view.tasks.clear()
        self.views.pop(view.handle, None)
        self.host.unregister_view(view.handle)
        self._listener.view_gone(view)
        if remove:
            self.emit({"type": "view-remove", "view": view.handle})

    # ---- requests a view sent to its server ------------------------------------------------------

    async def _proxy_tool_call(self, view: LiveView, call: vs.ProxyToolCall) -> None:
        async def forward_progress(value: float, total: float | None, message: str | None) -> None:
            if call.progress_token is not None:
                self.apply(view, view.session.progress(call.progress_token, value, total, message))

        try:
            result = await self._run_view_call(view.server, call.name, call.arguments, forward_progress)
        except CallFailed as exc:
            self.apply(view, view.session.complete_request(call.request_id, error=(exc.code, str(exc))))
            return
        finally:
            view.tasks.pop(call.request_id, None)
        self.apply(view, view.session.complete_request(call.request_id, result=result))

    async def _sample(self, view: LiveView, sample: vs.Sample) -> None:
        assert self.host.agent is not None
        try:
            result = await create_message(self.host.agent.adapter, sample.params)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001
            self.apply(view, view.session.complete_request(sample.request_id, error=(INTERNAL_ERROR, f"the model failed: {exc}")))
            return
        finally:
            view.tasks.pop(sample.request_id, None)
        self.audit(view, "model->host", "sampling/createMessage", sample.request_id, None, None, result)
        self.apply(view, view.session.complete_request(sample.request_id, result=result))

    async def _proxy_resource_read(self, view: LiveView, read: vs.ProxyResourceRead) -> None:
        try:
            result = await self.host.servers.get(view.server).read_resource(read.uri)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001
            code = exc.code if isinstance(exc, MCPError) else INTERNAL_ERROR
            self.apply(view, view.session.complete_request(
                read.request_id, error=(code, f"resources/read {read.uri} on server {view.server!r} failed: {exc}")))
            return
        finally:
            view.tasks.pop(read.request_id, None)
        self.apply(view, view.session.complete_request(read.request_id, result=result))


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def template_meta(template: Template) -> dict[str, Any]:
    """What a stored template needs besides its HTML to render again the same way."""
    return {"csp": template.csp.to_json(), "permissions": template.permissions, "domain": template.domain,
            "prefersBorder": template.prefers_border}


def template_from_store(row: dict[str, Any]) -> Template:
    meta = row.get("meta") or {}
    return Template(server=row["server"], uri=row["uri"], html=row["html"], sha256=row["sha256"],
                    csp=ViewCsp.from_meta(meta.get("csp")), permissions=meta.get("permissions") or {},
                    domain=meta.get("domain"), prefers_border=meta.get("prefersBorder"))
