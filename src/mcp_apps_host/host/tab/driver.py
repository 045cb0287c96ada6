"""One live view: its sans-IO session, what runs for it, and the one place its effects are carried out.

Everything that happens to a view comes in through :meth:`ViewDriver.drive` as an event
(`views/events.py`); its session decides, and the effects that come out are applied here,
in one `match` that mypy checks is complete. What runs on the view's behalf (a tool call on
its server, a resource read, a timer) ends by driving the view again with the event it
produced. The driver never reaches for whoever made it: it reaches the rest of the tab only
through `ViewPorts`, typed interfaces handed in at construction (a unit test passes fakes).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol, assert_never

from opentelemetry import trace
from opentelemetry.trace import Span

from ...errors import CallFailed
from ...servers.connection import ProgressFn
from ...telemetry import answers, metrics, spans
from ...values.apptools import AppTool
from ...values.protocol import INITIALIZE, OPEN_VIEW, PING, SANDBOX_RESOURCE_READY, TOOLS_CALL
from ...views import effects as fx
from ...views import events as ev
from ...views.jsonrpc import REFUSED, RequestId, is_id, json_text
from ...views.requests import REQUEST_HANDLERS
from ...views.session import ViewSession
from ..process.core import Host, MountedView
from . import frames as f
from . import proxied
from .audit import Auditor
from .consents import Consents
from .page import Page
from .pagetemplates import PageTemplates
from .ports import ToolRunner

log = logging.getLogger("mcp_apps_host.views")
# The requests a view may send: each is one trace, named after its method (any other name a view
# makes up is not a span name).
VIEW_REQUESTS = frozenset({INITIALIZE, PING, *REQUEST_HANDLERS})


class ViewNews(Protocol):
    """What the conversation hears of its views."""

    def chat_message(self, view: ViewDriver, message: fx.PostChatMessage) -> None: ...

    def model_context(self, view: ViewDriver, update: fx.ModelContextUpdated) -> None: ...

    def app_tools_changed(self, view: ViewDriver, tools: tuple[AppTool, ...]) -> None: ...

    def resized(self, view: ViewDriver, height: int) -> None: ...

    def open_view(self, view: ViewDriver, tool: str, arguments: dict[str, Any]) -> str | None:
        """Call ``tool`` of the view's server as the person's own call, its view shown; or why it cannot start."""
        ...

    def view_gone(self, view: ViewDriver) -> None: ...


class ViewLifecycle(Protocol):
    """The tab's registry of live views: told when a view is up and when it ended."""

    def ready(self, view: ViewDriver) -> None: ...

    def ended(self, view: ViewDriver, change: fx.StateChanged) -> None: ...


@dataclass(frozen=True)
class ViewPorts:
    """What every view of a tab reaches: the same for all of them."""

    host: Host
    page: Page
    audit: Auditor
    consents: Consents
    tools: ToolRunner
    news: ViewNews
    lifecycle: ViewLifecycle
    page_templates: PageTemplates


