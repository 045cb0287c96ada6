"""One browser tab: its conversation, its tool calls and its views.

The page relays every view message here; `ViewSession` decides, this module
carries the effects out (talks to servers, asks the person, tells the page).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from mcp.shared.exceptions import MCPError

from ..policy.csp import allow_attribute, granted_permissions
from ..servers.catalog import ToolEntry
from ..servers.connection import ProgressFn, ServerUnavailable
from ..servers.templates import TemplateError
from ..views import session as vs
from ..views.jsonrpc import INTERNAL_ERROR, json_text
from ..views.theme import host_styles, parse_theme
from .core import Host, MountedView

log = logging.getLogger("mcp_apps_host.tab")

HELP = (
    "Commands: /call SERVER TOOL [JSON arguments] — call a tool, e.g. /call chart show-chart {\"metric\": \"users\"}; "
    "/servers — list servers and tools; /help — this text."
)


@dataclass
class _View:
    mounted: MountedView
    session: vs.ViewSession
    tasks: dict[Any, asyncio.Task[None]] = field(default_factory=dict)  # proxied requests by view request id
    timers: list[asyncio.TimerHandle] = field(default_factory=list)

    @property
    def handle(self) -> str:
        return self.mounted.handle


class TabSession:
    def __init__(self, host: Host, outbox: asyncio.Queue[dict[str, Any]]) -> None:
        self.host = host
        self._outbox = outbox
        self.env = vs.HostEnvironment(styles=host_styles())
        self.views: dict[str, _View] = {}
        self._calls: dict[int, asyncio.Task[None]] = {}
        self._next_call = 0
        self._consents: dict[int, tuple[str, Any]] = {}
        self._next_consent = 0
        self._unsubscribe = host.servers.subscribe(self._servers_changed)

    # ---- outgoing -------------------------------------------------------------------------

    def emit(self, message: dict[str, Any]) -> None:
        self._outbox.put_nowait(message)

    def _servers_changed(self) -> None:
        self.emit({"type": "servers", "servers": self.host.servers.snapshot()})

    def _record(self, **row: Any) -> None:
        """Keep the call on record without holding up the page (the write may fsync)."""
        store = self.host.store
        if store is None:
            return

        async def write() -> None:
            try:
                await asyncio.to_thread(store.record_call, **row)
            except Exception:  # noqa: BLE001 - a full disk must not break the console
                log.exception("could not record a tool call")

        asyncio.get_running_loop().create_task(write())

    def notice(self, text: str, level: str = "info") -> None:
        self.emit({"type": "notice", "level": level, "text": text})

    # ---- incoming from the page --------------------------------------------------------------

    async def handle(self, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        try:
            if kind == "hello":
                self._hello(msg)
            elif kind == "chat":
                self._chat(msg.get("text"))
            elif kind == "call":
                self._call_from_page(msg.get("server"), msg.get("tool"), msg.get("arguments", {}))
            elif kind == "cancel":
                self._cancel_call(msg.get("callId"))
            elif kind == "view-message":
                self._view_message(msg.get("view"), msg.get("message"))
            elif kind == "view-close":
                self._close_view(msg.get("view"), "closed by the person")
            elif kind == "theme":
                self._set_theme(msg.get("theme"))
            elif kind == "consent-reply":
                self._consent_reply(msg.get("id"), msg.get("allow") is True)
            else:
                log.info("page sent an unknown message type %r", kind)
        except vs.IllegalTransition:
            log.exception("host bug while handling %s", kind)

    def _hello(self, msg: dict[str, Any]) -> None:
        env = self.env
        env.theme = parse_theme(msg.get("theme"))
        for key, attr in (("locale", "locale"), ("timeZone", "time_zone"), ("userAgent", "user_agent")):
            value = msg.get(key)
            if isinstance(value, str) and 0 < len(value) <= 200:
                setattr(env, attr, value)
        env.touch = msg.get("touch") is True
        env.hover = msg.get("hover") is not False
        width = msg.get("viewportWidth")
        if isinstance(width, int) and not isinstance(width, bool) and width > 0:
            env.max_width = min(width, self.host.limits.max_view_width)
        self.emit({"type": "theme", "theme": env.theme, "variables": env.styles.get("variables", {})})
        self._servers_changed()

    def _chat(self, text: Any) -> None:
        if not isinstance(text, str) or not text.strip():
            return
        text = text.strip()
        if text in ("/help", "/?"):
            self.notice(HELP)
            return
        if text == "/servers":
            lines = []
            for s in self.host.servers.snapshot():
                tools = ", ".join(t["name"] for t in s["tools"]) or "no tools"
                lines.append(f"{s['name']} ({s['status']}): {tools}")
            self.notice("\n".join(lines) or "No servers are configured.")
            return
        if not text.startswith("/call"):
            self.notice("There is no model in this console: call tools with /call SERVER TOOL [JSON]. " + HELP)
            return
        parts = text.split(maxsplit=3)
        if parts[0] != "/call" or len(parts) < 3:
            self.notice("Usage: /call SERVER TOOL [JSON arguments]", "error")
            return
        raw_args = parts[3] if len(parts) > 3 else "{}"
        try:
            arguments = json.loads(raw_args)
        except json.JSONDecodeError as exc:
            self.notice(f"/call {parts[1]} {parts[2]}: the arguments are not valid JSON ({exc.msg} at column {exc.colno})", "error")
            return
        self._call_from_page(parts[1], parts[2], arguments)

    # ---- tool calls from the person ------------------------------------------------------------

    def _call_from_page(self, server: Any, tool: Any, arguments: Any) -> None:
        if not isinstance(server, str) or not isinstance(tool, str):
            self.notice("A call needs a server and a tool name.", "error")
            return
        if not isinstance(arguments, dict):
            self.notice(f"/call {server} {tool}: the arguments must be a JSON object", "error")
            return
        try:
            conn = self.host.servers.get(server)
        except ServerUnavailable as exc:
            self.notice(str(exc), "error")
            return
        entry = conn.tools.get(tool)
        if entry is None:
            known = ", ".join(t.name for t in conn.tools.values() if t.model_visible) or "none yet"
            self.notice(f"server {server!r} has no tool {tool!r} (tools: {known})", "error")
            return
        if not entry.model_visible:
            # Same rule as for a model: tools meant only for their app are not called from the chat.
            self.notice(f"tool {tool!r} of server {server!r} is only callable by its app (visibility {sorted(entry.visibility)})", "error")
            return
        call_id = self._next_call
        self._next_call += 1
        self._calls[call_id] = asyncio.create_task(self._run_call(call_id, entry, arguments))

    async def _run_call(self, call_id: int, entry: ToolEntry, arguments: dict[str, Any]) -> None:
        view: _View | None = None
        if entry.resource_uri:
            view = await self._mount_view(call_id, entry)
            if view is not None:
                self._apply(view, view.session.tool_input(arguments))
        try:
            result = await self._tracked_call(call_id, entry.server, entry.name, arguments, "person")
        except asyncio.CancelledError:
            if view is not None:
                self._apply(view, view.session.tool_cancelled("cancelled by the person"))
            raise
        except CallFailed as exc:
            result = {"content": [{"type": "text", "text": str(exc)}], "isError": True}
        finally:
            self._calls.pop(call_id, None)
        if view is not None:
            self._apply(view, view.session.tool_result(result))

    async def _tracked_call(self, call_id: int, server: str, tool: str, arguments: dict[str, Any], source: str,
                            on_progress: ProgressFn | None = None) -> dict[str, Any]:
        """One tool call as the conversation shows it (started, progress, finished or failed) and keeps it on record."""
        started = time.monotonic()

        def elapsed() -> int:
            return round((time.monotonic() - started) * 1000)

        def finish(outcome: str, result: dict[str, Any] | None, error: str | None) -> None:
            if result is not None:
                self.emit({"type": "call-finished", "callId": call_id, "result": result,
                           "isError": outcome == "tool-error", "durationMs": elapsed()})
            else:
                self.emit({"type": "call-failed", "callId": call_id, "error": error or outcome,
                           "durationMs": elapsed(), "cancelled": outcome == "cancelled"})
            self._record(server=server, tool=tool, source=source, arguments=arguments, outcome=outcome,
                         result=result, error=error, duration_ms=elapsed())

        async def progress(value: float, total: float | None, message: str | None) -> None:
            self.emit({"type": "call-progress", "callId": call_id, "progress": value, "total": total, "message": message})
            if on_progress is not None:
                await on_progress(value, total, message)

        self.emit({"type": "call-started", "callId": call_id, "server": server, "tool": tool,
                   "arguments": arguments, "source": source})
        try:
            result = await self.host.servers.get(server).call_tool(tool, arguments, progress)
        except asyncio.CancelledError:
            finish("cancelled", None, None)
            raise
        except Exception as exc:  # noqa: BLE001 - every failure is shown where it happened
            error = _describe_call_error(server, tool, exc)
            finish("failed", None, error)
            raise CallFailed(error, exc.code if isinstance(exc, MCPError) else INTERNAL_ERROR) from exc
        finish("tool-error" if result.get("isError") is True else "ok", result, None)
        return result

    def _cancel_call(self, call_id: Any) -> None:
        task = self._calls.get(call_id) if isinstance(call_id, int) else None
        if task is not None:
            task.cancel()  # the SDK sends notifications/cancelled to the server

    # ---- views -----------------------------------------------------------------------------------

    async def _mount_view(self, call_id: int, entry: ToolEntry) -> _View | None:
        assert entry.resource_uri
        conn = self.host.servers.get(entry.server)
        try:
            template = await conn.template(entry.resource_uri)
        except (TemplateError, ServerUnavailable) as exc:
            # A container with no frame, so the error shows where the view would have been.
            handle = f"failed-{call_id}"
            self.emit({"type": "view-mount", "view": handle, "callId": call_id, "server": entry.server, "tool": entry.name,
                       "proxyUrl": None, "sandboxOrigin": self.host.sandbox_origin, "prefersBorder": True,
                       "permissions": ""})
            self.emit({"type": "view-state", "view": handle, "state": "error", "error": str(exc)})
            return None
        mounted = self.host.register_view(self, template)
        allow = allow_attribute(template.permissions, self.host.granted_permissions)
        tools = conn.tools.values()
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
        view = _View(mounted, vs.ViewSession(spec, self.env, self.host.limits))
        self.views[mounted.handle] = view
        self.emit({"type": "view-mount", "view": mounted.handle, "callId": call_id, "server": entry.server,
                   "tool": entry.name, "proxyUrl": self.host.proxy_url(mounted.handle),
                   "sandboxOrigin": self.host.sandbox_origin,
                   "prefersBorder": template.prefers_border is not False, "permissions": allow,
                   "templateSha256": template.sha256})
        return view

    def _view_message(self, handle: Any, message: Any) -> None:
        view = self.views.get(handle) if isinstance(handle, str) else None
        if view is None:
            return
        self._apply(view, view.session.receive(message))

    def _close_view(self, handle: Any, reason: str) -> None:
        view = self.views.get(handle) if isinstance(handle, str) else None
        if view is not None:
            self._apply(view, view.session.teardown(reason))

    def _set_theme(self, theme: Any) -> None:
        self.env.theme = parse_theme(theme)
        self.emit({"type": "theme", "theme": self.env.theme, "variables": self.env.styles.get("variables", {})})
        for view in list(self.views.values()):
            self._apply(view, view.session.host_context_changed(theme=self.env.theme, styles=self.env.styles))

    # ---- effects ---------------------------------------------------------------------------------

    def _apply(self, view: _View, effects: list[vs.Effect]) -> None:
        for effect in effects:
            self._apply_one(view, effect)

    def _apply_one(self, view: _View, effect: vs.Effect) -> None:  # noqa: C901 - one branch per effect
        handle = view.handle
        server = view.session.spec.server
        if isinstance(effect, vs.PostToView):
            self.emit({"type": "view-post", "view": handle, "message": effect.message})
        elif isinstance(effect, vs.StateChanged):
            self.emit({"type": "view-state", "view": handle, "state": str(effect.state), "error": effect.error})
            if effect.state in (vs.ViewState.CLOSED, vs.ViewState.ERROR):
                self._forget_view(view, remove=effect.state == vs.ViewState.CLOSED)
        elif isinstance(effect, vs.Resize):
            self.emit({"type": "view-size", "view": handle, "width": effect.width, "height": effect.height})
        elif isinstance(effect, vs.Log):
            self.emit({"type": "view-log", "view": handle, "level": effect.level, "text": effect.text})
        elif isinstance(effect, vs.Refused):
            log.info("view %s (%s): refused %s: %s", handle[:8], server, effect.method, effect.reason)
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
            self.emit({"type": "consent", "id": consent_id, "kind": effect.kind, "server": server, "view": handle,
                       "title": effect.title, "detail": effect.detail})
        elif isinstance(effect, vs.OpenLink):
            self.emit({"type": "open-link", "url": effect.url})
        elif isinstance(effect, vs.PostChatMessage):
            text = "\n".join(str(b.get("text", f"[{b.get('type')}]")) for b in effect.content)
            self.emit({"type": "chat-message", "role": effect.role, "source": server, "view": handle, "text": text})
        elif isinstance(effect, vs.ModelContextUpdated):
            summary = json_text({"content": effect.content, "structuredContent": effect.structured_content})
            self.emit({"type": "view-context", "view": handle, "text": summary[:2000]})
        elif isinstance(effect, vs.StartInitTimer):
            self._timer(view, effect.seconds, view.session.init_timed_out)
        elif isinstance(effect, vs.StartTeardownTimer):
            self._timer(view, effect.seconds, view.session.teardown_timed_out)

    def _timer(self, view: _View, seconds: float, fire: Any) -> None:
        loop = asyncio.get_running_loop()
        view.timers.append(loop.call_later(seconds, lambda: self._apply(view, fire())))

    def _forget_view(self, view: _View, remove: bool) -> None:
        for timer in view.timers:
            timer.cancel()
        for task in view.tasks.values():
            task.cancel()
        view.tasks.clear()
        self.views.pop(view.handle, None)
        self.host.unregister_view(view.handle)
        if remove:
            self.emit({"type": "view-remove", "view": view.handle})

    async def _proxy_tool_call(self, view: _View, call: vs.ProxyToolCall) -> None:
        call_id = self._next_call
        self._next_call += 1

        async def forward_progress(value: float, total: float | None, message: str | None) -> None:
            if call.progress_token is not None:
                self._apply(view, view.session.progress(call.progress_token, value, total, message))

        try:
            result = await self._tracked_call(call_id, view.session.spec.server, call.name, call.arguments, "view",
                                              forward_progress)
        except CallFailed as exc:
            self._apply(view, view.session.complete_request(call.request_id, error=(exc.code, str(exc))))
            return
        finally:
            view.tasks.pop(call.request_id, None)
        self._apply(view, view.session.complete_request(call.request_id, result=result))

    async def _proxy_resource_read(self, view: _View, read: vs.ProxyResourceRead) -> None:
        server = view.session.spec.server
        try:
            result = await self.host.servers.get(server).read_resource(read.uri)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001
            code = exc.code if isinstance(exc, MCPError) else INTERNAL_ERROR
            self._apply(view, view.session.complete_request(
                read.request_id, error=(code, f"resources/read {read.uri} on server {server!r} failed: {exc}")))
            return
        finally:
            view.tasks.pop(read.request_id, None)
        self._apply(view, view.session.complete_request(read.request_id, result=result))

    def _consent_reply(self, consent_id: Any, allow: bool) -> None:
        entry = self._consents.pop(consent_id, None) if isinstance(consent_id, int) else None
        if entry is None:
            return
        handle, token = entry
        view = self.views.get(handle)
        if view is not None:
            self._apply(view, view.session.answer_consent(token, allow))

    # ---- end of the tab ----------------------------------------------------------------------------

    async def close(self) -> None:
        """The tab went away: nobody can answer a teardown, so drop everything at once."""
        self._unsubscribe()
        for task in list(self._calls.values()):
            task.cancel()
        for view in list(self.views.values()):
            view.session.fail("the page was closed")
            self._forget_view(view, remove=False)
        await asyncio.gather(*self._calls.values(), return_exceptions=True)


class CallFailed(Exception):
    """A tool call ended without a result; the message is what a person sees."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _describe_call_error(server: str, tool: str, exc: Exception) -> str:
    if isinstance(exc, MCPError):
        return f"{server}/{tool} failed: {exc.message} (error {exc.code})"
    if isinstance(exc, TimeoutError):
        return f"{server}/{tool} did not answer in time"
    if isinstance(exc, ServerUnavailable):
        return str(exc)
    return f"{server}/{tool} failed: {exc or type(exc).__name__}"
