"""ViewSession: the host side of the MCP Apps view protocol for one mounted view.

Sans-IO: `receive(message)` takes one JSON-RPC message that arrived from the
view (through its sandbox proxy) and returns the effects the host must carry
out; the host reports back with `complete_request`, `answer_consent` and the
tool lifecycle methods, which return effects too. Nothing here does I/O, so
every edge case is a short unit test. What each request method does is in
`requests.py`; the effects are in `effects.py`.

States: created → resource_sent → initializing → ready → tearing_down → closed
(and error). Host → view traffic is queued until `ui/notifications/initialized`:
the view's SDK drops anything that arrives earlier. The tools a view offers of its
own are the business of `AppToolClient` (`apptools.py`).
"""

from __future__ import annotations

import itertools
from typing import Any, assert_never

from ..errors import InvalidMessage
from ..settings import Limits
from ..values import protocol as M
from ..values.decisions import ConsentKind
from ..values.protocol import LOG_LEVELS, PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS
from ..version import __version__
from . import events as ev
from . import jsonrpc as rpc
from .apptools import AppToolClient
from .boot import Boot
from .context import HostEnvironment, ViewSpec, host_capabilities, host_context
from .display import DisplayControl
from .effects import (
    AskConsent,
    CancelProxied,
    Decided,
    Effect,
    Log,
    ModelContextUpdated,
    PostToView,
    Refused,
    StartTeardownTimer,
    StateChanged,
    ViewState,
)
from .jsonrpc import Notification, Request, RequestId, Response
from .lifecycle import HostToView
from .pending import PendingRequests
from .ratelimit import MessageRate, over_rate
from .requests import REQUEST_HANDLERS
from .rules import view_rule
from .states import ENDED, Step, ToolPhase, advance

# Frames deeper than 256 levels are cut before they are parsed; a depth rule above that would
# let a cut message through.
MAX_DEPTH = 200


