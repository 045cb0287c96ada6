"""What a view may ask of the host: one function per request method, each returning effects.

A handler validates the request's params, applies policy through the view's spec, and
either answers at once, asks the person (`Session.ask`), or hands the request to the
host to complete later (`Session.answer_later`). Every refusal names the rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import urlsplit

from ..values import protocol as M
from ..values.decisions import ConsentKind
from ..values.links import describe_link
from ..values.protocol import DISPLAY_MODES, ResourceListing
from ..values.sampling import describe_sampling, sampling_problem
from . import jsonrpc as rpc
from .context import ViewSpec
from .downloads import download_file
from .effects import (
    Decided,
    DisplayModeChanged,
    Effect,
    KeepViewState,
    ModelContextUpdated,
    OpenLink,
    OpenView,
    PostChatMessage,
    PostToView,
    ProxyResourceList,
    ProxyResourceRead,
    ProxyResourceSubscribe,
    ProxyToolCall,
    Sample,
)
from .jsonrpc import Request, RequestId
from .rules import model_context_refusal


class Session(Protocol):
    """What a handler may see and do of the view's session."""

    spec: ViewSpec
    display_mode: str
    app_capabilities: dict[str, Any]
    model_context: ModelContextUpdated | None

    def reject(self, req: Request, code: int, reason: str) -> list[Effect]: ...

    def available_modes(self) -> list[str]: ...

    def answer_later(self, request_id: RequestId) -> None: ...

    def ask(self, req: Request, kind: ConsentKind, title: str, detail: str, on_allow: list[Effect], *,
            answer_later: bool = False, subject: str = "", can_remember: bool = False,
            reason: str = "needs the person's consent", extra: dict[str, Any] | None = None) -> list[Effect]: ...


def _own_tool(s: Session, req: Request, may: str) -> tuple[str, dict[str, Any]] | list[Effect]:
    """The tool (of the view's own server) and arguments ``req`` names; else its rejection, saying what a
    view ``may`` do."""
    name, args = req.params.get("name"), req.params.get("arguments", {})
    if not isinstance(name, str) or not isinstance(args, dict):
        return s.reject(req, rpc.INVALID_PARAMS, f'{req.method} needs "name" (string) and "arguments" (object)')
    if name not in s.spec.all_tools:
        if s.spec.tool.name not in s.spec.all_tools:  # not even the view's own: the server is not connected
            return s.reject(req, rpc.REFUSED, f"server {s.spec.server!r} is not connected now, so its tools are "
                                              "not known; try again once it is")
        return s.reject(req, rpc.INVALID_PARAMS,
                        f"{name!r} is not a tool of server {s.spec.server!r}; a view may only {may}")
    return name, args


def tools_call(s: Session, req: Request) -> list[Effect]:
    named = _own_tool(s, req, "call its own server's tools")
    if isinstance(named, list):
        return named
    name, args = named
    if name not in s.spec.app_tools:
        return s.reject(req, rpc.REFUSED,
                        f"tool {name!r} of server {s.spec.server!r} is not visible to apps "
                        '(its _meta.ui.visibility lacks "app")')
    meta = req.params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    if not rpc.is_id(token):
        token = None
    call = ProxyToolCall(req.id, name, args, token)
    decision, reason, can_remember = s.spec.decide_tool_call(name)
    if decision == "deny":
        return s.reject(req, rpc.REFUSED, f"tool {name!r} of server {s.spec.server!r} is denied: {reason}")
    if decision == "ask":
        detail = f"{s.spec.server} · {name}\n{rpc.json_text(args)}"
        return s.ask(req, "tool-call", f"{s.spec.server} wants to call {name}", detail, [call],
                     answer_later=True, subject=name, can_remember=can_remember, reason=reason)
    s.answer_later(req.id)
    return [Decided(req.method, req.id, "allowed", reason), call]


def tools_list(s: Session, req: Request) -> list[Effect]:
    """The tools of the view's own server it may call: those whose visibility includes "app"."""
    return [PostToView(rpc.result(req.id, {"tools": list(s.spec.server_tools)}))]


