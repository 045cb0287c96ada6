"""A process's graceful stop: stop taking tabs and calls, tell the open tabs to move, let the calls in
flight finish (up to a timeout), then close the tabs.

Every `Host.for_person` copy shares the one `Lifecycle` of its process. The tabs register what the
stop needs of them (`TabLink`); the calls register themselves while they run (`Lifecycle.call`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from ...errors import CallFailed

log = logging.getLogger("mcp_apps_host.lifecycle")

DEFAULT_STOP_TIMEOUT = 30.0


class Stopping(CallFailed):
    """A call refused because this process is stopping (its tab is about to move to another)."""


class TabLink(Protocol):
    """What the stop does to one open tab."""

    def reconnect(self, reason: str) -> None:
        """Tell the page it will be moved to another process (a `reconnect` frame)."""

    async def close(self) -> None:
        """Send what is queued for the page, then close its connection (the page reconnects)."""


@dataclass(frozen=True)
class Drained:
    """How a stop went: calls that finished while it waited, calls ended at the timeout, seconds taken."""

    finished: int
    ended: int
    seconds: float


def stopped_error(timeout: float) -> str:
    return f"the host stopped before the call finished (stop timeout {timeout:g} s)"


@dataclass
class Lifecycle:
    stopping: bool = False
    timed_out: bool = False  # the calls still running were ended by the stop
    timeout: float = DEFAULT_STOP_TIMEOUT
    _calls: set[asyncio.Task[object]] = field(default_factory=set)
    _tabs: set[TabLink] = field(default_factory=set)
    _idle: asyncio.Event | None = None

    def tab(self, link: TabLink) -> Callable[[], None]:
        """Register an open tab; returns what unregisters it."""
        self._tabs.add(link)
        return lambda: self._tabs.discard(link)

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        """Around one tool call: refused once stopping, waited for by the stop while it runs."""
        if self.stopping:
            raise Stopping("the host is stopping: this tab reconnects to another one in a moment; call again then")
        task = asyncio.current_task()
        if task is None:  # not in a task: nothing the stop could wait for or end
            yield
            return
        self._calls.add(task)
        try:
            yield
        finally:
            self._calls.discard(task)
            if not self._calls and self._idle is not None:
                self._idle.set()

    @property
    def calls_in_flight(self) -> int:
        return len(self._calls)

    async def drain(self, timeout: float | None = None) -> Drained:
        """Stop: refuse new tabs and calls, tell the tabs, wait for the calls (ending those still running at
        ``timeout`` with a clear error), then close the tabs. Safe to call twice (the second does nothing)."""
        if self.stopping:
            return Drained(0, 0, 0.0)
        self.stopping = True
        timeout = self.timeout if timeout is None else timeout
        started = time.monotonic()
        for link in list(self._tabs):
            link.reconnect("stopping")
        running = len(self._calls)
        if self._calls:
            self._idle = asyncio.Event()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._idle.wait(), timeout)
        left = list(self._calls)
        if left:
            self.timed_out = True
            log.warning("stop: %d call(s) still running after %g s are ended", len(left), timeout)
            for task in left:
                task.cancel()
            await asyncio.gather(*left, return_exceptions=True)
        await asyncio.gather(*(link.close() for link in list(self._tabs)), return_exceptions=True)
        drained = Drained(running - len(left), len(left), time.monotonic() - started)
        log.info("stop: %d call(s) finished, %d ended at the timeout, tabs told to reconnect (%.1f s)",
                 drained.finished, drained.ended, drained.seconds)
        return drained
