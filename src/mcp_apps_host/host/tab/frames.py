"""The page protocol: every WebSocket frame between the host page and the host, as a type.

A frame is one JSON object whose ``type`` names it. Frames from the page are validated
here on the way in (:func:`parse_page_frame`); frames to the page are built from these
types, so their fields cannot drift from what the page reads. `docs/bridge.md` holds the
tables :func:`frames_markdown` prints, and `web/static/frames.d.ts` the types
:func:`frames_typescript` prints for the page's JavaScript; tests keep both the same.
"""

from __future__ import annotations

import textwrap
import types
import typing
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from ...errors import InvalidFrame

_Short = Annotated[str, StringConstraints(min_length=1, max_length=200)]
_Name = Annotated[str, StringConstraints(min_length=1, max_length=500)]


class Frame(BaseModel):
    """Fields are snake_case here and camelCase on the wire."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid",
                              strict=True)

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True)


# ---- page → host -------------------------------------------------------------------------------


class Hello(Frame):
    """The first frame on every connection: what the page knows of its person and screen."""

    type: Literal["hello"]
    conversation: _Name | None = None  # the conversation this tab showed (sessionStorage); else the newest
    theme: Literal["light", "dark"] | None = None
    locale: _Short | None = None
    time_zone: _Short | None = None
    user_agent: Annotated[str, StringConstraints(max_length=1000)] | None = None
    touch: bool = False
    hover: bool = True
    viewport_width: Annotated[int, Field(gt=0)] | None = None
    # The person's display preferences (CSS media features), for the views' host context.
    reduced_motion: bool = False
    contrast: Literal["no-preference", "more", "less", "custom"] = "no-preference"
    forced_colors: bool = False


class Chat(Frame):
    """A line from the chat box: `/call SERVER TOOL [JSON]`, `/servers`, `/help`, or a message to the model."""

    type: Literal["chat"]
    text: Annotated[str, StringConstraints(max_length=100_000)]


class Call(Frame):
    """The tool picker's form was submitted."""

    type: Literal["call"]
    server: _Name
    tool: _Name
    arguments: dict[str, Any] = Field(default_factory=dict)


class Stop(Frame):
    """Stop: cancel the model's turn and the tools it is running."""

    type: Literal["stop"]


class Cancel(Frame):
    """The person cancelled a running call."""

    type: Literal["cancel"]
    call_id: int


class ViewMessage(Frame):
    """A message the page received from that view's proxy frame (already checked: `event.source`
    is that proxy's window and `event.origin` its sandbox origin). The host validates `message`."""

    type: Literal["view-message"]
    view: _Name
    message: Any


class ViewDisplayModeRequest(Frame):
    """The person switched the view's mode (its header, Escape, the fullscreen close control): a request,
    answered by `view-display-mode` when the view declared the mode."""

    type: Literal["view-display-mode"]
    view: _Name
    mode: Literal["inline", "fullscreen", "pip"]


class ViewContainer(Frame):
    """The page placed the view in `mode` (after `view-display-mode`, or the person resized its pip
    window) and measured the space its frame has: the view is told in `host-context-changed`."""

    type: Literal["view-container"]
    view: _Name
    mode: Literal["inline", "fullscreen", "pip"]
    width: Annotated[int, Field(ge=0, le=100_000)]
    height: Annotated[int, Field(ge=0, le=100_000)]


class ViewVisible(Frame):
    """A view's container came into (or near) sight, or left it. Far out of sight, beyond `max_live_views`,
    the host puts the view away (`view-parked`); a placeholder in sight is mounted again."""

    type: Literal["view-visible"]
    view: _Name
    visible: bool


class ViewPin(Frame):
    """The person pinned the view to the side panel (or unpinned it): answered by `view-pinned`."""

    type: Literal["view-pin"]
    view: _Name
    pinned: bool


