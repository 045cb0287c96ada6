"""ViewSession: the host side of the MCP Apps view protocol for one mounted view.

Sans-IO: `receive(message)` takes one JSON-RPC message that arrived from the
view (through its sandbox proxy) and returns the effects the host must carry
out; the host reports back with `complete_request`, `answer_consent` and the
tool lifecycle methods, which return effects too. Nothing here does I/O, so
every edge case is a short unit test.

States: created → resource_sent → initializing → ready → tearing_down → closed
(and error). Host → view traffic is queued until `ui/notifications/initialized`:
the view's SDK drops anything that arrives earlier.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from .. import PROTOCOL_VERSION, __version__
from ..policy.links import describe_link, sanitize_filename
from ..servers.catalog import ToolEntry
from ..settings import Limits
from . import jsonrpc as rpc
from .jsonrpc import InvalidMessage, Notification, Request, RequestId, Response

DISPLAY_MODES = ("inline", "fullscreen", "pip")
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
SUPPORTED_PROTOCOL_VERSIONS = ("2026-01-26",)


class ViewState(StrEnum):
    CREATED = "created"
    RESOURCE_SENT = "resource_sent"
    INITIALIZING = "initializing"
    READY = "ready"
    TEARING_DOWN = "tearing_down"
    CLOSED = "closed"
    ERROR = "error"


class IllegalTransition(RuntimeError):
    """The host asked for something the view's state does not allow (a host bug, not a view's)."""


# ---- effects ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PostToView:
    message: dict[str, Any]


@dataclass(frozen=True)
class ProxyToolCall:
    request_id: RequestId
    name: str
    arguments: dict[str, Any]
    progress_token: str | int | None


@dataclass(frozen=True)
class ProxyResourceRead:
    request_id: RequestId
    uri: str


@dataclass(frozen=True)
class CancelProxied:
    request_id: RequestId


@dataclass(frozen=True)
class AskConsent:
    token: RequestId
    kind: str  # tool-call | message | open-link | download | sampling
    title: str
    detail: str
    subject: str = ""  # the tool name or URL the question is about
    can_remember: bool = False  # "always allow this" may be offered
    extra: dict[str, Any] = field(default_factory=dict)  # kind-specific facts for the dialog


@dataclass(frozen=True)
class OpenLink:
    url: str


@dataclass(frozen=True)
class PostChatMessage:
    role: str
    content: list[dict[str, Any]]


@dataclass(frozen=True)
class ModelContextUpdated:
    content: list[dict[str, Any]] | None
    structured_content: dict[str, Any] | None


@dataclass(frozen=True)
class DisplayModeChanged:
    mode: str


@dataclass(frozen=True)
class Resize:
    width: int | None
    height: int | None


@dataclass(frozen=True)
class Log:
    level: str
    text: str


@dataclass(frozen=True)
class Decided:
    """A policy or the person decided on a request: for the audit trail."""

    method: str
    request_id: RequestId
    decision: str  # allowed | asked | consented | declined
    reason: str


@dataclass(frozen=True)
class Sample:
    """The person allowed a sampling/createMessage: the host asks its model and completes the request."""

    request_id: RequestId
    params: dict[str, Any]


@dataclass(frozen=True)
class Download:
    filename: str
    mime_type: str
    text: str | None
    blob: str | None  # base64


@dataclass(frozen=True)
class Refused:
    """A message was refused or dropped: for the log and the audit trail."""

    method: str | None
    reason: str


@dataclass(frozen=True)
class StateChanged:
    state: ViewState
    error: str | None = None


@dataclass(frozen=True)
class StartTeardownTimer:
    seconds: float


@dataclass(frozen=True)
class StartInitTimer:
    seconds: float


Effect = (
    PostToView
    | ProxyToolCall
    | ProxyResourceRead
    | CancelProxied
    | AskConsent
    | OpenLink
    | PostChatMessage
    | ModelContextUpdated
    | Resize
    | DisplayModeChanged
    | Log
    | Refused
    | Decided
    | Sample
    | Download
    | StateChanged
    | StartTeardownTimer
    | StartInitTimer
)


# ---- host context -------------------------------------------------------------------------


@dataclass
class HostEnvironment:
    """What the host knows about the page the view is shown in."""

    theme: str = "light"
    styles: dict[str, Any] = field(default_factory=dict)
    locale: str = "en-US"
    time_zone: str = "UTC"
    user_agent: str = f"mcp-apps-host/{__version__}"
    touch: bool = False
    hover: bool = True
    max_width: int | None = None


@dataclass(frozen=True)
class ViewSpec:
    """Everything fixed when the view is mounted."""

    server: str
    tool: ToolEntry
    html: str
    call_id: RequestId | None
    csp: dict[str, list[str]]  # what the sandbox enforces (for hostCapabilities.sandbox.csp)
    permissions: dict[str, dict[str, Any]]  # granted, camelCase
    allow: str  # the inner iframe's allow attribute
    app_tools: frozenset[str]  # names of this server's tools a view may call ("app" visibility)
    all_tools: frozenset[str]  # every tool name of this server (to tell "hidden" from "unknown")
    # Consent policy for tools/call: name -> (allow|ask|deny, reason, may "always allow" be offered).
    decide_tool_call: Callable[[str], tuple[str, str, bool]] = lambda _name: ("allow", "no policy", False)
    max_download_bytes: int = 20 * 1024 * 1024
    # sampling/createMessage: () -> (allow|ask|deny, reason); off unless the host enables it per server.
    decide_sampling: Callable[[], tuple[str, str]] = lambda: ("deny", "sampling is off")
    sampling_enabled: bool = False


@dataclass
class _PendingConsent:
    request: Request
    effects_on_allow: list[Effect]
    reply_on_allow: dict[str, Any] | None  # None: the allowed request is answered later (a proxied call)


class ViewSession:
    def __init__(self, spec: ViewSpec, env: HostEnvironment, limits: Limits) -> None:
        self.spec = spec
        self.env = env
        self.limits = limits
        self.state = ViewState.CREATED
        self.display_mode = "inline"
        self.app_info: dict[str, Any] = {}
        self.app_capabilities: dict[str, Any] = {}
        self.model_context: ModelContextUpdated | None = None
        self._queue: list[dict[str, Any]] = []  # host → view, held until initialized
        self._pending: set[RequestId] = set()  # view requests the host has not answered yet
        self._consents: dict[RequestId, _PendingConsent] = {}
        self._next_host_id = 0
        self._teardown_id: RequestId | None = None
        self._sent_input = False
        self._sent_result = False

    # ---- from the view -----------------------------------------------------------------

    def receive(self, raw: Any) -> list[Effect]:
        """One message from the view. Never raises for anything the view sends."""
        if self.state in (ViewState.CLOSED, ViewState.ERROR):
            return [Refused(_method_of(raw), f"view is {self.state}")]
        size = rpc.message_size(raw)
        if size < 0 or size > self.limits.max_view_message_bytes:
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
        if req.method == "ui/initialize":
            return self._initialize(req)
        if req.method == "ping":
            return [PostToView(rpc.result(req.id, {}))]
        if self.state == ViewState.TEARING_DOWN:
            return self._reject(req, rpc.INVALID_REQUEST, "the view is being torn down")
        if self.state not in (ViewState.READY, ViewState.INITIALIZING):
            return self._reject(req, rpc.INVALID_REQUEST, f"{req.method} before ui/initialize")
        if len(self._pending) >= self.limits.max_pending_requests_per_view:
            return self._reject(
                req, rpc.REFUSED,
                f"too many requests in flight (max_pending_requests_per_view = {self.limits.max_pending_requests_per_view})",
            )
        handler = _REQUEST_HANDLERS.get(req.method)
        if handler is None:
            return self._reject(req, rpc.METHOD_NOT_FOUND, f"method not found: {req.method}")
        return handler(self, req)

    def _reject(self, req: Request, code: int, reason: str) -> list[Effect]:
        return [Refused(req.method, reason), PostToView(rpc.error(req.id, code, reason))]

    def _initialize(self, req: Request) -> list[Effect]:
        if self.state != ViewState.RESOURCE_SENT:
            return self._reject(req, rpc.INVALID_REQUEST, "ui/initialize was already received")
        caps = req.params.get("appCapabilities", {})
        info = req.params.get("appInfo", {})
        if not isinstance(caps, dict) or not isinstance(info, dict):
            return self._reject(req, rpc.INVALID_PARAMS, "appCapabilities and appInfo must be objects")
        self.app_capabilities, self.app_info = caps, info
        requested = req.params.get("protocolVersion")
        version = requested if requested in SUPPORTED_PROTOCOL_VERSIONS else PROTOCOL_VERSION
        self.state = ViewState.INITIALIZING
        return [PostToView(rpc.result(req.id, {
            "protocolVersion": version,
            "hostInfo": {"name": "mcp-apps-host", "version": __version__},
            "hostCapabilities": self.host_capabilities(),
            "hostContext": self.host_context(),
        }))]

    def host_capabilities(self) -> dict[str, Any]:
        sandbox: dict[str, Any] = {"permissions": self.spec.permissions, "csp": self.spec.csp}
        return {
            "openLinks": {},
            "serverTools": {},
            "serverResources": {},
            "logging": {},
            "message": {},
            "updateModelContext": {},
            "downloadFile": {},
            **({"sampling": {}} if self.spec.sampling_enabled else {}),
            "sandbox": sandbox,
        }

    def available_display_modes(self) -> list[str]:
        return list(DISPLAY_MODES)

    def host_context(self) -> dict[str, Any]:
        tool = dict(self.spec.tool.definition)
        tool.setdefault("inputSchema", {"type": "object"})  # the view's SDK rejects a tool without one
        tool_info: dict[str, Any] = {"tool": tool}
        if self.spec.call_id is not None:
            tool_info["id"] = self.spec.call_id
        dims: dict[str, Any] = {"maxHeight": self.limits.inline_max_height}
        if self.env.max_width:
            dims["maxWidth"] = self.env.max_width
        return {
            "toolInfo": tool_info,
            "theme": self.env.theme,
            "styles": self.env.styles,
            "displayMode": self.display_mode,
            "availableDisplayModes": self.available_display_modes(),
            "containerDimensions": dims,
            "locale": self.env.locale,
            "timeZone": self.env.time_zone,
            "userAgent": self.env.user_agent,
            "platform": "web",
            "deviceCapabilities": {"touch": self.env.touch, "hover": self.env.hover},
            "safeAreaInsets": {"top": 0, "right": 0, "bottom": 0, "left": 0},
        }

    # ---- view → host requests ----------------------------------------------------------

    def _tools_call(self, req: Request) -> list[Effect]:
        name, args = req.params.get("name"), req.params.get("arguments", {})
        if not isinstance(name, str) or not isinstance(args, dict):
            return self._reject(req, rpc.INVALID_PARAMS, 'tools/call needs "name" (string) and "arguments" (object)')
        if name not in self.spec.all_tools:
            return self._reject(req, rpc.INVALID_PARAMS,
                                f"{name!r} is not a tool of server {self.spec.server!r}; a view may only call its own server's tools")
        if name not in self.spec.app_tools:
            return self._reject(req, rpc.REFUSED,
                                f"tool {name!r} of server {self.spec.server!r} is not visible to apps (its _meta.ui.visibility lacks \"app\")")
        meta = req.params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        if not rpc.is_id(token):
            token = None
        call = ProxyToolCall(req.id, name, args, token)
        decision, reason, can_remember = self.spec.decide_tool_call(name)
        if decision == "deny":
            return self._reject(req, rpc.REFUSED, f"tool {name!r} of server {self.spec.server!r} is denied: {reason}")
        if decision == "ask":
            detail = f"{self.spec.server} · {name}\n{rpc.json_text(args)}"
            return self._ask(req, "tool-call", f"{self.spec.server} wants to call {name}", detail, [call],
                             answer_later=True, subject=name, can_remember=can_remember, reason=reason)
        self._pending.add(req.id)
        return [Decided(req.method, req.id, "allowed", reason), call]

    def _resources_read(self, req: Request) -> list[Effect]:
        uri = req.params.get("uri")
        if not isinstance(uri, str) or not uri:
            return self._reject(req, rpc.INVALID_PARAMS, 'resources/read needs "uri" (string)')
        self._pending.add(req.id)
        return [ProxyResourceRead(req.id, uri)]

    def _open_link(self, req: Request) -> list[Effect]:
        url = req.params.get("url")
        if not isinstance(url, str) or not _is_web_url(url):
            return self._reject(req, rpc.INVALID_PARAMS, "ui/open-link: only absolute http and https URLs can be opened")
        try:
            link = describe_link(url)
        except ValueError as exc:
            return self._reject(req, rpc.INVALID_PARAMS, f"ui/open-link: {exc}")
        # Show the host as a person reads it, but open the ASCII form the browser will use.
        extra = {"display": link.display, "href": link.href or url, "differs": link.differs,
                 "hostAscii": link.host_ascii, "hostUnicode": link.host_unicode, "warnings": list(link.warnings)}
        return self._ask(req, "open-link", f"{self.spec.server} wants to open a link", link.display,
                         [OpenLink(link.href or url)], subject=link.href or url, extra=extra)

    def _message(self, req: Request) -> list[Effect]:
        role, content = req.params.get("role"), req.params.get("content")
        if isinstance(content, dict):  # the spec's examples send one block; the SDK sends an array
            content = [content]
        if role != "user" or not isinstance(content, list) or not content or not all(
            isinstance(b, dict) and isinstance(b.get("type"), str) for b in content
        ):
            return self._reject(req, rpc.INVALID_PARAMS, 'ui/message needs role "user" and content blocks')
        text = "\n".join(str(b.get("text", f"[{b.get('type')} block]")) for b in content)
        return self._ask(req, "message", f"{self.spec.server} wants to send a message", text,
                         [PostChatMessage("user", content)])

    def _download_file(self, req: Request) -> list[Effect]:
        contents = req.params.get("contents")
        if not isinstance(contents, list) or len(contents) != 1 or not isinstance(contents[0], dict):
            return self._reject(req, rpc.INVALID_PARAMS, 'ui/download-file needs "contents" with one embedded resource')
        block = contents[0]
        res = block.get("resource") if block.get("type") == "resource" else None
        if not isinstance(res, dict) or not isinstance(res.get("uri"), str):
            # A resource_link would make the host fetch on the view's behalf; embedded data only.
            return self._reject(req, rpc.INVALID_PARAMS, "ui/download-file: only embedded resources (type \"resource\") are supported")
        text, blob = res.get("text"), res.get("blob")
        if not isinstance(text, str) and not isinstance(blob, str):
            return self._reject(req, rpc.INVALID_PARAMS, "ui/download-file: the resource has neither text nor blob")
        size = len(text.encode("utf-8")) if isinstance(text, str) else len(blob) * 3 // 4  # type: ignore[arg-type]
        if size > self.spec.max_download_bytes:
            return self._reject(req, rpc.REFUSED, f"ui/download-file: {size} bytes is larger than max_download_bytes "
                                                  f"({self.spec.max_download_bytes})")
        mime = str(res["mimeType"]) if isinstance(res.get("mimeType"), str) else "application/octet-stream"
        name = sanitize_filename(res["uri"])
        detail = f"{name}\n{_human_size(size)} · {mime}"
        return self._ask(req, "download", f"{self.spec.server} wants to save a file", detail,
                         [Download(name, mime, text if isinstance(text, str) else None,
                                   blob if isinstance(blob, str) else None)], subject=name)

    def _sampling(self, req: Request) -> list[Effect]:
        messages, max_tokens = req.params.get("messages"), req.params.get("maxTokens")
        if not isinstance(messages, list) or not messages or not all(
            isinstance(m, dict) and m.get("role") in ("user", "assistant") and isinstance(m.get("content"), (dict, list))
            for m in messages
        ) or not (isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens > 0):
            return self._reject(req, rpc.INVALID_PARAMS,
                                'sampling/createMessage needs "messages" (role user|assistant, content) and "maxTokens" > 0')
        decision, reason = self.spec.decide_sampling()
        if decision != "ask":
            return self._reject(req, rpc.REFUSED, f"sampling/createMessage refused: {reason}")
        lines = []
        system = req.params.get("systemPrompt")
        if isinstance(system, str) and system:
            lines.append(f"[system] {system}")
        for m in messages:
            blocks = m["content"] if isinstance(m["content"], list) else [m["content"]]
            text = " ".join(str(b.get("text", f"[{b.get('type')}]")) for b in blocks if isinstance(b, dict))
            lines.append(f"[{m['role']}] {text}")
        return self._ask(req, "sampling", f"{self.spec.server} wants to ask the model", "\n".join(lines),
                         [Sample(req.id, req.params)], answer_later=True, subject="sampling/createMessage", reason=reason)

    def _update_model_context(self, req: Request) -> list[Effect]:
        content, structured = req.params.get("content"), req.params.get("structuredContent")
        if content is not None and not (isinstance(content, list) and all(isinstance(b, dict) for b in content)):
            return self._reject(req, rpc.INVALID_PARAMS, '"content" must be an array of content blocks')
        if structured is not None and not isinstance(structured, dict):
            return self._reject(req, rpc.INVALID_PARAMS, '"structuredContent" must be an object')
        self.model_context = ModelContextUpdated(content, structured)  # each update replaces the last
        return [self.model_context, PostToView(rpc.result(req.id, {}))]

    def _request_display_mode(self, req: Request) -> list[Effect]:
        mode = req.params.get("mode")
        if mode not in DISPLAY_MODES:
            return self._reject(req, rpc.INVALID_PARAMS, f'"mode" must be one of {", ".join(DISPLAY_MODES)}')
        # Only modes the view declared (inline is always possible): a view that never said it
        # can live fullscreen is not put there.
        declared = self.app_capabilities.get("availableDisplayModes")
        declared = declared if isinstance(declared, list) else []
        allowed = mode in self.available_display_modes() and (mode == "inline" or mode in declared)
        changed = allowed and mode != self.display_mode
        if changed:
            self.display_mode = mode
        # Always answer with the mode in effect: the view's SDK throws on a reply without one.
        effects: list[Effect] = [PostToView(rpc.result(req.id, {"mode": self.display_mode}))]
        if changed:
            effects += [DisplayModeChanged(mode),
                        PostToView(rpc.notification("ui/notifications/host-context-changed", {"displayMode": mode}))]
        return effects

    def set_display_mode(self, mode: str) -> list[Effect]:
        """The person changed the mode (e.g. Escape out of fullscreen); only ever back to one the view has had."""
        if mode not in DISPLAY_MODES or mode == self.display_mode or self.state != ViewState.READY:
            return []
        if mode != "inline":
            return []
        self.display_mode = mode
        return [DisplayModeChanged(mode),
                PostToView(rpc.notification("ui/notifications/host-context-changed", {"displayMode": mode}))]

    def _ask(self, req: Request, kind: str, title: str, detail: str, on_allow: list[Effect], *,
             answer_later: bool = False, subject: str = "", can_remember: bool = False,
             reason: str = "needs the person's consent", extra: dict[str, Any] | None = None) -> list[Effect]:
        self._pending.add(req.id)
        self._consents[req.id] = _PendingConsent(req, on_allow, None if answer_later else {})
        return [Decided(req.method, req.id, "asked", reason),
                AskConsent(req.id, kind, title, detail, subject or title, can_remember, extra or {})]

    # ---- notifications and responses from the view ------------------------------------

    def _on_notification(self, note: Notification) -> list[Effect]:
        method = note.method
        if method == "ui/notifications/sandbox-proxy-ready":
            if self.state != ViewState.CREATED:
                return [Refused(method, "the sandbox proxy was ready already")]
            self.state = ViewState.RESOURCE_SENT
            return [
                PostToView(rpc.notification("ui/notifications/sandbox-resource-ready", {
                    "html": self.spec.html,
                    "sandbox": "allow-scripts allow-same-origin allow-forms",
                    "allow": self.spec.allow,
                    "csp": self.spec.csp,
                    "permissions": self.spec.permissions,
                })),
                StartInitTimer(self.limits.view_init_timeout),
            ]
        if method.startswith("ui/notifications/sandbox-"):
            return [Refused(method, "sandbox messages may only come from the proxy, once")]
        if self.state == ViewState.CREATED:
            return [Refused(method, "notification before the sandbox proxy was ready")]
        if method == "ui/notifications/initialized":
            if self.state != ViewState.INITIALIZING:
                return [Refused(method, f"initialized while {self.state}")]
            self.state = ViewState.READY
            queued, self._queue = self._queue, []
            return [StateChanged(ViewState.READY), *(PostToView(m) for m in queued)]
        if method == "ui/notifications/size-changed":
            return self._size_changed(note)
        if method == "notifications/message":
            level = note.params.get("level")
            level = level if level in LOG_LEVELS else "info"
            data = note.params.get("data")
            logger = note.params.get("logger")
            text = data if isinstance(data, str) else rpc.json_text(data)
            return [Log(level, f"{logger}: {text}" if isinstance(logger, str) else text)]
        if method == "notifications/cancelled":
            rid = note.params.get("requestId")
            if rpc.is_id(rid) and rid in self._pending:
                return [CancelProxied(rid)]
            return [Refused(method, f"no request {rid!r} in flight")]
        if method == "ui/notifications/request-teardown":
            return self.teardown("the view asked to close")
        return [Refused(method, f"unknown notification {method}")]

    def _size_changed(self, note: Notification) -> list[Effect]:
        def clamp(value: Any, limit: int) -> int | None:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                return None
            return max(0, min(int(math.ceil(value)), limit))

        width = clamp(note.params.get("width"), self.limits.max_view_width)
        height = clamp(note.params.get("height"), self.limits.max_view_height)
        if width is None and height is None:
            return [Refused(note.method, "size-changed without a numeric width or height")]
        return [Resize(width, height)]

    def _on_response(self, resp: Response) -> list[Effect]:
        if self._teardown_id is not None and resp.id == self._teardown_id:
            # A reply, even an error (-32601 from a view with no handler), means "go ahead".
            return self._closed()
        return [Refused(None, f"response to unknown request id {resp.id!r}")]

    # ---- the host reports back -----------------------------------------------------------

    def complete_request(self, request_id: RequestId, result: dict[str, Any] | None = None,
                         error: tuple[int, str] | None = None) -> list[Effect]:
        """The host finished a proxied request (tools/call, resources/read)."""
        if request_id not in self._pending:
            return []
        self._pending.discard(request_id)
        if self.state in (ViewState.CLOSED, ViewState.ERROR):
            return []
        if error is not None:
            return [PostToView(rpc.error(request_id, error[0], error[1]))]
        return [PostToView(rpc.result(request_id, result or {}))]

    def progress(self, token: str | int, progress: float, total: float | None, message: str | None) -> list[Effect]:
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        return self._send(rpc.notification("notifications/progress", params))

    def answer_consent(self, token: RequestId, allowed: bool) -> list[Effect]:
        pending = self._consents.pop(token, None)
        if pending is None:
            return []
        self._pending.discard(token)
        if self.state in (ViewState.CLOSED, ViewState.ERROR):
            return []
        method = pending.request.method
        if not allowed:
            return [Decided(method, token, "declined", "declined by the person"),
                    PostToView(rpc.error(token, rpc.REFUSED, f"{method}: declined by the person"))]
        effects: list[Effect] = [Decided(method, token, "consented", "allowed by the person"), *pending.effects_on_allow]
        if pending.reply_on_allow is None:
            self._pending.add(token)  # still in flight: answered when the proxied request completes
        else:
            effects.append(PostToView(rpc.result(token, pending.reply_on_allow)))
        return effects

    # ---- tool lifecycle (host → view) -----------------------------------------------------

    def _send(self, message: dict[str, Any]) -> list[Effect]:
        if self.state in (ViewState.CLOSED, ViewState.ERROR, ViewState.TEARING_DOWN):
            return []
        if self.state != ViewState.READY:
            self._queue.append(message)
            return []
        return [PostToView(message)]

    def tool_input_partial(self, arguments: dict[str, Any]) -> list[Effect]:
        if self._sent_input:
            raise IllegalTransition("tool-input-partial after tool-input")
        return self._send(rpc.notification("ui/notifications/tool-input-partial", {"arguments": arguments}))

    def tool_input(self, arguments: dict[str, Any]) -> list[Effect]:
        if self._sent_input:
            raise IllegalTransition("tool-input is sent at most once")
        self._sent_input = True
        return self._send(rpc.notification("ui/notifications/tool-input", {"arguments": arguments}))

    def tool_result(self, result: dict[str, Any]) -> list[Effect]:
        if not self._sent_input:
            raise IllegalTransition("tool-result before tool-input")
        if self._sent_result:
            raise IllegalTransition("tool-result or tool-cancelled was sent already")
        self._sent_result = True
        return self._send(rpc.notification("ui/notifications/tool-result", result))

    def tool_cancelled(self, reason: str) -> list[Effect]:
        if self._sent_result:
            raise IllegalTransition("tool-result or tool-cancelled was sent already")
        self._sent_result = True
        return self._send(rpc.notification("ui/notifications/tool-cancelled", {"reason": reason}))

    def host_context_changed(self, **changes: Any) -> list[Effect]:
        """Apply changes to the environment and tell the view (partial context; whole `styles`)."""
        partial: dict[str, Any] = {}
        for key, value in changes.items():
            setattr(self.env, key, value)
        ctx = self.host_context()
        for key, ctx_key in (("theme", "theme"), ("styles", "styles"), ("locale", "locale"), ("time_zone", "timeZone")):
            if key in changes:
                partial[ctx_key] = ctx[ctx_key]
        if "max_width" in changes:
            partial["containerDimensions"] = ctx["containerDimensions"]
        if not partial or self.state != ViewState.READY:
            return []  # a view that is not ready yet gets the new values in its initialize result
        return [PostToView(rpc.notification("ui/notifications/host-context-changed", partial))]

    # ---- teardown ---------------------------------------------------------------------------

    def teardown(self, reason: str) -> list[Effect]:
        if self.state in (ViewState.CLOSED, ViewState.TEARING_DOWN):
            return []
        if self.state != ViewState.READY:
            return self._closed()
        self.state = ViewState.TEARING_DOWN
        self._teardown_id = self._next_host_id
        self._next_host_id += 1
        return [PostToView(rpc.request(self._teardown_id, "ui/resource-teardown", {"reason": reason})),
                StartTeardownTimer(self.limits.teardown_timeout)]

    def teardown_timed_out(self) -> list[Effect]:
        return self._closed() if self.state == ViewState.TEARING_DOWN else []

    def init_timed_out(self) -> list[Effect]:
        if self.state in (ViewState.RESOURCE_SENT, ViewState.INITIALIZING):
            return self.fail(
                f"the view did not finish its handshake within view_init_timeout ({self.limits.view_init_timeout:g} s)"
                + ("" if self.state == ViewState.INITIALIZING else "; it never sent ui/initialize")
            )
        return []

    def fail(self, reason: str) -> list[Effect]:
        if self.state in (ViewState.CLOSED, ViewState.ERROR):
            return []
        self.state = ViewState.ERROR
        return [*self._drop_pending(), StateChanged(ViewState.ERROR, reason)]

    def _closed(self) -> list[Effect]:
        self.state = ViewState.CLOSED
        return [*self._drop_pending(), StateChanged(ViewState.CLOSED)]

    def _drop_pending(self) -> list[Effect]:
        effects: list[Effect] = [CancelProxied(rid) for rid in self._pending if rid not in self._consents]
        self._pending.clear()
        self._consents.clear()
        self._queue.clear()
        return effects


def _method_of(raw: Any) -> str | None:
    method = raw.get("method") if isinstance(raw, dict) else None
    return method if isinstance(method, str) else None


def _human_size(size: int) -> str:
    for unit in ("bytes", "KB", "MB"):
        if size < 1024 or unit == "MB":
            return f"{size} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    return f"{size} bytes"


def _is_web_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and not any(c.isspace() for c in url)


_REQUEST_HANDLERS = {
    "tools/call": ViewSession._tools_call,
    "resources/read": ViewSession._resources_read,
    "ui/open-link": ViewSession._open_link,
    "ui/message": ViewSession._message,
    "ui/update-model-context": ViewSession._update_model_context,
    "ui/request-display-mode": ViewSession._request_display_mode,
    "ui/download-file": ViewSession._download_file,
    "sampling/createMessage": ViewSession._sampling,
}