def resources_read(s: Session, req: Request) -> list[Effect]:
    uri = req.params.get("uri")
    if not isinstance(uri, str) or not uri:
        return s.reject(req, rpc.INVALID_PARAMS, 'resources/read needs "uri" (string)')
    s.answer_later(req.id)
    return [ProxyResourceRead(req.id, uri)]


def resources_list(s: Session, req: Request) -> list[Effect]:
    """`resources/list` and `resources/templates/list`: one page of the view's own server's, from a cursor."""
    cursor = req.params.get("cursor")
    if cursor is not None and not isinstance(cursor, str):
        return s.reject(req, rpc.INVALID_PARAMS, f'{req.method}: "cursor" must be a string')
    method: ResourceListing = M.RESOURCES_LIST if req.method == M.RESOURCES_LIST else M.RESOURCES_TEMPLATES_LIST
    s.answer_later(req.id)
    return [ProxyResourceList(req.id, method, cursor)]


def resources_subscribe(s: Session, req: Request) -> list[Effect]:
    """`resources/subscribe` and `resources/unsubscribe`: follow a resource of the view's own server (its
    updates reach this view only, while it lives), or stop."""
    uri = req.params.get("uri")
    if not isinstance(uri, str) or not uri:
        return s.reject(req, rpc.INVALID_PARAMS, f'{req.method} needs "uri" (string)')
    s.answer_later(req.id)
    return [ProxyResourceSubscribe(req.id, uri, req.method == M.RESOURCES_SUBSCRIBE)]


def view_state(s: Session, req: Request) -> list[Effect]:
    """`mcp-apps-host/state/get` and `/set` (beyond the spec): the JSON value the host keeps for this view
    instance and its person, read back after a reload, a remount or a restart of the host."""
    if not s.spec.state_max_bytes:
        return s.reject(req, rpc.REFUSED, f"{req.method}: this host keeps no view state (it has no database)")
    write = req.method == M.VIEW_STATE_SET
    if write and "state" not in req.params:
        return s.reject(req, rpc.INVALID_PARAMS, f'{req.method} needs "state" (any JSON value; null forgets it)')
    s.answer_later(req.id)
    return [KeepViewState(req.id, write, req.params.get("state"))]


def open_link(s: Session, req: Request) -> list[Effect]:
    url = req.params.get("url")
    if not isinstance(url, str) or not _is_web_url(url):
        return s.reject(req, rpc.INVALID_PARAMS, "ui/open-link: only absolute http and https URLs can be opened")
    try:
        link = describe_link(url)
    except ValueError as exc:
        return s.reject(req, rpc.INVALID_PARAMS, f"ui/open-link: {exc}")
    # Show the host as a person reads it, but open the ASCII form the browser will use.
    extra = {"display": link.display, "href": link.href or url, "differs": link.differs,
             "hostAscii": link.host_ascii, "hostUnicode": link.host_unicode, "warnings": list(link.warnings)}
    return s.ask(req, "open-link", f"{s.spec.server} wants to open a link", link.display,
                 [OpenLink(link.href or url)], subject=link.href or url, extra=extra)


def message(s: Session, req: Request) -> list[Effect]:
    role, content = req.params.get("role"), req.params.get("content")
    if isinstance(content, dict):  # the spec's examples send one block; the SDK sends an array
        content = [content]
    if role != "user" or not isinstance(content, list) or not content or not all(
        isinstance(b, dict) and isinstance(b.get("type"), str) for b in content
    ):
        return s.reject(req, rpc.INVALID_PARAMS, 'ui/message needs role "user" and content blocks')
    text = "\n".join(str(b.get("text", f"[{b.get('type')} block]")) for b in content)
    return s.ask(req, "message", f"{s.spec.server} wants to send a message", text,
                 [PostChatMessage("user", content)])


def sampling(s: Session, req: Request) -> list[Effect]:
    problem = sampling_problem(req.params)
    if problem is not None:
        return s.reject(req, rpc.INVALID_PARAMS, problem)
    decision, reason = s.spec.decide_sampling()
    if decision != "ask":
        return s.reject(req, rpc.REFUSED, f"{M.SAMPLING_CREATE_MESSAGE} refused: {reason}")
    return s.ask(req, "sampling", f"{s.spec.server} wants to ask the model", describe_sampling(req.params),
                 [Sample(req.id, req.params)], answer_later=True, subject=M.SAMPLING_CREATE_MESSAGE, reason=reason)