class ViewClose(Frame):
    """The person closed the view: the host runs its teardown, then sends `view-remove`."""

    type: Literal["view-close"]
    view: _Name


class ViewHostContext(Frame):
    """The inspector's controls: change this view's host context live (each field set is sent to the view
    in `ui/notifications/host-context-changed`; a display mode only if the view declared it)."""

    type: Literal["view-host-context"]
    view: _Name
    theme: Literal["light", "dark"] | None = None
    locale: _Short | None = None
    time_zone: _Short | None = None
    display_mode: Literal["inline", "fullscreen", "pip"] | None = None
    container_width: Annotated[int, Field(gt=0, le=10_000)] | None = None
    container_height: Annotated[int, Field(gt=0, le=10_000)] | None = None
    platform: Literal["web", "desktop", "mobile"] | None = None
    touch: bool | None = None
    hover: bool | None = None


class InspectorOpen(Frame):
    """The person opened a view's inspector: send its records so far, then each new one, and its host context."""

    type: Literal["inspector-open"]
    view: _Name


class InspectorClose(Frame):
    """The inspector was closed: stop sending its records."""

    type: Literal["inspector-close"]
    view: _Name


class Theme(Frame):
    """The person toggled light/dark."""

    type: Literal["theme"]
    theme: Literal["light", "dark"]


class Preferences(Frame):
    """The person's display preferences changed while the page was open (CSS media features)."""

    type: Literal["preferences"]
    reduced_motion: bool
    contrast: Literal["no-preference", "more", "less", "custom"]
    forced_colors: bool


class ConsentReply(Frame):
    """The answer to a `consent` dialog; `remember` when "always allow" was ticked."""

    type: Literal["consent-reply"]
    id: int
    allow: bool
    remember: bool = False


class TrustReply(Frame):
    """The answer to a `view-held` notice."""

    type: Literal["trust-reply"]
    call_id: int
    accept: bool


class AppToolCall(Frame):
    """The person called one of a view's own tools from the list on the view."""

    type: Literal["app-tool-call"]
    view: _Name
    tool: _Name
    arguments: dict[str, Any] = Field(default_factory=dict)


class ElicitReply(Frame):
    """The answer to an `elicit` dialog: `content` holds the form's values when `action` is `accept`."""

    type: Literal["elicit-reply"]
    id: int
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


class ConversationNew(Frame):
    """Start an empty conversation."""

    type: Literal["conversation-new"]


class ConversationOpen(Frame):
    """Show another conversation (it is replayed)."""

    type: Literal["conversation-open"]
    id: _Name


class ConversationRename(Frame):
    """Rename a conversation."""

    type: Literal["conversation-rename"]
    id: _Name
    title: Annotated[str, StringConstraints(max_length=1000)]


class ConversationDelete(Frame):
    """Delete a conversation (the newest other one opens if it was shown)."""

    type: Literal["conversation-delete"]
    id: _Name


class Intent(Frame):
    """The person is about to call a tool (the chat box took the focus, or the pointer reached a tool):
    the views booted ahead that lapsed unused boot again. When the page knows which tool (the chat box
    reads `/call SERVER TOOL`, or the pointer is on that tool), the tool's template goes to the page now
    (`template-ahead`), so its view's mount does not carry it, and its view boots ahead when a call would
    render it without asking (accepted, or never seen)."""

    type: Literal["intent"]
    server: _Name | None = None
    tool: _Name | None = None


class SignInDecline(Frame):
    """The person declined to sign in to a server (or closed the authorization window): the calls that
    waited for it end with an error. ``state`` names the sign-in, so a late answer ends no newer one."""

    type: Literal["signin-decline"]
    server: _Name
    state: _Name


class SignOut(Frame):
    """Sign out of a server: the person's tokens for it are revoked and deleted."""

    type: Literal["signout"]
    server: _Name


