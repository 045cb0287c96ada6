"""What a model turn produces, as plain values: the adapters yield model events, the agent adds its own.

Per tool call the order is always: `ToolCallStarted`, zero or more `ToolCallArgsDelta`,
then exactly one of `ToolCallFinished` / `ToolCallInvalid` (or `ToolCallCancelled` when the
turn is stopped or the stream fails first). Every adapter stream ends with exactly one
`TurnFinished` or `ModelError`, unless it is cancelled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# ---- from the model adapters ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    index: int  # position of the call within this model step, 0-based, same for both providers
    call_id: str
    name: str  # the model-facing name; resolve it with ToolTable.resolve


@dataclass(frozen=True, slots=True)
class ToolCallArgsDelta:
    index: int
    call_id: str
    name: str
    raw_so_far: str
    # Best-effort parse of raw_so_far; None when it did not change since the previous delta
    # (or nothing parses yet), so each non-None value is worth a tool-input-partial.
    parsed: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    index: int
    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolCallInvalid:
    """The model's final argument text is not a JSON object; the call is not run."""

    index: int
    call_id: str
    name: str
    raw: str
    error: str


@dataclass(frozen=True, slots=True)
class TurnFinished:
    # Normalised: "stop", "tool_calls", "length", "content_filter", "refusal", or the provider's own word.
    stop_reason: str
    usage: dict[str, int] | None  # {"input_tokens": .., "output_tokens": ..} when the provider says


@dataclass(frozen=True, slots=True)
class ModelError:
    message: str  # the provider's message, with any API key removed


ModelEvent = (
    TextDelta
    | ToolCallStarted
    | ToolCallArgsDelta
    | ToolCallFinished
    | ToolCallInvalid
    | TurnFinished
    | ModelError
)

# ---- from the agent loop ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolCallResult:
    """A call's result as the model will see it (also for calls never run: unknown tool, bad JSON)."""

    index: int
    call_id: str
    name: str
    content_text: str
    is_error: bool
    executed: bool  # False: the agent answered the model itself, `execute` was not called


@dataclass(frozen=True, slots=True)
class ToolCallCancelled:
    """A started call that will get no result from its tool: the turn was stopped or the stream failed."""

    index: int
    call_id: str
    name: str
    reason: str


@dataclass(frozen=True, slots=True)
class StepLimitReached:
    max_steps: int
    message: str


AgentEvent = ToolCallResult | ToolCallCancelled | StepLimitReached
Event = ModelEvent | AgentEvent