class ViewSession(HostToView, DisplayControl, Boot):
    def __init__(self, spec: ViewSpec, env: HostEnvironment, limits: Limits) -> None:
        self.spec = spec
        self.env = env
        self.limits = limits
        self.state = ViewState.CREATED
        self.display_mode = "inline"
        # The mode and container dimensions the view was last told of.
        self._announced = ("inline", {})
        self._told_cap = False  # the view was told its inline height is capped
        self.app_info: dict[str, Any] = {}
        self.app_capabilities: dict[str, Any] = {}
        self.model_context: ModelContextUpdated | None = None
        self._queue: list[dict[str, Any]] = []  # host → view, held until initialized
        self._pending = PendingRequests()
        self.rate = MessageRate(limits.max_view_messages_per_second)
        self._host_ids = itertools.count()
        self.app_tools = AppToolClient(limits, self.next_host_id)
        self._teardown_id: RequestId | None = None
        self.tool_phase = ToolPhase.AWAITING_INPUT
        self._resource_ahead = False  # sent with the mount (`send_resource_ahead`)
        self._proxy_seen = False
        # A view booted ahead of its call keeps its ui/initialize unanswered until a call takes it
        # (`take`): its toolInfo and tool data exist only then.
        self.held_back = False
        self._held_init: Request | None = None
        # What the view was given, so that it can be rendered again the same way (`serve --watch`).
        self.last_input: dict[str, Any] | None = None
        self.last_result: dict[str, Any] | None = None
        self.last_cancelled: str | None = None

    # ---- the one way in ------------------------------------------------------------------

    def handle(self, event: ev.Event) -> list[Effect]:
        """Whatever happened to the view, and what the host must do about it."""
        match event:
            case ev.FromView(message):
                return self.receive(message)
            case ev.SendResource():
                return self.send_resource_ahead()
            case ev.Take(spec):
                return self.take(spec)
            case ev.ToolInputPartial(arguments):
                return self.tool_input_partial(arguments)
            case ev.ToolInput(arguments):
                return self.tool_input(arguments)
            case ev.ToolResult(result):
                return self.tool_result(result)
            case ev.ToolCancelled(reason):
                return self.tool_cancelled(reason)
            case ev.LaterResult(arguments, result):
                return self.later_result(arguments, result)
            case ev.RequestCompleted(request_id, result, error):
                return self.complete_request(request_id, result, error)
            case ev.Progress(token, progress, total, message):
                return self.progress(token, progress, total, message)
            case ev.ConsentAnswered(token, allowed):
                return self.answer_consent(token, allowed)
            case ev.CallAppTool(request_id, name, arguments):
                return self.call_app_tool(request_id, name, arguments)
            case ev.CancelAppTool(request_id):
                return self.app_tools.cancel(request_id)
            case ev.InitTimedOut():
                return self.init_timed_out()
            case ev.TeardownTimedOut():
                return self.teardown_timed_out()
            case ev.RequestTimedOut(request_id):
                return self.request_timed_out(request_id)
            case ev.Teardown(reason):
                return self.teardown(reason)
            case ev.Fail(reason):
                return self.fail(reason)
            case ev.DisplayModeRequested(mode):
                return self.switch_display_mode(mode)
            case ev.ContainerMeasured(mode, width, height):
                return self.container_measured(mode, width, height)
            case ev.HostContextChanged(changes):
                return self.host_context_changed(**changes)
            case ev.ServerToolsChanged(spec):
                return self.server_tools_changed(spec)
            case ev.ResourceUpdated(uri):
                return self.resource_updated(uri)
            case _:
                assert_never(event)

    def next_host_id(self) -> RequestId:
        """An id for a request the host sends the view."""
        return next(self._host_ids)

    # ---- from the view -----------------------------------------------------------------

    def receive(self, raw: Any) -> list[Effect]:
        """One message from the view. Never raises for anything the view sends."""
        if self.state in ENDED:
            return [Refused(_method_of(raw), f"view is {self.state}")]
        # Before anything serialises it: Python's JSON encoder recurses too.
        max_depth = min(self.limits.max_view_message_depth, MAX_DEPTH)
        if rpc.nesting_depth(raw, max_depth) > max_depth:
            return self._refuse_raw(raw, f"nested deeper than max_view_message_depth ({max_depth})",
                                    rpc.INVALID_REQUEST)
        size = rpc.message_size(raw)
        if size > self.limits.max_view_message_bytes and self._answers_app_tool_call(raw):
            # An app tool's result may be larger than other messages (max_app_tool_result_bytes).
            if size > self.limits.max_app_tool_result_bytes:
                return self.app_tools.too_large(raw["id"], size)
        elif size < 0 or size > self.limits.max_view_message_bytes:
            reason = (
                "not JSON-serialisable"
                if size < 0
                else f"{size} bytes is larger than max_view_message_bytes ({self.limits.max_view_message_bytes})"
            )
            return self._refuse_raw(raw, reason, rpc.INVALID_REQUEST)
        try:
            msg = rpc.parse_message(raw)
        except InvalidMessage as exc:
            effects: list[Effect] = [Refused(_method_of(raw), exc.reason)]
            if exc.reply_id is not None and self.state != ViewState.CREATED:
                effects.append(PostToView(rpc.error(exc.reply_id, rpc.INVALID_REQUEST, exc.reason)))
            return effects
        if isinstance(msg, Request):
            return self._on_request(msg)
        if isinstance(msg, Notification):
            return self._on_notification(msg)
        return self._on_response(msg)

    def over_rate(self, raw: Any, now: float) -> list[Effect] | None:
        """None when the view is within max_view_messages_per_second at ``now``; otherwise what the
        host does instead of handling the message (`ratelimit.over_rate`)."""
        return over_rate(self.rate, self.limits.max_view_messages_per_second, raw, now)

    def _answers_app_tool_call(self, raw: Any) -> bool:
        return isinstance(raw, dict) and "method" not in raw and rpc.is_id(raw.get("id")) \
            and self.app_tools.is_call(raw["id"])

    def _refuse_raw(self, raw: Any, reason: str, code: int) -> list[Effect]:
        effects: list[Effect] = [Refused(_method_of(raw), reason)]
        msg_id = raw.get("id") if isinstance(raw, dict) else None
        if isinstance(raw, dict) and "method" in raw and isinstance(msg_id, (int, str)) and rpc.is_id(msg_id):
            effects.append(PostToView(rpc.error(msg_id, code, reason)))
        return effects

    def _on_request(self, req: Request) -> list[Effect]:
        if self.state == ViewState.CREATED:
            return [Refused(req.method, "request before the sandbox proxy was ready")]
        if req.id in self._pending:
            return [Refused(req.method, f"id {req.id!r} is already in use"),
                    PostToView(rpc.error(req.id, rpc.INVALID_REQUEST, f"id {req.id!r} is already in use"))]
        if req.method == M.INITIALIZE:
            return self._initialize(req)
        if req.method == M.PING:
            return [PostToView(rpc.result(req.id, {}))]
        if self.state == ViewState.TEARING_DOWN:
            return self.reject(req, rpc.INVALID_REQUEST, "the view is being torn down")
        if self.state not in (ViewState.READY, ViewState.INITIALIZING):
            return self.reject(req, rpc.INVALID_REQUEST, f"{req.method} before ui/initialize")
        if len(self._pending) >= self.limits.max_pending_requests_per_view:
            return self.reject(
                req, rpc.REFUSED,
                "too many requests in flight "
                f"(max_pending_requests_per_view = {self.limits.max_pending_requests_per_view})",
            )
        handler = REQUEST_HANDLERS.get(req.method)
        if handler is None:
            return self.reject(req, rpc.METHOD_NOT_FOUND, f"method not found: {req.method}")
        return handler(self, req)

    def reject(self, req: Request, code: int, reason: str) -> list[Effect]:
        """Refuse a request: an error reply naming the rule, and a record of it."""
        return [Refused(req.method, reason), PostToView(rpc.error(req.id, code, reason))]

    def _initialize(self, req: Request) -> list[Effect]:
        if self.state != ViewState.RESOURCE_SENT or self._held_init is not None:
            return self.reject(req, rpc.INVALID_REQUEST, "ui/initialize was already received")
        caps = req.params.get("appCapabilities", {})
        info = req.params.get("appInfo", {})
        if not isinstance(caps, dict) or not isinstance(info, dict):
            return self.reject(req, rpc.INVALID_PARAMS, "appCapabilities and appInfo must be objects")
        if self.held_back:
            self._held_init = req
            return []
        return self._answer_initialize(req)

    def _answer_initialize(self, req: Request) -> list[Effect]:
        caps = req.params.get("appCapabilities", {})
        info = req.params.get("appInfo", {})
        self.app_capabilities, self.app_info = caps, info
        requested = req.params.get("protocolVersion")
        version = requested if requested in SUPPORTED_PROTOCOL_VERSIONS else PROTOCOL_VERSION
        self.state = advance(self.state, Step.INITIALIZE_ANSWERED)
        return [PostToView(rpc.result(req.id, {
            "protocolVersion": version,
            "hostInfo": {"name": "mcp-apps-host", "version": __version__},
            "hostCapabilities": host_capabilities(self.spec),
            "hostContext": self.host_context(),
        }))]

    def host_context(self) -> dict[str, Any]:
        return host_context(self.spec, self.env, self.limits, self.display_mode)

    def busy(self) -> bool:
        """Requests of the view's are in flight (or waiting for the person)."""
        return len(self._pending) > 0

    def answer_later(self, request_id: RequestId) -> None:
        """The host completes this request later (:meth:`complete_request`)."""
        self._pending.add(request_id)

    def ask(self, req: Request, kind: ConsentKind, title: str, detail: str, on_allow: list[Effect], *,
            answer_later: bool = False, subject: str = "", can_remember: bool = False,
            reason: str = "needs the person's consent", extra: dict[str, Any] | None = None) -> list[Effect]:
        """Put the request to the person; ``on_allow`` happens if they allow it (:meth:`answer_consent`).
        The server's entry may allow or deny the kind of request outright (``"views"``): then nobody is asked."""
        rule, why = view_rule(self.spec.server, self.spec.view_rules, kind)
        if rule == "deny":
            return self.reject(req, rpc.REFUSED, f"{req.method} refused: {why}")
        if rule == "allow":
            if answer_later:
                self._pending.add(req.id)
                return [Decided(req.method, req.id, "allowed", why), *on_allow]
            return [Decided(req.method, req.id, "allowed", why), *on_allow, PostToView(rpc.result(req.id, {}))]
        self._pending.add_question(req, on_allow, answer_later)
        return [Decided(req.method, req.id, "asked", reason),
                AskConsent(req.id, kind, title, detail, subject or title, can_remember, extra or {})]

    # ---- notifications and responses from the view ------------------------------------

    def _on_notification(self, note: Notification) -> list[Effect]:
        method = note.method
        if method == M.SANDBOX_PROXY_READY:
            return self.proxy_ready()
        if method.startswith(M.SANDBOX_PREFIX):
            return [Refused(method, "sandbox messages may only come from the proxy, once")]
        if self.state == ViewState.CREATED:
            return [Refused(method, "notification before the sandbox proxy was ready")]
        if method == M.INITIALIZED:
            if self.state != ViewState.INITIALIZING:
                return [Refused(method, f"initialized while {self.state}")]
            self.state = advance(self.state, Step.INITIALIZED)
            queued, self._queue = self._queue, []
            return [StateChanged(ViewState.READY), *(PostToView(m) for m in queued),
                    *self.app_tools.start(self.app_capabilities)]
        if method == M.TOOLS_LIST_CHANGED:
            if self.state != ViewState.READY:
                return [Refused(method, f"tools list changed while {self.state}")]
            return self.app_tools.list_changed()
        if method == M.SIZE_CHANGED:
            return self.resized(note.params)
        if method == M.LOG_MESSAGE:
            return [log_message(note.params)]
        if method == M.CANCELLED:
            rid = note.params.get("requestId")
            if rpc.is_id(rid) and rid in self._pending:
                return [CancelProxied(rid)]
            return [Refused(method, f"no request {rid!r} in flight")]
        if method == M.REQUEST_TEARDOWN:
            return self.teardown("the view asked to close")
        return [Refused(method, f"unknown notification {method}")]

    def _on_response(self, resp: Response) -> list[Effect]:
        if self._teardown_id is not None and resp.id == self._teardown_id:
            # A reply, even an error (-32601 from a view with no handler), means "go ahead".
            return self._closed()
        if self.app_tools.owns(resp.id):
            return self.app_tools.on_response(resp)
        return [Refused(None, f"response to unknown request id {resp.id!r}")]

    # ---- the host reports back -----------------------------------------------------------

    def complete_request(self, request_id: RequestId, result: dict[str, Any] | None = None,
                         error: tuple[int, str] | None = None) -> list[Effect]:
        """The host finished a proxied request (tools/call, resources/read)."""
        if not self._pending.complete(request_id) or self.state in ENDED:
            return []
        if error is not None:
            return [PostToView(rpc.error(request_id, error[0], error[1]))]
        return [PostToView(rpc.result(request_id, result or {}))]

    def answer_consent(self, token: RequestId, allowed: bool) -> list[Effect]:
        effects = self._pending.answer(token, allowed)
        if effects is None or self.state in ENDED:
            return []
        return effects

    # ---- teardown ---------------------------------------------------------------------------

    def teardown(self, reason: str) -> list[Effect]:
        if self.state in ENDED or self.state == ViewState.TEARING_DOWN:
            return []
        if self.state != ViewState.READY:
            return self._closed()
        self.state = advance(self.state, Step.TEARDOWN_SENT)
        self._teardown_id = self.next_host_id()
        return [PostToView(rpc.request(self._teardown_id, M.RESOURCE_TEARDOWN, {"reason": reason})),
                StartTeardownTimer(self.limits.teardown_timeout)]

    def teardown_timed_out(self) -> list[Effect]:
        return self._closed() if self.state == ViewState.TEARING_DOWN else []

    def init_timed_out(self) -> list[Effect]:
        if self.held_back and self._held_init is not None:
            return []  # booted and waiting for a call: the host lets it lapse before its SDK gives up
        if self.state in (ViewState.RESOURCE_SENT, ViewState.INITIALIZING):
            return self.fail(
                f"the view did not finish its handshake within view_init_timeout ({self.limits.view_init_timeout:g} s)"
                + ("" if self.state == ViewState.INITIALIZING else "; it never sent ui/initialize")
            )
        return []

    def fail(self, reason: str) -> list[Effect]:
        if self.state in ENDED:
            return []
        self.state = advance(self.state, Step.FAILED)
        return [*self._drop_pending(f"the view failed: {reason}"), StateChanged(ViewState.ERROR, reason)]

    def _closed(self) -> list[Effect]:
        self.state = advance(self.state, Step.CLOSED)
        return [*self._drop_pending("the view was closed"), StateChanged(ViewState.CLOSED)]

    def _drop_pending(self, reason: str) -> list[Effect]:
        self._queue.clear()
        return [*self._pending.drop(), *self.app_tools.close(reason)]


def log_message(params: dict[str, Any]) -> Effect:
    """`notifications/message`: a line for the view's log (an unknown level reads as info)."""
    level = params.get("level")
    data, logger = params.get("data"), params.get("logger")
    text = data if isinstance(data, str) else rpc.json_text(data)
    return Log(level if level in LOG_LEVELS else "info", f"{logger}: {text}" if isinstance(logger, str) else text)


def _method_of(raw: Any) -> str | None:
    method = raw.get("method") if isinstance(raw, dict) else None
    return method if isinstance(method, str) else None