PageFrame = (Hello | Chat | Call | Stop | Cancel | Intent | SignInDecline | SignOut
             | ViewMessage | ViewDisplayModeRequest | ViewContainer | ViewVisible
             | ViewPin | ViewClose | ViewHostContext | InspectorOpen | InspectorClose | Theme | Preferences
             | ConsentReply | TrustReply | AppToolCall | ElicitReply
             | ConversationNew | ConversationOpen | ConversationRename | ConversationDelete)
_PAGE_FRAMES: TypeAdapter[PageFrame] = TypeAdapter(Annotated[PageFrame, Field(discriminator="type")])


def parse_page_frame(data: Any) -> PageFrame:
    """One decoded frame from the page, checked; :class:`InvalidFrame` says what was wrong."""
    kind = data.get("type") if isinstance(data, dict) else None
    try:
        return _PAGE_FRAMES.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"][1:]) or "frame"
        name = kind if isinstance(kind, str) else "a frame"
        raise InvalidFrame(f"{name}: {where}: {first['msg']}", kind) from None


# ---- host → page ---------------------------------------------------------------------------------


class Welcome(Frame):
    """The first frame of a connection: which host, and which of its worker processes, the tab talks to."""

    type: Literal["welcome"] = "welcome"
    version: str
    worker: int  # the process id; a reconnecting tab may land on another worker
    admin: bool = False  # the person manages the tenant's servers: the page links to the admin page


class Reconnect(Frame):
    """This host process is stopping (a deploy, a restart): the calls in flight finish, then the host closes
    the connection and the page reconnects at once (to another process behind the same address) and opens
    the same conversation again."""

    type: Literal["reconnect"] = "reconnect"
    reason: Literal["stopping"] = "stopping"


class Servers(Frame):
    """The whole server list, sent on connect and on every change. Tools whose visibility lacks
    "model" are never listed."""

    type: Literal["servers"] = "servers"
    # [{name, status, error, transport, target, protocolVersion, roots,
    #   auth: "none" | "needed" | "signed-in", signin: {url, state} | null (while the person is asked),
    #   waiting: calls waiting for the sign-in, tools: [{name, title, description, inputSchema, hasView, callable}]}]
    servers: list[dict[str, Any]]


class Notice(Frame):
    """A line for the conversation (a command's answer, an error)."""

    type: Literal["notice"] = "notice"
    level: Literal["info", "error"] = "info"
    text: str


class ChatMessage(Frame):
    """A message a view sent into the conversation (after the person allowed it), attributed to its server."""

    type: Literal["chat-message"] = "chat-message"
    role: str
    source: str
    text: str
    view: str | None = None


class UserMessage(Frame):
    """A person's message, sent when a conversation is replayed."""

    type: Literal["user-message"] = "user-message"
    text: str


class TurnState(Frame):
    """A model turn started or ended: show Stop while it runs."""

    type: Literal["turn-state"] = "turn-state"
    running: bool


class AssistantDelta(Frame):
    """Streamed model text: append to the current assistant bubble, as text."""

    type: Literal["assistant-delta"] = "assistant-delta"
    turn: int
    text: str


class AssistantDone(Frame):
    """The finished answer: `html` is sanitised on the server and replaces the bubble's content."""

    type: Literal["assistant-done"] = "assistant-done"
    turn: int | None  # None in a replay
    text: str
    html: str


class CallStarted(Frame):
    """A tool call began (`source`: person, view or model). `appToolOf` names the view when the tool is
    one the view offers of its own (an app-provided tool) rather than one of its server's."""

    type: Literal["call-started"] = "call-started"
    call_id: int
    server: str | None
    tool: str | None
    arguments: dict[str, Any]
    source: Literal["person", "view", "model"]
    app_tool_of: str | None = None


class CallProgress(Frame):
    """An MCP progress notification for that call."""

    type: Literal["call-progress"] = "call-progress"
    call_id: int
    progress: float
    total: float | None = None
    message: str | None = None


