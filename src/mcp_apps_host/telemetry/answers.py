"""A view request's span ends once its answer has left for the page, after the audit commit that
must come first, not when the host decided it: the one who sends the answer takes the span over.

The driver posts the answer inside :func:`answering`; the tab's socket, as it queues the frame, takes
the span (:func:`take`), commits the audit trail inside :func:`committing` and ends it once the frame
is written (:meth:`Answer.sent`). Nobody took it (a page without a socket): it ends as the post returns.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from opentelemetry import trace
from opentelemetry.trace import Span

from .spans import tracer


@dataclass(eq=False)
class Answer:
    span: Span
    taken: bool = False

    def sent(self) -> None:
        self.span.end()


_pending: ContextVar[Answer | None] = ContextVar("mcp_apps_host_answer", default=None)


@contextmanager
def answering(span: Span) -> Iterator[None]:
    """Post a request's answer: ``span`` is current, and ends here unless the sender took it."""
    answer = Answer(span)
    token = _pending.set(answer)
    try:
        with trace.use_span(span, end_on_exit=False):
            yield
    finally:
        _pending.reset(token)
        if not answer.taken:
            span.end()


def take() -> Answer | None:
    """The answer being posted now, if any, for the sender to end once it is written."""
    answer = _pending.get()
    if answer is None or answer.taken:
        return None
    answer.taken = True
    return answer


@contextmanager
def committing(answers: Sequence[Answer]) -> Iterator[None]:
    """An ``audit commit`` span in each answer's trace, for the one group commit they all wait on."""
    spans = [tracer.start_span("audit commit", context=trace.set_span_in_context(a.span)) for a in answers]
    try:
        yield
    finally:
        for span in spans:
            span.end()
