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

from ..policy.csp import ViewCsp, allow_attribute, granted_permissions
from ..servers.catalog import ToolEntry
from ..servers.templates import Template
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


class ViewHost:
    def __init__(self, host: Host, env: vs.HostEnvironment, emit: Emit, run_view_call: ViewCallRunner,
                 on_chat_message: Callable[[LiveView, vs.PostChatMessage], None]) -> None:
        self.host = host
        self.env = env
        self.emit = emit
        self._run_view_call = run_view_call
        self._on_chat_message = on_chat_message
        self.views: dict[str, LiveView] = {}
        self._consents: dict[int, tuple[str, Any]] = {}
        self._next_consent = 0

    # ---- mounting ------------------------------------------------------------------------------

    def mount(self, call_id: int, entry: ToolEntry, template: Template) -> LiveView:
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
        )
        view = LiveView(mounted, vs.ViewSession(spec, self.env, self.host.limits), call_id)
        self.views[mounted.handle] = view
        self.emit({"type": "view-mount", "view": mounted.handle, "callId": call_id, "server": entry.server,
                   "tool": entry.name, "proxyUrl": self.host.proxy_url(mounted.handle),
                   "sandboxOrigin": self.host.sandbox_origin,
                   "prefersBorder": template.prefers_border is not False, "permissions": allow,
                   "templateSha256": template.sha256})
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
        if view is not None:
            self.apply(view, view.session.receive(message))

    def close(self, handle: Any, reason: str) -> None:
        view = self.views.get(handle) if isinstance(handle, str) else None
        if view is not None:
            self.apply(view, view.session.teardown(reason))

    def context_changed(self, **changes: Any) -> None:
        for view in list(self.views.values()):
            self.apply(view, view.session.host_context_changed(**changes))

    def consent_reply(self, consent_id: Any, allow: bool) -> None:
        entry = self._consents.pop(consent_id, None) if isinstance(consent_id, int) else None
        if entry is None:
            return
        handle, token = entry
        view = self.views.get(handle)
        if view is not None:
            self.apply(view, view.session.answer_consent(token, allow))

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
            self.emit({"type": "view-post", "view": handle, "message": effect.message})
        elif isinstance(effect, vs.StateChanged):
            self.emit({"type": "view-state", "view": handle, "state": str(effect.state), "error": effect.error})
            if effect.state in (vs.ViewState.CLOSED, vs.ViewState.ERROR):
                self._forget(view, remove=effect.state == vs.ViewState.CLOSED)
        elif isinstance(effect, vs.Resize):
            self.emit({"type": "view-size", "view": handle, "width": effect.width, "height": effect.height})
        elif isinstance(effect, vs.Log):
            self.emit({"type": "view-log", "view": handle, "level": effect.level, "text": effect.text})
        elif isinstance(effect, vs.Refused):
            log.info("view %s (%s): refused %s: %s", handle[:8], view.server, effect.method, effect.reason)
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
            self._consents[consent_id] = (handle, effect.token)
            self.emit({"type": "consent", "id": consent_id, "kind": effect.kind, "server": view.server, "view": handle,
                       "title": effect.title, "detail": effect.detail})
        elif isinstance(effect, vs.OpenLink):
            self.emit({"type": "open-link", "url": effect.url})
        elif isinstance(effect, vs.PostChatMessage):
            self._on_chat_message(view, effect)
        elif isinstance(effect, vs.ModelContextUpdated):
            summary = json_text({"content": effect.content, "structuredContent": effect.structured_content})
            self.emit({"type": "view-context", "view": handle, "text": summary[:2000]})
        elif isinstance(effect, vs.StartInitTimer):
            self._timer(view, effect.seconds, view.session.init_timed_out)
        elif isinstance(effect, vs.StartTeardownTimer):
            self._timer(view, effect.seconds, view.session.teardown_timed_out)

    def _timer(self, view: LiveView, seconds: float, fire: Callable[[], list[vs.Effect]]) -> None:
        loop = asyncio.get_running_loop()
        view.timers.append(loop.call_later(seconds, lambda: self.apply(view, fire())))

    def _forget(self, view: LiveView, remove: bool) -> None:
        for timer in view.timers:
            timer.cancel()
        for task in view.tasks.values():
            task.cancel()
        view.tasks.clear()
        self.views.pop(view.handle, None)
        self.host.unregister_view(view.handle)
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


def template_meta(template: Template) -> dict[str, Any]:
    """What a stored template needs besides its HTML to render again the same way."""
    return {"csp": template.csp.to_json(), "permissions": template.permissions, "domain": template.domain,
            "prefersBorder": template.prefers_border}


def template_from_store(row: dict[str, Any]) -> Template:
    meta = row.get("meta") or {}
    return Template(server=row["server"], uri=row["uri"], html=row["html"], sha256=row["sha256"],
                    csp=ViewCsp.from_meta(meta.get("csp")), permissions=meta.get("permissions") or {},
                    domain=meta.get("domain"), prefers_border=meta.get("prefersBorder"))