class CallFinished(Frame):
    """The call returned a result (`isError` for a tool-level error)."""

    type: Literal["call-finished"] = "call-finished"
    call_id: int
    result: Any
    is_error: bool
    duration_ms: int


class CallFailed(Frame):
    """The call ended without a result: a transport or protocol error, a refusal, or a cancellation."""

    type: Literal["call-failed"] = "call-failed"
    call_id: int
    error: str
    duration_ms: int
    cancelled: bool


class CallDelivered(Frame):
    """The call's input and result went to the view already open, `view` (`mcp-apps-host/later-results`), not
    to a view of its own: the card says so."""

    type: Literal["call-delivered"] = "call-delivered"
    call_id: int
    view: str


class ViewMount(Frame):
    """Draw a view's container under that call and its proxy iframe at `proxyUrl` (null when the template
    could not be loaded: a container without a frame, and a `view-state` error follows). With `replaces`,
    it takes that view's place (whose frame is removed). With `parked`, only a placeholder, `height` px tall
    when given."""

    type: Literal["view-mount"] = "view-mount"
    view: str
    call_id: int | None  # null for a view booted ahead (`prebooted`)
    server: str
    tool: str
    proxy_url: str | None
    sandbox_origin: str
    prefers_border: bool
    permissions: str  # the inner frame's allow attribute
    template_sha256: str | None = None
    trust: str | None = None  # new | trusted | allowed | changed | unchecked
    warnings: list[str] = Field(default_factory=list)  # what the static review of the template found
    replaces: str | None = None  # a view this one takes the place of (its template changed, or it was put away)
    parked: bool = False  # only a placeholder: the view is mounted when it comes into sight (`view-visible`)
    height: int | None = None  # a placeholder's height: the one the view's frame last had, when known
    pinned: bool = False  # drawn in the side panel (a pinned view brought back after a reload), not under a call
    prestarted: str | None = None  # the `view-prestart` key of the loaded proxy to take instead of a new one
    prebooted: bool = False  # booted ahead for no call yet: drawn hidden until a `view-adopt` names its call
    csp: str | None = None  # the Content-Security-Policy the view runs under (the page's console shows it)
    # Origins the view declared it sends data to (connect-src beyond the host): the page warns the person.
    connect_domains: list[str] = Field(default_factory=list)


class ViewParked(Frame):
    """The view was torn down because it is far out of sight: remove its frame and keep a placeholder of
    the same size. When the placeholder comes into sight (`view-visible`) a `view-mount` replaces it."""

    type: Literal["view-parked"] = "view-parked"
    view: str


class ViewPinned(Frame):
    """The view is pinned to the side panel (kept live across turns and conversations, and after a reload)
    or no longer. The page draws it over its slot in the panel without moving its frame in the DOM."""

    type: Literal["view-pinned"] = "view-pinned"
    view: str
    pinned: bool


class ViewAdopt(Frame):
    """A view booted ahead (`view-mount` with `prebooted`) is now this call's: show it under the call."""

    type: Literal["view-adopt"] = "view-adopt"
    view: str
    call_id: int
    server: str
    tool: str
    trust: str | None = None


class ViewPrestart(Frame):
    """Load a sandbox proxy at `proxyUrl` now, hidden, on `sandboxOrigin` with that `allow` attribute: a
    later `view-mount` names it by `key` in `prestarted` and takes it (moved, not reloaded). Keys no longer
    listed in a frame with `keep` go."""

    type: Literal["view-prestart"] = "view-prestart"
    key: str
    proxy_url: str
    sandbox_origin: str
    permissions: str  # the proxy frame's allow attribute
    keep: list[str] = Field(default_factory=list)  # every key the page should still hold, this one included


class ViewPost(Frame):
    """Post `message` to that view's proxy window, to its sandbox origin only."""

    type: Literal["view-post"] = "view-post"
    view: str
    message: dict[str, Any]


