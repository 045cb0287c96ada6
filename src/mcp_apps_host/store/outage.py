"""A database that cannot take writes for a while: which errors mean that, what to tell callers, and the
audit events held in order until it takes them again.

An outage (a restarted or unreachable PostgreSQL, a full disk, a read-only SQLite file) keeps every
queued event in memory, in order, and retries on a fresh connection with backoff; a caller waiting
for its events is told :class:`DatabaseUnavailable` once it has waited ``wait`` seconds. The outage is
logged once when it starts and once when it ends, not per attempt.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final, Literal, Protocol

from sqlalchemy.exc import DBAPIError, DisconnectionError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from ..errors import DatabaseUnavailable
from .audit_events import Row

log = logging.getLogger("mcp_apps_host.store.outage")

# Backoff between attempts to write the held events: short at first (a restart takes a second or two),
# never longer than a second, so a waiting caller hears of its deadline within a second of it.
RETRY_FIRST: Final = 0.1
RETRY_MAX: Final = 1.0

Why = Literal["is unreachable", "is full", "is read-only", "is busy"]

# What SQLite says when it cannot take a write now, as against a write that is wrong ("no such table").
_SQLITE_TRANSIENT: Final = ("disk is full", "readonly database", "database is locked", "disk i/o error",
                            "unable to open database file")


def cannot_write(exc: BaseException) -> bool:
    """The database cannot take writes right now (worth a retry), as against a write that is wrong."""
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, DisconnectionError | PoolTimeout | OSError):
        return True
    text = str(getattr(exc, "orig", None) or exc).lower()
    if isinstance(exc, DBAPIError) and exc.orig is not None and type(exc.orig).__module__.startswith("sqlite3"):
        return any(words in text for words in _SQLITE_TRANSIENT)
    # PostgreSQL: a lost or refused connection, a server shutting down or starting, a full disk (all
    # OperationalError), or a standby that took over read-only ("read-only transaction").
    return isinstance(exc, OperationalError | InterfaceError) or "read-only transaction" in text


def why(exc: BaseException) -> Why:
    # The driver's own message: the statement and its parameters (which may say "readOnly") are not looked at.
    text = str(getattr(exc, "orig", None) or exc).lower()
    if "disk is full" in text or "no space left" in text or "disk full" in text:
        return "is full"
    if "readonly" in text or "read-only" in text or "read only" in text:
        return "is read-only"
    if "database is locked" in text:
        return "is busy"
    return "is unreachable"


async def retried(attempt: Callable[[], Awaitable[None]], what: str, wait: float) -> None:
    """Make one write; a database that cannot take it now is tried again with backoff for up to ``wait``
    seconds, then the write is logged as lost (never raised: the console goes on without it)."""
    delay, deadline = RETRY_FIRST, asyncio.get_running_loop().time() + wait
    while True:
        try:
            await attempt()
            return
        except Exception as exc:
            if not cannot_write(exc):
                log.exception("could not write %s", what)
                return
            if asyncio.get_running_loop().time() >= deadline:
                log.error("could not write %s: the database %s (waited %g s, database_wait_timeout)",
                          what, why(exc), wait)
                return
        await asyncio.sleep(delay)  # backoff before the next attempt, not a wait for a condition
        delay = min(delay * 2, RETRY_MAX)


async def write_retried(write: Callable[[], None], what: str, wait: float,
                        run: Callable[[Callable[[], None]], Awaitable[None]] = asyncio.to_thread) -> None:
    """:func:`retried` for a blocking write, run off the loop (by ``run``: on a worker thread unless told)."""
    await retried(lambda: run(write), what, wait)


def unavailable(reason: Why, wait: float) -> DatabaseUnavailable:
    return DatabaseUnavailable(f"the audit trail's database {reason}: the answer was not recorded, so it is "
                               f"not given (waited {wait:g} s, database_wait_timeout)")


class Settable(Protocol):
    """Told once everything queued before it is committed (or why not)."""

    def set(self, error: BaseException | None = None) -> None: ...


# Who waits for a queued event: the event loop and future of an awaiting `record`, or nobody.
Waiter = tuple[asyncio.AbstractEventLoop, asyncio.Future[None]] | None


@dataclass
class Held:
    """One event not yet committed: its row, who waits for it (None once told, or if nobody), when it came."""

    row: Row
    waiter: Waiter
    since: float


@dataclass
class _Flush:
    flag: Settable
    through: int  # events taken before it: it is done once that many are written
    since: float


@dataclass
class Backlog:
    """Events taken from the queue and not yet written, oldest first, and the flushes waiting on them."""

    wait: float
    max_events: int
    rows: deque[Held] = field(default_factory=deque)
    taken: int = 0
    written: int = 0
    flushes: deque[_Flush] = field(default_factory=deque)
    down_since: float | None = None
    reason: Why = "is unreachable"
    retry_at: float = 0.0
    _delay: float = RETRY_FIRST
    _told_callers: bool = False

    def add(self, row: Row, waiter: Waiter, now: float) -> None:
        self.rows.append(Held(row, waiter, now))
        self.taken += 1

    def flush(self, flag: Settable, now: float) -> None:
        self.flushes.append(_Flush(flag, self.taken, now))

    def written_front(self, count: int) -> list[Held]:
        """The oldest ``count`` events are committed (or refused for good): taken off, for their waiters."""
        done = [self.rows.popleft() for _ in range(count)]
        self.written += count
        return done

    def ready(self) -> list[Settable]:
        """Flushes whose events are all written."""
        out = []
        while self.flushes and self.flushes[0].through <= self.written:
            out.append(self.flushes.popleft().flag)
        return out

    # -- an outage ----------------------------------------------------------------------------------

    def down(self, exc: BaseException, now: float) -> None:
        if self.down_since is None:
            self.down_since, self.reason, self._delay, self._told_callers = now, why(exc), RETRY_FIRST, False
            log.error("the audit trail's database %s (%s): %d events held; replies wait up to %g s "
                      "(database_wait_timeout) for it, then fail", self.reason, _first_line(exc),
                      len(self.rows), self.wait)
        self.retry_at = now + self._delay
        self._delay = min(self._delay * 2, RETRY_MAX)

    def up(self, now: float) -> None:
        if self.down_since is not None:
            log.warning("the audit trail's database takes writes again after %.1f s; the held events are written",
                        now - self.down_since)
            self.down_since = None

    def next_wake(self, now: float) -> float | None:
        """Seconds until the next retry, while events are held after a failed write."""
        if self.down_since is None or not self.rows:
            return None
        return max(0.0, self.retry_at - now)

    def overdue(self, now: float) -> tuple[list[Held], list[Settable], DatabaseUnavailable]:
        """Waiters and flushes that have waited ``wait`` seconds through this outage, or all of them once the
        outage is that old: they are told it failed (their events stay held, written when it is back)."""
        error = unavailable(self.reason, self.wait)
        if self.down_since is None:
            return [], [], error
        # Once the outage itself is that old, whoever comes next fails at once, until the database is back.
        late = now if now - self.down_since >= self.wait else now - self.wait
        held = [h for h in self.rows if h.waiter is not None and h.since <= late]  # the writer tells them
        flags = []
        while self.flushes and self.flushes[0].since <= late:
            flags.append(self.flushes.popleft().flag)
        if (held or flags) and not self._told_callers:
            self._told_callers = True
            log.error("replies that wait for the audit trail are answered with an error now: %s", error)
        return held, flags, error

    def trim(self) -> tuple[list[Held], list[Settable]]:
        """Past ``max_events`` held, the oldest are given up (logged): their waiters and flushes are told."""
        extra = len(self.rows) - self.max_events
        if extra <= 0:
            return [], []
        log.error("dropped %d audit events held while the database %s (max_audit_backlog = %d)",
                  extra, self.reason, self.max_events)
        dropped = self.written_front(extra)
        return dropped, self.ready()


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