def update_model_context(s: Session, req: Request) -> list[Effect]:
    content, structured = req.params.get("content"), req.params.get("structuredContent")
    if content is not None and not (isinstance(content, list) and all(isinstance(b, dict) for b in content)):
        return s.reject(req, rpc.INVALID_PARAMS, '"content" must be an array of content blocks')
    if structured is not None and not isinstance(structured, dict):
        return s.reject(req, rpc.INVALID_PARAMS, '"structuredContent" must be an object')
    refused = model_context_refusal(s.spec.server, s.spec.view_rules)
    if refused is not None:
        return s.reject(req, rpc.REFUSED, f"{M.UPDATE_MODEL_CONTEXT} refused: {refused}")
    s.model_context = ModelContextUpdated(content, structured)  # each update replaces the last
    return [s.model_context, PostToView(rpc.result(req.id, {}))]


def request_display_mode(s: Session, req: Request) -> list[Effect]:
    mode = req.params.get("mode")
    if mode not in DISPLAY_MODES:
        return s.reject(req, rpc.INVALID_PARAMS, f'"mode" must be one of {", ".join(DISPLAY_MODES)}')
    # Only modes the view declared (inline is always possible): a view that never said it
    # can live fullscreen is not put there.
    allowed = mode in s.available_modes()
    changed = allowed and mode != s.display_mode
    if changed:
        s.display_mode = mode
    # Always answer with the mode in effect: the view's SDK throws on a reply without one. The
    # page places the view and measures it; host-context-changed follows with its new dimensions.
    effects: list[Effect] = [PostToView(rpc.result(req.id, {"mode": s.display_mode}))]
    if changed:
        effects.append(DisplayModeChanged(mode))
    return effects


def open_view(s: Session, req: Request) -> list[Effect]:
    """`mcp-apps-host/open-view` (beyond the spec): open another view of the view's own server, as if the
    person had called the tool, once they allow it. A view's tools/call of such a tool runs it and mounts
    nothing; this shows its view in the conversation, with its own card."""
    named = _own_tool(s, req, "open views of its own server")
    if isinstance(named, list):
        return named
    name, args = named
    if name not in s.spec.view_tools:
        return s.reject(req, rpc.INVALID_PARAMS,
                        f"tool {name!r} of server {s.spec.server!r} has no view a person may open "
                        "(no _meta.ui.resourceUri, or its visibility lacks \"model\")")
    detail = f"{s.spec.server} · {name}\n{rpc.json_text(args)}"
    return s.ask(req, "open-view", f"{s.spec.server} wants to open the view of {name}", detail,
                 [OpenView(req.id, name, args)], answer_later=True, subject=name)


def _is_web_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and not any(c.isspace() for c in url)


Handler = Callable[[Session, Request], list[Effect]]

# What a view may ask of the host once initialized (ui/initialize and ping are the session's own).
REQUEST_HANDLERS: dict[str, Handler] = {
    M.TOOLS_CALL: tools_call,
    M.TOOLS_LIST: tools_list,
    M.RESOURCES_READ: resources_read,
    M.RESOURCES_LIST: resources_list,
    M.RESOURCES_TEMPLATES_LIST: resources_list,
    M.RESOURCES_SUBSCRIBE: resources_subscribe,
    M.RESOURCES_UNSUBSCRIBE: resources_subscribe,
    M.OPEN_LINK: open_link,
    M.MESSAGE: message,
    M.UPDATE_MODEL_CONTEXT: update_model_context,
    M.REQUEST_DISPLAY_MODE: request_display_mode,
    M.DOWNLOAD_FILE: download_file,
    M.SAMPLING_CREATE_MESSAGE: sampling,
    M.OPEN_VIEW: open_view,
    M.VIEW_STATE_GET: view_state,
    M.VIEW_STATE_SET: view_state,
}
