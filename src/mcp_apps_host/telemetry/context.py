"""Who and what the code running now is about, for the log lines it writes: the person (tenant and user)
and the view. Set where a tab handles a frame from its page; tasks started there inherit it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class LogContext:
    tenant: str | None = None
    user: str | None = None
    view: str | None = None  # a view's handle


_NOBODY = LogContext()
_current: ContextVar[LogContext | None] = ContextVar("mcp_apps_host_log_context", default=None)


def current() -> LogContext:
    return _current.get() or _NOBODY


@contextlib.contextmanager
def about(tenant: str | None = None, user: str | None = None, view: str | None = None) -> Iterator[None]:
    """Log lines written inside (and by tasks started inside) name these; what is not given is kept."""
    now = current()
    token = _current.set(LogContext(tenant or now.tenant, user or now.user, view or now.view))
    try:
        yield
    finally:
        _current.reset(token)