class ViewStateFrame(Frame):
    """The view's state (`loading`, `ready`, `error`, `closed`); `error` says why it failed."""

    type: Literal["view-state"] = "view-state"
    view: str
    state: str
    error: str | None = None


class ViewSize(Frame):
    """Resize the proxy iframe (already clamped to the host's limits). A width the view reported is the
    least it needs; a `fixed` one is the host's own (the inspector's container size) and is the width."""

    type: Literal["view-size"] = "view-size"
    view: str
    width: int | None
    height: int | None
    fixed: bool = False


class ViewLog(Frame):
    """A line for the view's log (its `notifications/message`, refusals, CSP violations)."""

    type: Literal["view-log"] = "view-log"
    view: str
    level: str
    text: str


class ViewRemove(Frame):
    """The teardown finished: remove the iframe, keep the container as closed."""

    type: Literal["view-remove"] = "view-remove"
    view: str


class ViewContext(Frame):
    """The view's latest model context (JSON text, truncated), shown as a chip on the view."""

    type: Literal["view-context"] = "view-context"
    view: str
    text: str


class ViewTools(Frame):
    """The tools a view offers of its own, as last listed (empty when none or the view is gone): drawn on
    the view, each callable with `app-tool-call`. `modelName` is the name the model knows it by."""

    type: Literal["view-tools"] = "view-tools"
    view: str
    tools: list[dict[str, Any]]  # [{name, title, description, inputSchema, readOnly, modelName}]


class ViewDisplayMode(Frame):
    """Show the view inline, fullscreen or pip; `available`: the modes the view declared (inline always),
    which its header offers. Sent when the view is ready and on every change; the page answers a change
    with `view-container`."""

    type: Literal["view-display-mode"] = "view-display-mode"
    view: str
    mode: str
    available: list[str] = Field(default_factory=lambda: ["inline"])


class TemplateAhead(Frame):
    """The document of a view the person may open soon (see `intent`), kept by the page under its sha256:
    a view of it then gets its `sandbox-resource-ready` without the HTML, and the page puts this in. Nothing
    runs it until a call mounts its view."""

    type: Literal["template-ahead"] = "template-ahead"
    sha256: str
    html: str


class InspectorRecords(Frame):
    """New audit records of an inspected view, oldest first: the same rows as `GET /api/audit` (`seq`, `ts`,
    `direction`, `method`, `id`, `decision`, `reason`, `payload` preview, `payload_sha256`, `payload_size`)."""

    type: Literal["inspector-records"] = "inspector-records"
    view: str
    records: list[dict[str, Any]]


class InspectorContext(Frame):
    """The host context an inspected view has now (as its `ui/initialize` result would carry it)."""

    type: Literal["inspector-context"] = "inspector-context"
    view: str
    context: dict[str, Any]


class Consent(Frame):
    """Ask the person; reply with `consent-reply`. `view` is the view asking (for `app-tool-call`: the view
    whose own tool the model wants to call); null for the model's calls of server tools and for what a server
    asks itself. The link fields are set for `open-link` only."""

    type: Literal["consent"] = "consent"
    id: int
    kind: Literal["tool-call", "app-tool-call", "message", "open-link", "download", "sampling", "open-view"]
    server: str
    view: str | None
    title: str
    detail: str
    subject: str
    can_remember: bool = False
    display: str | None = None
    href: str | None = None
    differs: bool | None = None
    host_ascii: str | None = None
    host_unicode: str | None = None
    warnings: list[str] | None = None


class ConsentDismiss(Frame):
    """Withdraw an unanswered `consent` (its view closed): no reply is sent."""

    type: Literal["consent-dismiss"] = "consent-dismiss"
    id: int


class OpenLink(Frame):
    """The person allowed a link: open it in a new tab (`noopener,noreferrer`)."""

    type: Literal["open-link"] = "open-link"
    url: str


