"""What a `ViewSession` asks the host to do: plain values, one class per kind of effect."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ..values.apptools import AppTool
from ..values.decisions import ConsentKind, Decision
from ..values.json import JsonValue
from ..values.protocol import ResourceListing
from .jsonrpc import RequestId


class ViewState(StrEnum):
    CREATED = "created"
    RESOURCE_SENT = "resource_sent"
    INITIALIZING = "initializing"
    READY = "ready"
    TEARING_DOWN = "tearing_down"
    CLOSED = "closed"
    ERROR = "error"


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
class ProxyResourceList:
    """One page of the view's own server's resources (`resources/list`) or resource templates
    (`resources/templates/list`), from ``cursor``."""

    request_id: RequestId
    method: ResourceListing
    cursor: str | None


@dataclass(frozen=True)
class ProxyResourceSubscribe:
    """Follow (``subscribe``) or stop following a resource of the view's own server: the server's
    `notifications/resources/updated` for ``uri`` reach the view while it follows."""

    request_id: RequestId
    uri: str
    subscribe: bool


@dataclass(frozen=True)
class KeepViewState:
    """Read (``write`` False) or replace the JSON value the host keeps for this view instance and its person
    (`mcp-apps-host/state/get` and `/set`); None forgets it."""

    request_id: RequestId
    write: bool
    state: JsonValue = None


@dataclass(frozen=True)
class CancelProxied:
    request_id: RequestId


@dataclass(frozen=True)
class AskConsent:
    token: RequestId
    kind: ConsentKind
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
    decision: Decision
    reason: str


@dataclass(frozen=True)
class Sample:
    """The person allowed a sampling/createMessage: the host asks its model and completes the request."""

    request_id: RequestId
    params: dict[str, Any]


@dataclass(frozen=True)
class Download:
    """One file the person allowed a view to save."""

    filename: str
    mime_type: str
    text: str | None
    blob: str | None  # base64
    url: str | None = None  # an http(s) resource_link: the person's browser fetches it
    resource_uri: str | None = None  # a resource_link to the view's own server: the host reads it first


@dataclass(frozen=True)
class SaveFiles:
    """The person allowed a ui/download-file that names resource links: the host fetches what it
    must, saves every file, then completes the request."""

    request_id: RequestId
    files: tuple[Download, ...]


@dataclass(frozen=True)
class OpenView:
    """The person allowed a view to open another view of its server: the host calls ``name`` as the
    person's own call (its card, its view), then completes the request."""

    request_id: RequestId
    name: str
    arguments: dict[str, Any]


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


@dataclass(frozen=True)
class StartRequestTimer:
    """A request the host sent the view (tools/list, tools/call) times out after ``seconds``:
    then call :meth:`ViewSession.request_timed_out`."""

    request_id: RequestId
    seconds: float


@dataclass(frozen=True)
class AppToolsChanged:
    """The tools the view offers of its own, as last listed (empty: none, or the view is gone)."""

    tools: tuple[AppTool, ...]


@dataclass(frozen=True)
class AppToolResult:
    """The end of a host → view tools/call: a CallToolResult, or why there is none."""

    request_id: RequestId
    result: dict[str, Any] | None
    error: str | None = None


Effect = (
    PostToView
    | ProxyToolCall
    | ProxyResourceRead
    | ProxyResourceList
    | ProxyResourceSubscribe
    | KeepViewState
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
    | SaveFiles
    | OpenView
    | StateChanged
    | StartTeardownTimer
    | StartInitTimer
    | StartRequestTimer
    | AppToolsChanged
    | AppToolResult
)
