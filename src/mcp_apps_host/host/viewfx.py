"""What each kind of `ViewSession` effect does, as a table: frames to the page, the audit trail,
consent questions, requests on the view's own server, timers, and the view's own tools."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol

from ..errors import CallFailed
from ..values.protocol import SANDBOX_RESOURCE_READY, TOOLS_CALL
from ..views import effects as fx
from ..views.jsonrpc import json_text
from . import frames as f
from .audit import Auditor
from .consents import Consents
from .core import Host
from .lazy import LazyViews
from .live import LiveView, ViewListener
from .page import Page
from .pagetemplates import PageTemplates
from .prebooted import PrebootedViews
from .prepared import PreparedProxies
from .proxied import Proxied

log = logging.getLogger("mcp_apps_host.views")


class _Views(Protocol):
    host: Host
    page: Page
    audit: Auditor
    consents: Consents
    listener: ViewListener
    proxied: Proxied
    audited: object  # the decision already written with its message
    live: dict[str, LiveView]
    lazy: LazyViews
    page_templates: PageTemplates
    prebooted: PrebootedViews
    prepared: PreparedProxies

    def apply(self, view: LiveView, effects: list[fx.Effect]) -> None: ...

    def timer(self, view: LiveView, seconds: float, fire: Callable[[], list[fx.Effect]]) -> None: ...

    def forget(self, view: LiveView, remove: bool) -> None: ...


def _post(vs: _Views, view: LiveView, effect: fx.PostToView) -> None:
    msg = effect.message
    if msg.get("method") != SANDBOX_RESOURCE_READY:  # the template is on record by hash
        vs.audit("host->view", msg.get("method"), server=view.server, view=view.handle, msg_id=msg.get("id"),
                 payload=msg)
    vs.page.send(f.ViewPost(view=view.handle, message=vs.page_templates.message(view.mounted.template, msg)))


def _decided(vs: _Views, view: LiveView, effect: fx.Decided) -> None:
    if effect is not vs.audited:
        vs.audit("view->host", effect.method, server=view.server, view=view.handle, msg_id=effect.request_id,
                 decision=effect.decision, reason=effect.reason)


def _refused(vs: _Views, view: LiveView, effect: fx.Refused) -> None:
    log.info("view %s (%s): refused %s: %s", view.handle[:8], view.server, effect.method, effect.reason)
    if effect is not vs.audited:
        vs.audit("view->host", effect.method, server=view.server, view=view.handle, decision="refused",
                 reason=effect.reason)
    vs.page.send(f.ViewLog(view=view.handle, level="warning",
                           text=f"refused {effect.method or 'message'}: {effect.reason}"))


def _state(vs: _Views, view: LiveView, effect: fx.StateChanged) -> None:
    if effect.state == fx.ViewState.CLOSED and vs.lazy.closed(view):
        return  # put away out of sight: the page keeps a placeholder, not a closed view
    vs.page.send(f.ViewStateFrame(view=view.handle, state=str(effect.state), error=effect.error))
    if effect.state == fx.ViewState.READY:
        _display_mode(vs, view)  # the modes the view declared, for its header
        vs.prebooted.view_up(view)
        vs.lazy.ready()
    if effect.state == fx.ViewState.CLOSED:
        vs.forget(view, remove=True)
    elif effect.state == fx.ViewState.ERROR:
        vs.forget(view, remove=vs.prebooted.failed(view))  # a failed view stays in sight, with its error


def _resize(vs: _Views, view: LiveView, effect: fx.Resize) -> None:
    vs.page.send(f.ViewSize(view=view.handle, width=effect.width, height=effect.height))
    if effect.height is not None:
        vs.listener.resized(view, effect.height)


def _display_mode(vs: _Views, view: LiveView) -> None:
    session = view.session
    vs.page.send(f.ViewDisplayMode(view=view.handle, mode=session.display_mode, available=session.available_modes()))


def _ask(vs: _Views, view: LiveView, ask: fx.AskConsent) -> None:
    def answered(allow: bool, remember: bool) -> None:
        if view.handle not in vs.live:
            return
        if allow and remember and ask.kind == "tool-call" and ask.can_remember:
            vs.host.consent.remember_allow(view.server, ask.subject)
            vs.audit("view->host", TOOLS_CALL, server=view.server, view=view.handle, msg_id=ask.token,
                     decision="consented", reason=f"the person chose always allow {view.server}/{ask.subject}")
        vs.apply(view, view.session.answer_consent(ask.token, allow))

    question = {"kind": ask.kind, "server": view.server, "title": ask.title, "detail": ask.detail,
                "subject": ask.subject, "can_remember": ask.can_remember, **ask.extra}
    vs.consents.ask(question, view.handle, answered)


def _model_context(vs: _Views, view: LiveView, effect: fx.ModelContextUpdated) -> None:
    summary = json_text({"content": effect.content, "structuredContent": effect.structured_content})
    vs.page.send(f.ViewContext(view=view.handle, text=summary[:2000]))
    vs.listener.model_context(view, effect)


def _app_tool_result(vs: _Views, view: LiveView, effect: fx.AppToolResult) -> None:
    waiting = view.app_calls.pop(effect.request_id, None)
    if waiting is None or waiting.done():
        return
    if effect.result is not None:
        waiting.set_result(effect.result)
    else:
        waiting.set_exception(CallFailed(effect.error or "the app tool failed"))


def _download(vs: _Views, view: LiveView, e: fx.Download) -> None:
    vs.page.send(f.Download(view=view.handle, filename=e.filename, mime_type=e.mime_type, text=e.text, blob=e.blob,
                            url=e.url))


def _start(view: LiveView, request_id: Any, work: Any) -> None:
    view.tasks[request_id] = asyncio.create_task(work)


def _teardown_unanswered(vs: _Views, view: LiveView) -> list[fx.Effect]:
    """A view that does not answer its teardown may have hung its renderer, which every frame of its
    origin shares: nothing prepared ahead there (proxy, booted view) is handed to a later view, in any tab."""
    effects = view.session.teardown_timed_out()
    if effects:
        vs.host.hung(view.mounted.origin)
    return effects


def _cancel(view: LiveView, request_id: Any) -> None:
    task = view.tasks.pop(request_id, None)
    if task is not None:
        task.cancel()


_Handler = Callable[[Any, LiveView, Any], None]
HANDLERS: dict[type, _Handler] = {
    fx.PostToView: _post,
    fx.Decided: _decided,
    fx.Refused: _refused,
    fx.StateChanged: _state,
    fx.AskConsent: _ask,
    fx.ModelContextUpdated: _model_context,
    fx.PostChatMessage: lambda vs, v, e: vs.listener.chat_message(v, e),
    fx.ProxyToolCall: lambda vs, v, e: _start(v, e.request_id, vs.proxied.tool_call(v, e)),
    fx.ProxyResourceRead: lambda vs, v, e: _start(v, e.request_id, vs.proxied.resource_read(v, e)),
    fx.Sample: lambda vs, v, e: _start(v, e.request_id, vs.proxied.sample(v, e)),
    fx.SaveFiles: lambda vs, v, e: _start(v, e.request_id, vs.proxied.save_files(v, e)),
    fx.CancelProxied: lambda vs, v, e: _cancel(v, e.request_id),
    fx.Download: _download,
    fx.DisplayModeChanged: lambda vs, v, e: _display_mode(vs, v),
    fx.Resize: _resize,
    fx.Log: lambda vs, v, e: vs.page.send(f.ViewLog(view=v.handle, level=e.level, text=e.text)),
    fx.OpenLink: lambda vs, v, e: vs.page.send(f.OpenLink(url=e.url)),
    fx.StartInitTimer: lambda vs, v, e: vs.timer(v, e.seconds, v.session.init_timed_out),
    fx.StartTeardownTimer: lambda vs, v, e: vs.timer(v, e.seconds, lambda: _teardown_unanswered(vs, v)),
    fx.StartRequestTimer: lambda vs, v, e: vs.timer(v, e.seconds, lambda: v.session.request_timed_out(e.request_id)),
    fx.AppToolsChanged: lambda vs, v, e: vs.listener.app_tools_changed(v, e.tools),
    fx.AppToolResult: _app_tool_result,
}