class ViewHeld(Frame):
    """The server now serves a different template for this URI: show both hashes in the call's place
    and reply with `trust-reply`; nothing renders until accepted."""

    type: Literal["view-held"] = "view-held"
    call_id: int
    server: str
    tool: str
    uri: str | None
    old_sha256: str | None
    new_sha256: str
    old_size: int | None
    new_size: int
    reason: str


class Download(Frame):
    """The person allowed a download: save `text` or `blob` under `filename` (never opened); with `url`
    (a link the view named), let the browser download it in a new tab."""

    type: Literal["download"] = "download"
    view: str
    filename: str
    mime_type: str
    text: str | None
    blob: str | None  # base64
    url: str | None = None


class Elicit(Frame):
    """A server asks the person for input (`elicitation/create`): a form built from `requestedSchema` (mode `form`)
    or a link to open (mode `url`, with the link fields of `consent`). Reply with `elicit-reply`."""

    type: Literal["elicit"] = "elicit"
    id: int
    server: str
    mode: Literal["form", "url"]
    message: str
    requested_schema: dict[str, Any] | None = None
    display: str | None = None
    href: str | None = None
    differs: bool | None = None
    host_ascii: str | None = None
    host_unicode: str | None = None
    warnings: list[str] | None = None


class ElicitInvalid(Frame):
    """The values of an `elicit` form do not fit the server's schema: show `error`; the dialog stays open."""

    type: Literal["elicit-invalid"] = "elicit-invalid"
    id: int
    error: str


class ElicitDismiss(Frame):
    """Withdraw an unanswered `elicit` (the server gave up, or it timed out): no reply is sent."""

    type: Literal["elicit-dismiss"] = "elicit-dismiss"
    id: int


class HostTheme(Frame):
    """The host's style variables for the page itself."""

    type: Literal["theme"] = "theme"
    theme: str
    variables: dict[str, Any]


class ConversationReset(Frame):
    """Clear the conversation column and every frame and dialog: a replay of that conversation follows."""

    type: Literal["conversation-reset"] = "conversation-reset"
    id: str
    title: str


class Conversations(Frame):
    """The conversation list (`updated` in Unix seconds)."""

    type: Literal["conversations"] = "conversations"
    current: str | None
    items: list[dict[str, Any]]  # [{id, title, updated}]


HostFrame = (Welcome | Reconnect | Servers | Notice | ChatMessage | UserMessage | TurnState | AssistantDelta
             | AssistantDone | CallStarted | CallProgress | CallFinished | CallFailed | CallDelivered | ViewMount
             | ViewPrestart | ViewAdopt | ViewPost | ViewStateFrame | ViewSize | ViewLog | ViewRemove | ViewParked
             | ViewPinned | ViewContext | ViewTools | ViewDisplayMode | TemplateAhead | InspectorRecords
             | InspectorContext | Consent
             | ConsentDismiss | OpenLink | ViewHeld | Download | Elicit | ElicitInvalid | ElicitDismiss | HostTheme
             | ConversationReset | Conversations)


# ---- the tables in docs/bridge.md -----------------------------------------------------------------


def _type_text(annotation: Any) -> str:
    if typing.get_origin(annotation) is Annotated:
        return _type_text(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) is Literal:
        return " \\| ".join(f"`{v}`" for v in typing.get_args(annotation))
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return " \\| ".join(_type_text(a) for a in typing.get_args(annotation))
    if annotation is type(None):
        return "null"
    if annotation is Any:
        return "any"
    origin = typing.get_origin(annotation)
    if origin in (list, dict):
        return "array" if origin is list else "object"
    return {str: "string", int: "integer", float: "number", bool: "boolean"}.get(annotation, str(annotation))


def _table(frames: tuple[type[Frame], ...], mark_optional: bool) -> list[str]:
    lines = ["| type | fields | meaning |", "|---|---|---|"]
    for frame in frames:
        fields = frame.model_fields
        kind = typing.get_args(fields["type"].annotation)[0]
        described = [
            f"`{info.alias or name}`{'?' if mark_optional and not info.is_required() else ''}: "
            f"{_type_text(info.annotation)}"
            for name, info in fields.items() if name != "type"
        ]
        meaning = " ".join((frame.__doc__ or "").split())
        lines.append(f"| `{kind}` | {'<br>'.join(described) or '—'} | {meaning} |")
    return lines


