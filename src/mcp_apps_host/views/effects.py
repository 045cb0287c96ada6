"""What a `ViewSession` asks the host to do: plain values, one class per kind of effect."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

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
