"""SIGTERM (and a first Ctrl-C) stop the process gracefully: the host's `Lifecycle.drain` runs first (no new
tabs or calls, tabs told to move, calls in flight finished, tabs closed), then, once the pages have answered
the closes, the server is told to exit (it closes its listeners and the app's lifespan stops the servers and
writes the audit trail out).

The server's own signal handler is kept and run after the drain. A uvicorn `Server` is told through its
`should_exit` flag rather than its handler, so that the process ends with status 0 instead of being
signalled again once the server is done.

A SIGTERM that comes while the stop runs changes nothing: a worker of `serve --workers N` gets one from
whoever stops the service (systemd signals the whole group, a terminal's Ctrl-C too) and another from its
supervisor, and the second must not cut the first short. A second Ctrl-C (SIGINT) goes to the server's
handler at once: a person at a terminal asking again means now.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable
from multiprocessing import resource_tracker
from types import FrameType
from typing import Any, Protocol

from ..host.process.lifecycle import Lifecycle

log = logging.getLogger("mcp_apps_host.stop")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
SignalHandler = Callable[[int, FrameType | None], Any] | int | None
CLOSE_ANSWER_WAIT_S = 10.0  # as long as uvicorn itself waits for a page to answer a close
_stop_begun = threading.Event()  # process-wide, as signals are: this process has begun its graceful stop


def ignore_late_stops() -> None:
    """Before the server takes the signals: the SIGTERM handler it hands them back to once it is done.

    A stop asked for again after the server let go (the process is ending cleanly) is ignored, so a
    supervisor's SIGTERM that comes late does not turn a clean exit into death by signal; before any stop
    began, SIGTERM ends the process as it would by default. Main thread only (elsewhere nothing)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _after_the_stop)


def leave_hangups_to_the_supervisor() -> None:
    """In a worker of `--workers N`: SIGHUP is the supervisor's (it replaces the workers one at a time). A
    hangup sent to the whole process group, as a closed terminal sends it, would otherwise kill every worker
    at once, dropping what they were doing. Main thread only (elsewhere nothing)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGHUP, signal.SIG_IGN)


def start_resource_tracker_ignoring_hangups() -> None:
    """In the supervisor of `--workers N`, before its first worker: start multiprocessing's resource tracker
    with SIGHUP ignored, which it keeps (an ignored signal stays ignored in the program it runs). It is in the
    process group too, and a hangup sent to the group would kill it: the next worker started (SIGHUP replaces
    them) would then warn that it "died unexpectedly" and start another."""
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        resource_tracker.ensure_running()
    finally:
        signal.signal(signal.SIGHUP, previous)


def _after_the_stop(sig: int, _frame: FrameType | None) -> None:
    if _stop_begun.is_set():
        return
    signal.signal(sig, signal.SIG_DFL)
    signal.raise_signal(sig)


class _Server(Protocol):
    """What is used of a uvicorn `Server`."""

    should_exit: bool


def _server_of(handler: SignalHandler) -> _Server | None:
    """The uvicorn `Server` whose signal handler this is, or None."""
    server = getattr(handler, "__self__", None)
    return server if hasattr(server, "should_exit") else None


async def closes_answered(server: _Server | None, timeout: float = CLOSE_ANSWER_WAIT_S) -> None:
    """Wait until every page whose WebSocket this process closed has answered the close (at most ``timeout``).

    The server's own shutdown ends what is still open at once, and a connection ended while its page still
    sends (a view's messages) is reset: the reset drops what the kernel had not delivered to the page yet,
    which for a page that reads slowly is its last answers and the close itself. A page sends nothing after
    its answer to the close, so once it has come the connection ends cleanly."""
    connections = getattr(getattr(server, "server_state", None), "connections", None)
    if connections is None:
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    # uvicorn says nothing when a close is answered; the connection leaves its set then.
    while any(getattr(c, "close_sent", False) for c in list(connections)) and loop.time() < deadline:
        await asyncio.sleep(0.01)


def drain_on_signals(lifecycle: Lifecycle) -> Callable[[], None]:
    """Install the handlers (main thread only; elsewhere nothing); returns what puts the old ones back."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    loop = asyncio.get_running_loop()
    previous: dict[int, SignalHandler] = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    draining: list[int] = []  # the signal that started the drain
    tasks: set[asyncio.Task[None]] = set()

    def exit_now(sig: int, frame: FrameType | None) -> None:
        handler = previous[sig]
        server = _server_of(handler)
        if frame is None and server is not None:
            server.should_exit = True  # uvicorn.Server: exit as if asked, without the signal being raised again
        elif callable(handler):
            handler(sig, frame)
        elif handler != signal.SIG_IGN:  # nobody else handled it: the default (end the process)
            signal.signal(sig, signal.SIG_DFL)
            signal.raise_signal(sig)

    async def drain_then_exit(sig: int) -> None:
        log.info("received %s: stopping gracefully (stop timeout %g s)", signal.Signals(sig).name, lifecycle.timeout)
        try:
            await lifecycle.drain()
            await closes_answered(_server_of(previous[sig]))
        finally:
            exit_now(sig, None)

    def on_signal(sig: int, frame: FrameType | None) -> None:
        if draining:
            if sig == signal.SIGINT:  # Ctrl-C again: stop now
                exit_now(sig, frame)
            else:  # the same stop asked for again (the group's signal, then the supervisor's)
                log.info("received %s again: already stopping", signal.Signals(sig).name)
            return
        draining.append(sig)
        _stop_begun.set()
        # A signal handler may run in the middle of the loop's own work: hand the drain to the loop.
        loop.call_soon_threadsafe(lambda: tasks.add(loop.create_task(drain_then_exit(sig))))

    for sig in STOP_SIGNALS:
        signal.signal(sig, on_signal)

    def restore() -> None:
        for sig, handler in previous.items():
            if draining and sig == signal.SIGTERM:
                continue  # the server's handler would take a late SIGTERM and raise it again on its way out
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)

    return restore
