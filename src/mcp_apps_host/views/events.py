"""What the host hands a `ViewSession`: plain values, one class per kind of event.

`ViewSession.handle` takes any of them and answers with effects (`effects.py`); it is the one
way in, so every change of a view's state starts from one of these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .context import ViewSpec
from .jsonrpc import RequestId

# ---- from the view (relayed by the page) ---------------------------------------------------------


@dataclass(frozen=True)
class FromView:
    """One JSON-RPC message the view posted (anything: it is untrusted)."""

    message: Any


# ---- the view's call: its document, input and result --------------------------------------------


@dataclass(frozen=True)
class SendResource:
    """Send the template with the mount, before the proxy says it is ready."""


@dataclass(frozen=True)
class Take:
    """A call takes a view booted ahead; a held ui/initialize is answered with the call's spec."""

    spec: ViewSpec


@dataclass(frozen=True)
class ToolInputPartial:
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ToolInput:
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ToolResult:
    result: dict[str, Any]


@dataclass(frozen=True)
class ToolCancelled:
    reason: str


@dataclass(frozen=True)
class LaterResult:
    """A later call of the view's tool, given to this view (`mcp-apps-host/later-results`): its input and
    result are sent again, after the view's own call has ended."""

    arguments: dict[str, Any]
    result: dict[str, Any]


# ---- what the host did for the view's requests -----------------------------------------------------


@dataclass(frozen=True)
class RequestCompleted:
    """A request the host ran for the view (tools/call, resources/read, …) ended."""

    request_id: RequestId
    result: dict[str, Any] | None = None
    error: tuple[int, str] | None = None


@dataclass(frozen=True)
class Progress:
    """Progress of a request the host runs for the view, for the view's progress token."""

    token: str | int
    progress: float
    total: float | None
    message: str | None


@dataclass(frozen=True)
class ConsentAnswered:
    token: RequestId
    allowed: bool


@dataclass(frozen=True)
class CallAppTool:
    """tools/call of a tool the view offers (`AppToolResult` brings the answer); ``request_id`` is
    the host's id for it, from `ViewSession.next_app_call_id`."""

    request_id: RequestId
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class CancelAppTool:
    request_id: RequestId


# ---- timers -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InitTimedOut:
    pass


@dataclass(frozen=True)
class TeardownTimedOut:
    pass


@dataclass(frozen=True)
class RequestTimedOut:
    request_id: RequestId


# ---- the person, the page and the host ---------------------------------------------------------------


@dataclass(frozen=True)
class Teardown:
    reason: str


@dataclass(frozen=True)
class Fail:
    reason: str


@dataclass(frozen=True)
class DisplayModeRequested:
    """The person's or the inspector's control: any mode the view declared."""

    mode: str


@dataclass(frozen=True)
class ContainerMeasured:
    mode: str
    width: int
    height: int


@dataclass(frozen=True)
class HostContextChanged:
    """Fields of `HostEnvironment` that changed (theme, styles, locale, container size, …)."""

    changes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ServerToolsChanged:
    spec: ViewSpec


@dataclass(frozen=True)
class ResourceUpdated:
    """The view's server said a resource the view subscribed to was updated."""

    uri: str


Event = (
    FromView
    | SendResource
    | Take
    | ToolInputPartial
    | ToolInput
    | ToolResult
    | ToolCancelled
    | LaterResult
    | RequestCompleted
    | Progress
    | ConsentAnswered
    | CallAppTool
    | CancelAppTool
    | InitTimedOut
    | TeardownTimedOut
    | RequestTimedOut
    | Teardown
    | Fail
    | DisplayModeRequested
    | ContainerMeasured
    | HostContextChanged
    | ServerToolsChanged
    | ResourceUpdated
)