def frames_markdown() -> str:
    """The two frame tables of `docs/bridge.md`, from the types above."""
    page = typing.get_args(PageFrame)
    host = typing.get_args(HostFrame)
    return "\n".join([
        "### page → host", "", "(`?`: may be left out)", "", *_table(page, True), "",
        "### host → page", "", "(every field is always sent; `null` where it does not apply)", "",
        *_table(host, False),
    ]) + "\n"


# ---- web/static/frames.d.ts: the same frames as types for the page's JavaScript (checked by tsc) ---------


def _ts_type(annotation: Any) -> str:
    if typing.get_origin(annotation) is Annotated:
        return _ts_type(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) is Literal:
        return " | ".join(f'"{v}"' for v in typing.get_args(annotation))
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return " | ".join(_ts_type(a) for a in typing.get_args(annotation))
    if annotation is type(None):
        return "null"
    if annotation is Any:
        return "any"
    origin = typing.get_origin(annotation)
    if origin is list:
        item = _ts_type(typing.get_args(annotation)[0])
        return f"({item})[]" if " " in item else f"{item}[]"
    if origin is dict:
        return f"Record<string, {_ts_type(typing.get_args(annotation)[1])}>"
    known = {str: "string", int: "number", float: "number", bool: "boolean"}
    if annotation not in known:
        # A new kind of field must get a deliberate TypeScript spelling, not a guess.
        raise TypeError(f"no TypeScript type for {annotation!r}")
    return known[annotation]


def _ts_name(frame: type[Frame]) -> str:
    """The frame's type in frames.d.ts: its class name, ending in `Frame` once."""
    return frame.__name__.removesuffix("Frame") + "Frame"


def _interface(frame: type[Frame], mark_optional: bool) -> list[str]:
    meaning = textwrap.wrap(" ".join((frame.__doc__ or "").replace("*/", "*\\/").split()), 110)
    doc = [f"/** {meaning[0]} */"] if len(meaning) == 1 else ["/**", *(f" * {line}" for line in meaning), " */"]
    lines = [*doc, f"export interface {_ts_name(frame)} {{"]
    for name, info in frame.model_fields.items():
        # Host frames carry every field (defaults included); the page may leave out a field with a default.
        # `type` (the discriminant) is never optional.
        optional = "?" if mark_optional and not info.is_required() and name != "type" else ""
        lines.append(f"  {info.alias or name}{optional}: {_ts_type(info.annotation)};")
    return [*lines, "}"]


def frames_typescript() -> str:
    """`web/static/frames.d.ts`: one interface per frame (wire names), and the unions `PageFrame`, `HostFrame`."""
    page = typing.get_args(PageFrame)
    host = typing.get_args(HostFrame)
    out = [
        "// The page protocol's frames, printed by frames_typescript() in src/mcp_apps_host/host/tab/frames.py:",
        "// do not edit; print it again when a frame changes (tests/code/test_page_protocol.py compares).",
        "// The page's JavaScript names these in JSDoc, and tsc --checkJs holds it to them.",
        "",
        "// ---- page → host (a field with `?` may be left out)",
        "",
    ]
    for frame in page:
        out += [*_interface(frame, True), ""]
    out += ["// ---- host → page (every field is always sent; null where it does not apply)", ""]
    for frame in host:
        out += [*_interface(frame, False), ""]
    for union, frames in (("PageFrame", page), ("HostFrame", host)):
        out.append(f"export type {union} =")
        out += [f"  | {_ts_name(frame)}" for frame in frames]
        out[-1] += ";"
        out.append("")
    return "\n".join(out)
