"""A tool call as the conversation keeps it: one type, read and written in one place.

Stored as a JSON object of a conversation's `tool-call` item (and with a pinned view), with
the camelCase keys it has always had, so conversations kept before read the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from .content import error_result

CallSource = Literal["person", "model", "view"]
CallStatus = Literal["running", "ok", "tool-error", "failed", "cancelled"]

ENDED_WITH_RESULT: tuple[CallStatus, ...] = ("ok", "tool-error")
INTERRUPTED = "interrupted: the host stopped"


@dataclass(frozen=True)
class ViewRef:
    """The template a call's view was mounted from, kept by hash."""

    sha256: str
    uri: str


@dataclass
class CallRecord:
    server: str | None
    tool: str | None
    arguments: dict[str, Any]
    source: CallSource
    status: CallStatus = "running"
    definition: dict[str, Any] | None = None  # the tool as listed then: a replayed view is mounted from it
    app_tool_of: str | None = None  # the label of the view whose own tool this is
    result: dict[str, Any] | None = None
    error: str | None = None
    duration_ms: int | None = None
    view: ViewRef | None = None
    view_error: str | None = None  # why the call's view could not be shown
    instance: str | None = None  # the view instance's id: its kept state and height are found by it
    view_pending: bool = False  # its view is not known yet: another tab draws the call only once it is
    # The instance of the open view this call's input and result were given to (`mcp-apps-host/later-results`):
    # such a call has no view of its own.
    delivered_to: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # keys this version does not know, kept as they were

    def ended(self, status: CallStatus, result: dict[str, Any] | None, error: str | None, duration_ms: int) -> None:
        self.status, self.result, self.error, self.duration_ms = status, result, error, duration_ms

    def not_run(self, arguments: dict[str, Any], why: str) -> None:
        """Refused by a rule or by the person before it reached anyone."""
        self.arguments = arguments
        self.ended("failed", None, f"not run: {why}", 0)

    def view_outcome(self) -> tuple[dict[str, Any] | None, str | None]:
        """What a view mounted again for this call is given after its input: (result, or why it has none)."""
        if self.status in ENDED_WITH_RESULT:
            return self.result or {"content": []}, None
        if self.status == "failed":
            return error_result(self.error or "failed"), None
        return None, "cancelled by the person" if self.status == "cancelled" else INTERRUPTED

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {**self.extra, "server": self.server, "tool": self.tool, "arguments": self.arguments,
                                "source": self.source, "status": self.status}
        optional = {"definition": self.definition, "appToolOf": self.app_tool_of, "result": self.result,
                    "error": self.error, "durationMs": self.duration_ms, "viewError": self.view_error,
                    "instance": self.instance, "deliveredTo": self.delivered_to,
                    "view": {"sha256": self.view.sha256, "uri": self.view.uri} if self.view else None}
        data.update({k: v for k, v in optional.items() if v is not None})
        if self.view_pending:
            data["viewPending"] = True
        return data

    @classmethod
    def from_json(cls, data: Any) -> CallRecord:
        """A kept record, whatever was kept: a missing or malformed field reads as absent."""
        data = data if isinstance(data, dict) else {}
        view = data.get("view")
        status = data.get("status")
        source = data.get("source")
        known = {"server", "tool", "arguments", "source", "status", "definition", "appToolOf", "result", "error",
                 "durationMs", "view", "viewError", "instance", "viewPending", "deliveredTo"}
        return cls(
            server=_str(data.get("server")), tool=_str(data.get("tool")),
            arguments=_dict(data.get("arguments")) or {},
            source=source if source in get_args(CallSource) else "person",
            status=status if status in get_args(CallStatus) else "failed",
            definition=_dict(data.get("definition")), app_tool_of=_str(data.get("appToolOf")),
            result=_dict(data.get("result")), error=_str(data.get("error")),
            duration_ms=data.get("durationMs") if isinstance(data.get("durationMs"), int) else None,
            view=ViewRef(view["sha256"], str(view.get("uri", ""))) if isinstance(view, dict)
            and isinstance(view.get("sha256"), str) else None,
            view_error=_str(data.get("viewError")), instance=_str(data.get("instance")),
            view_pending=data.get("viewPending") is True, delivered_to=_str(data.get("deliveredTo")),
            extra={k: v for k, v in data.items() if k not in known})


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None