@dataclass(eq=False)
class ViewDriver:
    mounted: MountedView
    session: ViewSession
    ports: ViewPorts
    call_id: int | None
    instance: str | None = None  # the conversation's id for this view, kept with its state
    trust: str = "unchecked"  # what the template check said when it was mounted
    pinned: bool = False  # in the side panel: live across turns and conversations until unpinned
    conversation: str | None = None  # the conversation it was mounted in
    in_panel: bool = False  # mounted straight into the side panel: it has no call card on the page
    tasks: dict[RequestId, asyncio.Task[None]] = field(default_factory=dict)  # requests run for the view
    timers: set[asyncio.TimerHandle] = field(default_factory=set)  # those not yet due
    app_calls: dict[RequestId, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)  # its own tools
    traced: dict[RequestId, Span] = field(default_factory=dict)  # the view's requests not answered yet
    consent_spans: dict[RequestId, Span] = field(default_factory=dict)  # questions put to the person
    following: set[str] = field(default_factory=set)  # resources of its server it subscribed to

    @property
    def handle(self) -> str:
        return self.mounted.handle

    @property
    def server(self) -> str:
        return self.session.spec.server

    @property
    def label(self) -> str:
        """How the page and the model tell this view apart from the server's other views."""
        return f"view{self.call_id}" if self.call_id is not None else f"view-{self.handle[:6]}"

    # ---- the one way in ------------------------------------------------------------------------

    def drive(self, event: ev.Event) -> None:
        """Hand the view's session an event and carry out what it decides."""
        effects = self.session.handle(event)
        if isinstance(event, ev.TeardownTimedOut) and effects:
            # A view that does not answer its teardown may have hung its renderer, which every frame of
            # its origin shares: nothing started ahead there is handed to a later view, in any tab.
            self.ports.host.hung(self.mounted.origin)
        self._apply(effects)

    def from_view(self, message: Any) -> None:
        """A message the view posted: within its rate, decided by its session, on record with the decision."""
        session, audit = self.session, self.ports.audit
        limited = session.over_rate(message, asyncio.get_running_loop().time())
        if limited is not None and not any(isinstance(e, fx.Refused) for e in limited):
            self._apply(limited)  # refused again in the same burst: answered, not recorded
            return
        span = self._trace(message) if limited is None else None  # a flood is not traced
        with trace.use_span(span, end_on_exit=False) if span is not None else nullcontext():
            effects = session.handle(ev.FromView(message)) if limited is None else limited
            # One row for the message, carrying what was decided about it.
            verdict = next((e for e in effects if isinstance(e, (fx.Refused, fx.Decided))), None)
            decision = "refused" if isinstance(verdict, fx.Refused) else verdict.decision if verdict else None
            if span is not None and decision is not None:
                spans.decided(span, decision)
            raw = message if isinstance(message, dict) else {"value": message}
            method = raw.get("method")
            audit("view->host", method if isinstance(method, str) else None, server=self.server, view=self.handle,
                  msg_id=raw.get("id"), decision=decision, reason=verdict.reason if verdict else None, payload=raw)
            if method == TOOLS_CALL and decision == "refused":
                metrics.tool_call(self.server, self._tool_named(raw), "view", "refused")
            self._apply(effects, audited=verdict)

    def _trace(self, message: Any) -> Span | None:
        """The root span of a request the view sent (current while it is handled, and in what runs for it)."""
        if not isinstance(message, dict) or message.get("method") not in VIEW_REQUESTS or \
                not is_id(request_id := message.get("id")):
            return None
        method: str = message["method"]
        params = message.get("params")
        tool = arguments = None
        if method == TOOLS_CALL and isinstance(params, dict):
            name = params.get("name")
            tool = name if isinstance(name, str) and name in self.session.spec.all_tools else None
            arguments = params.get("arguments") if isinstance(params.get("arguments"), dict) else None
        earlier = self.traced.pop(request_id, None)
        if earlier is not None:  # the same id again before its answer: the earlier one is not followed further
            spans.finish(earlier, "cancelled")
        span = spans.view_request(method, request_id, server=self.server, view=self.handle, tool=tool,
                                  arguments=arguments)
        self.traced[request_id] = span
        return span

    def _tool_named(self, request: dict[str, Any]) -> str:
        """The tool a view's tools/call names, if its server has it (a metric label, so from a known set)."""
        params = request.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        return name if isinstance(name, str) and name in self.session.spec.all_tools else metrics.UNKNOWN_TOOL

    async def call_app_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call a tool the view offers; the CallToolResult, or :class:`CallFailed` saying why there is none."""
        request_id = self.session.next_host_id()
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.app_calls[request_id] = answer
        try:
            self.drive(ev.CallAppTool(request_id, name, arguments))
            return await answer
        except asyncio.CancelledError:
            if not self.ended:  # the view hears that nobody waits for the answer any more
                self.drive(ev.CancelAppTool(request_id))
            raise
        finally:
            self.app_calls.pop(request_id, None)

    @property
    def ended(self) -> bool:
        return self.session.state in (fx.ViewState.CLOSED, fx.ViewState.ERROR)

    def stop(self) -> None:
        """The view is gone: nothing runs for it any more, and whoever waits on its tools hears why."""
        self.ports.consents.withdraw(self.handle)
        for span in [*self.consent_spans.values(), *self.traced.values()]:
            spans.finish(span, "cancelled")
        self.consent_spans.clear()
        self.traced.clear()
        for timer in self.timers:
            timer.cancel()
        self.timers.clear()
        for task in self.tasks.values():
            task.cancel()
        self.tasks.clear()
        proxied.unfollow_all(self.ports.host, self.server, self.following, self._resource_updated)
        for waiting in self.app_calls.values():
            if not waiting.done():
                waiting.set_exception(CallFailed("the view closed before its tool answered"))

    # ---- the one place effects are carried out ---------------------------------------------------

    def _apply(self, effects: list[fx.Effect], audited: object = None) -> None:
        for effect in effects:
            self._carry_out(effect, audited)

    def _carry_out(self, effect: fx.Effect, audited: object) -> None:
        ports, page, handle = self.ports, self.ports.page, self.handle
        match effect:
            case fx.PostToView(message):
                if message.get("method") != SANDBOX_RESOURCE_READY:  # the template is on record by hash
                    ports.audit("host->view", message.get("method"), server=self.server, view=handle,
                                msg_id=message.get("id"), payload=message)
                frame = f.ViewPost(view=handle, message=ports.page_templates.message(self.mounted.template, message))
                span = self._answered(message)
                if span is None:
                    page.send(frame)
                else:
                    with answers.answering(span):  # it ends once the answer has left, after its audit commit
                        page.send(frame)
            case fx.Decided(method, request_id, decision, reason):
                if effect is not audited:
                    ports.audit("view->host", method, server=self.server, view=handle, msg_id=request_id,
                                decision=decision, reason=reason)
            case fx.Refused(method, reason):
                log.info("view %s (%s): refused %s: %s", handle[:8], self.server, method, reason)
                if effect is not audited:
                    ports.audit("view->host", method, server=self.server, view=handle, decision="refused",
                                reason=reason)
                page.send(f.ViewLog(view=handle, level="warning", text=f"refused {method or 'message'}: {reason}"))
            case fx.StateChanged(state, error):
                if state == fx.ViewState.READY:
                    page.send(f.ViewStateFrame(view=handle, state=str(state), error=error))
                    self._send_display_mode()  # the modes the view declared, for its header
                    ports.lifecycle.ready(self)
                else:
                    ports.lifecycle.ended(self, effect)
            case fx.AskConsent():
                self._ask(effect)
            case fx.ModelContextUpdated(content, structured):
                summary = json_text({"content": content, "structuredContent": structured})
                page.send(f.ViewContext(view=handle, text=summary[:2000]))
                ports.news.model_context(self, effect)
            case fx.PostChatMessage():
                ports.news.chat_message(self, effect)
            case fx.ProxyToolCall(request_id):
                self._run(request_id, proxied.tool_call(ports.tools, self.server, effect, self._progress(effect)))
            case fx.ProxyResourceRead(request_id):
                self._run(request_id, proxied.resource_read(ports.host, self.server, effect))
            case fx.ProxyResourceList(request_id):
                self._run(request_id, proxied.resource_list(ports.host, self.server, effect))
            case fx.ProxyResourceSubscribe(request_id):
                self._run(request_id, proxied.follow(ports.host, self.server, effect, self.following,
                                                     self._resource_updated))
            case fx.KeepViewState(request_id):
                self._run(request_id, proxied.view_state(ports.host, self.instance, self.conversation, effect))
            case fx.Sample(request_id):
                self._run(request_id, proxied.sample(ports.host, ports.audit, self.server, handle, effect))
            case fx.SaveFiles(request_id):
                self._run(request_id, proxied.save_files(ports.host, page, self.server, handle, effect))
            case fx.CancelProxied(request_id):
                task = self.tasks.pop(request_id, None)
                if task is not None:
                    task.cancel()
            case fx.Download():
                page.send(proxied.download_frame(handle, effect))
            case fx.OpenView(request_id, name, arguments):
                problem = ports.news.open_view(self, name, arguments)
                self.drive(ev.RequestCompleted(request_id, {}) if problem is None
                           else ev.RequestCompleted(request_id, error=(REFUSED, f"{OPEN_VIEW}: {problem}")))
            case fx.DisplayModeChanged():
                self._send_display_mode()
            case fx.Resize(width, height):
                page.send(f.ViewSize(view=handle, width=width, height=height))
                if height is not None:
                    ports.news.resized(self, height)
            case fx.Log(level, text):
                page.send(f.ViewLog(view=handle, level=level, text=text))
            case fx.OpenLink(url):
                page.send(f.OpenLink(url=url))
            case fx.StartInitTimer(seconds):
                self._after(seconds, ev.InitTimedOut())
            case fx.StartTeardownTimer(seconds):
                self._after(seconds, ev.TeardownTimedOut())
            case fx.StartRequestTimer(request_id, seconds):
                self._after(seconds, ev.RequestTimedOut(request_id))
            case fx.AppToolsChanged(tools):
                ports.news.app_tools_changed(self, tools)
            case fx.AppToolResult(request_id, result, error):
                waiting = self.app_calls.pop(request_id, None)
                if waiting is None or waiting.done():
                    return
                if result is not None:
                    waiting.set_result(result)
                else:
                    waiting.set_exception(CallFailed(error or "the app tool failed"))
            case _:
                assert_never(effect)

    # ---- what runs for the view ----------------------------------------------------------------

    def _run(self, request_id: RequestId, work: Coroutine[Any, Any, ev.Event]) -> None:
        """Run a request of the view's; the event it ends with drives the view."""

        async def run() -> None:
            done = await work
            self.tasks.pop(request_id, None)
            self.drive(done)

        # It runs in its request's trace, whatever frame set it off (the request, or the person's consent).
        span = self.traced.get(request_id)
        with trace.use_span(span, end_on_exit=False) if span is not None else nullcontext():
            self.tasks[request_id] = asyncio.get_running_loop().create_task(run())

    def _resource_updated(self, uri: str) -> None:
        self.drive(ev.ResourceUpdated(uri))

    def _progress(self, call: fx.ProxyToolCall) -> ProgressFn:
        async def forward(progress: float, total: float | None, message: str | None) -> None:
            if call.progress_token is not None:
                self.drive(ev.Progress(call.progress_token, progress, total, message))

        return forward

    def _after(self, seconds: float, event: ev.Event) -> None:
        def due() -> None:
            self.timers.discard(timer)  # kept only while it may still fire: a view's life asks many questions
            self.drive(event)

        timer = asyncio.get_running_loop().call_later(seconds, due)
        self.timers.add(timer)

    def _send_display_mode(self) -> None:
        session = self.session
        self.ports.page.send(f.ViewDisplayMode(view=self.handle, mode=session.display_mode,
                                               available=session.available_modes()))

    def _answered(self, message: dict[str, Any]) -> Span | None:
        """The span of the request ``message`` answers, with its outcome; None when it is not followed."""
        if "method" in message or not ("result" in message or "error" in message):
            return None
        request_id = message.get("id")
        span = self.traced.pop(request_id, None) if is_id(request_id) else None
        if span is not None:
            result = message.get("result")
            failed = "error" in message or (isinstance(result, dict) and result.get("isError") is True)
            outcome: spans.Outcome = "ok" if not failed else "error" if "error" in message else "tool-error"
            spans.finish(span, outcome, end=False)
        return span

    def _ask(self, ask: fx.AskConsent) -> None:
        ports = self.ports
        self.consent_spans[ask.token] = spans.start(f"consent {ask.kind}", **{spans.SERVER: self.server})

        def answered(allow: bool, remember: bool) -> None:
            span = self.consent_spans.pop(ask.token, None)
            if span is not None:
                spans.finish(span, "allowed" if allow else "denied")
            if self.ended:
                return
            if allow and remember and ask.kind == "tool-call" and ask.can_remember:
                ports.host.consent.remember_allow(self.server, ask.subject)
                ports.audit("view->host", TOOLS_CALL, server=self.server, view=self.handle, msg_id=ask.token,
                            decision="consented",
                            reason=f"the person chose always allow {self.server}/{ask.subject}")
            if not allow and ask.kind == "tool-call":
                metrics.tool_call(self.server, ask.subject, "view", "declined")
            self.drive(ev.ConsentAnswered(ask.token, allow))

        question = {"kind": ask.kind, "server": self.server, "title": ask.title, "detail": ask.detail,
                    "subject": ask.subject, "can_remember": ask.can_remember, **ask.extra}
        ports.consents.ask(question, self.handle, answered)
