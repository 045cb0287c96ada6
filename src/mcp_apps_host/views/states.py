"""The states a view goes through, and which step takes it from one to the next: two tables a
test can print. `ViewSession` moves only through `advance` and `ToolCall.step`, so a step its
state does not allow raises `IllegalTransition` naming both, instead of corrupting the view.
"""

from __future__ import annotations

from enum import StrEnum

from ..errors import IllegalTransition
from .effects import ViewState


class Step(StrEnum):
    """What moves a view from one `ViewState` to another."""

    RESOURCE_SENT = "template sent to the sandbox proxy"
    INITIALIZE_ANSWERED = "ui/initialize answered"
    INITIALIZED = "ui/notifications/initialized received"
    TEARDOWN_SENT = "ui/resource-teardown sent"
    CLOSED = "closed"
    FAILED = "failed"


_RUNNING = (ViewState.CREATED, ViewState.RESOURCE_SENT, ViewState.INITIALIZING, ViewState.READY,
            ViewState.TEARING_DOWN)

VIEW_TRANSITIONS: dict[tuple[ViewState, Step], ViewState] = {
    (ViewState.CREATED, Step.RESOURCE_SENT): ViewState.RESOURCE_SENT,
    (ViewState.RESOURCE_SENT, Step.INITIALIZE_ANSWERED): ViewState.INITIALIZING,
    (ViewState.INITIALIZING, Step.INITIALIZED): ViewState.READY,
    (ViewState.READY, Step.TEARDOWN_SENT): ViewState.TEARING_DOWN,
    **{(state, Step.CLOSED): ViewState.CLOSED for state in _RUNNING},
    **{(state, Step.FAILED): ViewState.ERROR for state in _RUNNING},
}

ENDED = (ViewState.CLOSED, ViewState.ERROR)


def advance(state: ViewState, step: Step) -> ViewState:
    """The state ``step`` leads to from ``state``."""
    try:
        return VIEW_TRANSITIONS[state, step]
    except KeyError:
        raise IllegalTransition(f"a view that is {state} cannot be {step}") from None


class ToolPhase(StrEnum):
    """Where the view's call is in the spec's order: partial inputs, one input, then one result or
    cancellation."""

    AWAITING_INPUT = "awaiting its input"
    HAS_INPUT = "given its input"
    ENDED = "ended"


class ToolStep(StrEnum):
    INPUT_PARTIAL = "tool-input-partial"
    INPUT = "tool-input"
    RESULT = "tool-result"
    CANCELLED = "tool-cancelled"


TOOL_TRANSITIONS: dict[tuple[ToolPhase, ToolStep], ToolPhase] = {
    (ToolPhase.AWAITING_INPUT, ToolStep.INPUT_PARTIAL): ToolPhase.AWAITING_INPUT,
    (ToolPhase.AWAITING_INPUT, ToolStep.INPUT): ToolPhase.HAS_INPUT,
    (ToolPhase.AWAITING_INPUT, ToolStep.CANCELLED): ToolPhase.ENDED,
    (ToolPhase.HAS_INPUT, ToolStep.RESULT): ToolPhase.ENDED,
    (ToolPhase.HAS_INPUT, ToolStep.CANCELLED): ToolPhase.ENDED,
}


def tool_step(phase: ToolPhase, step: ToolStep) -> ToolPhase:
    """The phase ``step`` leads to from ``phase``."""
    try:
        return TOOL_TRANSITIONS[phase, step]
    except KeyError:
        raise IllegalTransition(f"{step} cannot be sent to a view whose call is {phase}") from None
