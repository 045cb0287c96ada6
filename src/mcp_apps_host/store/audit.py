"""The audit trail: every message between views, host, servers and model, every decision.

Durability is the point. :meth:`AuditLog.record` returns only once the event's row
is committed; on SQLite the writer connection runs in WAL mode with
``synchronous=NORMAL``: a committed event is in the write-ahead log before ``record``
returns, so it survives a ``kill -9`` of the host. (Only an OS crash or a power cut can
drop the last commits; ``FULL`` would close that too, at an fsync per commit, which a
person feels on every message a view sends.)

Committing each event on its own would cost one fsync per event. Instead one writer
thread drains a queue and commits whatever has piled up as one transaction (group
commit): a burst of thousands of events costs a handful of fsyncs, and every caller
is released once its batch is on disk. Events are written in the order they were
queued, whichever of ``record`` and ``record_nowait`` queued them. An event nobody waits
for yet (``record_nowait``) is committed at the latest ``linger`` seconds after it was
queued, or with the next flush or awaited event: the messages of a view's call then go
in the one commit its reply waits for. Queued on an event loop, such events (and writes
nobody is held up by, ``run_beside``) stay with that loop until then and go to the
writer together: its thread wakes once for them rather than once each, and each wake
takes the interpreter from the loop while a view's call is under way.

What an event is and how a batch is written is in `audit_events.py`. All SQL is built
with SQLAlchemy Core and runs on PostgreSQL as well; the SQLite connection settings live
where engines are opened (`store/db.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Final, Self, TypeVar

from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine

from ..settings import DEFAULT_LIMITS
from ..telemetry import metrics
from ..values.decisions import Decision, Direction
from .audit_events import (
    DECISIONS,
    DIRECTIONS,
    PREVIEW_CHARS,
    AuditEvent,
    BatchWriter,
    Row,
    canonical_json,
    payload_sha256,
    to_row,
)
from .checkpoints import Checkpointer, checkpointed_by_others, wal_backed
from .db import open_database
from .outage import Backlog, Held, cannot_write, unavailable
from .schema import audit_events, audit_payloads

__all__ = [
    "DECISIONS",
    "DIRECTIONS",
    "AuditEvent",
    "AuditFilter",
    "AuditLog",
    "Decision",
    "Direction",
    "canonical_json",
    "payload_sha256",
]

log = logging.getLogger(__name__)

_MAX_BATCH: Final = 2000
# Events nobody waits for yet wait this long for company before they are committed: the messages of one
# view call (its request, the call to the server, the answer) then go in the commit its reply waits for,
# instead of each in a commit of its own running beside the server call. A flush or an awaited event
# ends the wait at once.
LINGER_SECONDS: Final = 0.005

_STOP: Final = object()
_FLUSH: Final = object()
_JOB: Final = object()

T = TypeVar("T")


class _LoopFlag:
    """A flush marker set from the writer thread, awaited on the event loop that queued it."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.future: asyncio.Future[None] = self.loop.create_future()

    def set(self, error: BaseException | None = None) -> None:
        _wake(self.loop, [self.future], error)


class _NoFlag:
    """A flush marker nobody waits on: what comes before it is committed now rather than after a linger."""

    def set(self, error: BaseException | None = None) -> None:
        pass


class _ThreadFlag:
    """A flush marker a thread blocks on; it is set whether the events were written or not."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def set(self, error: BaseException | None = None) -> None:
        self.event.set()


def _wake(loop: asyncio.AbstractEventLoop, futures: list[asyncio.Future[None]], error: BaseException | None) -> None:
    """From the writer thread: settle ``futures`` on their own loop."""
    with contextlib.suppress(RuntimeError):  # that loop is closed; nobody is waiting any more
        loop.call_soon_threadsafe(_settle, futures, error)


def _settle(futures: list[asyncio.Future[None]], error: BaseException | None) -> None:
    for fut in futures:
        if fut.done():  # the awaiting task was cancelled; the event is written anyway
            continue
        if error is None:
            fut.set_result(None)
        else:
            fut.set_exception(error)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _run_jobs(jobs: list[Any]) -> None:
    for job in jobs:
        _run_job(*job)


def _run_job(fn: Callable[..., Any], args: tuple[Any, ...], loop: asyncio.AbstractEventLoop,
             future: asyncio.Future[Any]) -> None:
    """From the writer thread: run one `run_beside` job and hand its outcome to the loop that waits for it."""
    try:
        result, error = fn(*args), None
    except Exception as exc:  # handed to the caller
        result, error = None, exc
    _hand_over(loop, future, result, error)


def _hold(item: Any, held: Backlog, jobs: list[Any], now: float) -> bool:
    """File one queued item other than the stop marker where the writer takes it up; True if someone waits for it."""
    if isinstance(item, tuple) and item[0] is _FLUSH:
        held.flush(item[1], now)
        return True
    if isinstance(item, tuple) and item[0] is _JOB:
        jobs.append(item[1])
        return bool(item[2])
    row, waiter = item
    held.add(row, waiter, now)
    return waiter is not None


def _hand_over(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], result: Any,
               error: BaseException | None) -> None:
    def settle() -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    with contextlib.suppress(RuntimeError):  # that loop is closed; nobody is waiting any more
        loop.call_soon_threadsafe(settle)


@dataclass(frozen=True)
class AuditFilter:
    """Which events to read: each field set narrows the match.

    ``since``/``until`` are epoch seconds (``since`` inclusive); ``after_id`` pages on the
    ``seq`` of the last event seen.
    """

    view: str | None = None
    server: str | None = None
    conversation: str | None = None
    tenant: str | None = None
    user_id: str | None = None
    direction: str | None = None
    decision: str | None = None
    method: str | None = None
    since: float | None = None
    until: float | None = None
    after_id: int | None = None
    through_id: int | None = None  # the last id to read (inclusive)
    newest_first: bool = False  # a search shows the latest first; exports and pages go oldest first

    def __post_init__(self) -> None:
        if self.direction is not None and self.direction not in DIRECTIONS:
            raise ValueError(f"direction: {self.direction!r} is not one of {', '.join(sorted(DIRECTIONS))}")
        if self.decision is not None and self.decision not in DECISIONS:
            raise ValueError(f"decision: {self.decision!r} is not one of {', '.join(sorted(DECISIONS))}")

    def select(self) -> Any:
        e, p = audit_events, audit_payloads
        # The payload's size comes along: the inspector shows it for every message.
        stmt = select(e, p.c.size.label("payload_size")).select_from(
            e.outerjoin(p, e.c.payload_sha256 == p.c.sha256))
        for name in ("view", "server", "conversation", "tenant", "user_id", "direction", "decision", "method"):
            value = getattr(self, name)
            if value is not None:
                stmt = stmt.where(e.c[name] == value)
        if self.since is not None:
            stmt = stmt.where(e.c.ts >= self.since)
        if self.until is not None:
            stmt = stmt.where(e.c.ts < self.until)
        if self.after_id is not None:
            stmt = stmt.where(e.c.id > self.after_id)
        if self.through_id is not None:
            stmt = stmt.where(e.c.id <= self.through_id)
        return stmt.order_by(e.c.id.desc() if self.newest_first else e.c.id)


class AuditLog:
    """Durable, ordered audit events with group commit.

    ``engine_or_url``: an Engine from :func:`~mcp_apps_host.store.db.open_database` (share the
    host's) or a database URL, opened (and migrated) here. While the database cannot take writes, the
    events are held (at most ``max_backlog``) and a waiting caller fails after ``wait`` seconds
    (`outage.py`).
    """

    def __init__(self, engine_or_url: Engine | str, *, preview_chars: int = PREVIEW_CHARS,
                 linger: float = LINGER_SECONDS, wait: float = DEFAULT_LIMITS.database_wait_timeout,
                 max_backlog: int = DEFAULT_LIMITS.max_audit_backlog) -> None:
        if isinstance(engine_or_url, str):
            self.engine = open_database(engine_or_url)
            self._owns_engine = True
        else:
            self.engine = engine_or_url
            self._owns_engine = False
        if preview_chars < 1:
            raise ValueError("preview_chars: must be at least 1")
        self.preview_chars = preview_chars
        self.linger = linger
        self.wait = wait
        self.max_backlog = max_backlog
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()  # makes "check closed + enqueue" atomic against close()
        self._closed = False
        # Queued on an event loop and not waited for: handed to the writer together (`_hand_later`).
        self._later: list[Any] = []
        self._later_loop: asyncio.AbstractEventLoop | None = None
        self._later_timer: asyncio.TimerHandle | None = None  # hands them over when the linger ends
        self._batches = BatchWriter()
        self._failure: BaseException | None = None
        self._ready = threading.Event()
        # On SQLite the writer's commits leave the log's checkpoints to a thread of their own (`checkpoints.py`).
        self._checkpoints = Checkpointer(self.engine) if wal_backed(self.engine) else None
        self._writer = threading.Thread(target=self._run, name="audit-writer", daemon=True)
        self._writer.start()
        self._ready.wait()
        if self._failure is not None:
            if self._checkpoints is not None:
                self._checkpoints.stop()
            raise self._failure

    # -- writing ---------------------------------------------------------------------------

    def _enqueue(self, item: Any, *, later: bool = False, keep_jobs: bool = False) -> None:
        """Queue ``item`` for the writer. ``later``: nobody waits for it, so on an event loop it stays there until
        someone does or ``linger`` has passed. ``keep_jobs``: what stays includes writes of other tables, which
        need not run before this item does (a reply waits for its commit, not for them)."""
        with self._lock:
            if self._failure is not None:
                raise RuntimeError(f"the audit writer stopped on an error ({type(self._failure).__name__}; "
                                   "its log says more)")
            if self._closed:
                raise RuntimeError("the audit log is closed")
            if not (later and self._keep_for_later(item)):
                self._hand_later(keep_jobs)
                self._queue.put(item)
        if isinstance(item[0], Row):
            metrics.AUDIT_QUEUE_DEPTH.inc()

    def _keep_for_later(self, item: Any) -> bool:
        """Keep ``item`` on the running loop for the writer to take later; False off a loop (or on another loop
        than what is kept now), where it is queued at once. Holds ``_lock``."""
        loop = _running_loop()
        if loop is None or (self._later_loop is not None and loop is not self._later_loop):
            return False
        if self._later_loop is None:
            self._later_loop = loop
            self._later_timer = loop.call_later(self.linger, self._linger_over)
        self._later.append(item)
        return True

    def _hand_later(self, keep_jobs: bool = False) -> None:
        """Queue what was kept for later, in order (but the writes of other tables with ``keep_jobs``). Holds
        ``_lock``."""
        if not self._later:
            return
        kept = []
        for item in self._later:
            if keep_jobs and item[0] is _JOB:
                kept.append(item)
            else:
                self._queue.put(item)
        self._later = kept
        if not kept:
            # Nothing left for the linger: its timer is stopped on its own loop (from another thread it is left
            # to find nothing), or it would wake the loop once for every call a view makes.
            if self._later_timer is not None and _running_loop() is self._later_loop:
                self._later_timer.cancel()
            self._later_loop = self._later_timer = None

    def _linger_over(self) -> None:
        """On the loop, ``linger`` after the first of what it keeps: all of it goes to the writer, committed now."""
        with self._lock:
            self._later_loop = self._later_timer = None
            if self._later and self._failure is None:
                self._hand_later()
                self._queue.put((_FLUSH, _NoFlag()))

    async def record(self, event: AuditEvent) -> None:
        """Queue the event and return once it is committed (raises if the commit failed, or
        :class:`DatabaseUnavailable` after ``wait`` seconds of a database that cannot take it).

        The event is queued when this coroutine starts running, so concurrent callers
        are written in the order their ``record`` calls began. If the awaiting task is
        cancelled, the event is still written.
        """
        row = to_row(event, self.preview_chars)
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._enqueue((row, (loop, fut)), keep_jobs=True)
        await fut

    def record_nowait(self, event: AuditEvent) -> None:
        """Queue the event and return at once; it is written in order with every other event.

        Validation errors are still raised here; a failed commit is only logged.
        """
        self._enqueue((to_row(event, self.preview_chars), None), later=True)

    def flush(self, timeout: float | None = None) -> None:
        """Block until everything queued so far is committed (or failed)."""
        done = _ThreadFlag()
        self._enqueue((_FLUSH, done))
        if not done.event.wait(timeout):
            raise TimeoutError("the audit log did not drain in time")

    async def drain(self) -> None:
        """Return once everything queued so far is committed; the writer wakes the loop itself (no thread
        waits for it). Raises :class:`DatabaseUnavailable` when the database could not take it within
        ``wait`` seconds (the events stay held and are written once it can)."""
        flag = _LoopFlag()
        self._enqueue((_FLUSH, flag), keep_jobs=True)
        await flag.future

    @property
    def one_writer(self) -> bool:
        """The database takes one writer at a time (SQLite): other writes are best run by `run_beside`."""
        return self.engine.dialect.name == "sqlite"

    async def write_in_turn(self, fn: Callable[..., T], *args: Any, urgent: bool = False) -> T:
        """Run a blocking write of another table where it does not fight this writer: on SQLite on its thread
        (`run_beside`), elsewhere on a worker thread of its own."""
        if self.one_writer:
            return await self.run_beside(fn, *args, urgent=urgent)
        return await asyncio.to_thread(fn, *args)

    async def run_beside(self, fn: Callable[..., T], *args: Any, urgent: bool = False) -> T:
        """Run a blocking database write on the writer's own thread, after the events queued before it are
        committed. On SQLite, where one writer holds the database at a time, a write made elsewhere makes
        the writer wait for its lock, in steps of milliseconds, while a view's reply waits for the commit.
        ``urgent``: a person or a view waits for it (a mount, a view's request), so the writer commits what
        it holds now instead of lingering for the rest of a call's events."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._enqueue((_JOB, (fn, args, loop, future), urgent), later=not urgent)
        return await future

    def close(self, timeout: float | None = 30.0) -> None:
        """Write everything queued, then stop the writer. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._hand_later()
            self._queue.put(_STOP)
        self._writer.join(timeout)
        if self._checkpoints is not None:
            self._checkpoints.stop()
        if self._owns_engine:
            self.engine.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the writer thread -----------------------------------------------------------------

    def _connect(self) -> Connection:
        # The engine's own connect hook (store.db) makes SQLite commits survive a killed host.
        conn = self.engine.connect()
        if self._checkpoints is not None:
            checkpointed_by_others(conn)
        return conn

    def _run(self) -> None:
        conn: Connection | None
        try:
            conn = self._connect()
        except BaseException as exc:  # reported to the constructor
            self._failure = exc
            self._ready.set()
            return
        self._ready.set()
        held = Backlog(self.wait, self.max_backlog)
        stopping = False
        jobs: list[Any] = []
        try:
            while True:
                jobs = []
                stopping = self._take(held, jobs) or stopping
                settled = held.written
                if held.rows and (held.down_since is None or time.monotonic() >= held.retry_at):
                    conn = self._write(conn, held)
                self._settle_due(held)
                if stopping and held.rows:
                    self._give_up(held)
                metrics.AUDIT_QUEUE_DEPTH.dec(held.written - settled)  # written, or given up
                _run_jobs(jobs)  # after the commit: a reply waiting for it goes first
                if self._checkpoints is not None and (held.written > settled or jobs):
                    self._checkpoints.committed()
                # Hold nothing of this batch while waiting for the next: a job's function may keep a tab alive.
                del jobs
                if stopping and not held.rows:
                    break
        except BaseException as exc:  # a fault of the writer itself: whoever waits for it is told, none forever
            log.exception("the audit writer stopped")
            self._fail_everyone(held, jobs, exc)
        finally:
            if conn is not None:
                with contextlib.suppress(Exception):
                    if self._checkpoints is not None:
                        conn.invalidate()  # not back to a shared pool: it makes no checkpoints of its own
                    conn.close()

    def _fail_everyone(self, held: Backlog, jobs: list[Any], error: BaseException) -> None:
        """The writer cannot go on: what it holds, and all queued and yet to come, fails with ``error``."""
        with self._lock:
            self._failure = error  # nothing is queued after this (`_enqueue`)
            self._hand_later()  # what waits on the loop fails with the rest
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not _STOP:
                _hold(item, held, jobs, time.monotonic())
        self._release(held.written_front(len(held.rows)), error)
        for flush in held.flushes:
            flush.flag.set(error)
        held.flushes.clear()
        for _fn, _args, loop, future in jobs:
            _hand_over(loop, future, None, error)

    def _take(self, held: Backlog, jobs: list[Any]) -> bool:
        """Move what is queued into ``held`` (and ``jobs``); True once the stop marker is taken. While events
        are held after a failed write, waits no longer than until the next retry."""
        try:
            item = self._queue.get(timeout=held.next_wake(time.monotonic()))
        except queue.Empty:
            return False
        stopping, first, waited_for = False, held.taken, False
        until = time.monotonic() + self.linger
        while True:
            if item is _STOP:
                stopping = True
            else:
                waited_for = _hold(item, held, jobs, time.monotonic()) or waited_for
            if stopping or held.taken - first >= _MAX_BATCH:
                return stopping
            # Someone waits: commit what is here now. Else linger a moment for the rest of the call.
            left = 0.0 if waited_for else until - time.monotonic()
            try:
                item = self._queue.get(timeout=left) if left > 0 else self._queue.get_nowait()
            except queue.Empty:
                return stopping

    def _write(self, conn: Connection | None, held: Backlog) -> Connection | None:
        """Commit the held events, oldest first, in batches; stop at a database that cannot take them."""
        while held.rows:
            batch = list(itertools.islice(held.rows, _MAX_BATCH))
            error: BaseException | None
            try:
                if conn is None:
                    conn = self._connect()
                started = time.perf_counter()
                error = self._batches.commit(conn, [h.row for h in batch])
            except Exception as exc:  # could not reconnect: tried again after a pause
                error = exc
            if error is None:
                metrics.AUDIT_COMMIT_SECONDS.observe(time.perf_counter() - started)
                held.up(time.monotonic())
                self._release(held.written_front(len(batch)), None)
                continue
            if conn is not None:
                # A broken connection (a restarted PostgreSQL, say) is replaced for the next attempt.
                with contextlib.suppress(Exception):
                    conn.invalidate()
                conn = None
            metrics.AUDIT_FAILURES.inc()
            if cannot_write(error):
                held.down(error, time.monotonic())  # held, in order, for the next attempt
                return conn
            log.error("audit batch of %d events failed: %s", len(batch), error)
            self._release(held.written_front(len(batch)), error)  # a wrong write: its callers hear why
        return conn

    def _settle_due(self, held: Backlog) -> None:
        for flag in held.ready():
            flag.set()
        late, flags, error = held.overdue(time.monotonic())
        dropped, dropped_flags = held.trim()
        self._release(late + dropped, error)
        for flag in flags + dropped_flags:
            flag.set(error)

    def _give_up(self, held: Backlog) -> None:
        """Stopping while the database cannot take the held events: they are lost after one more wait."""
        if held.down_since is None or time.monotonic() - held.down_since < self.wait:
            return
        log.error("%d audit events were not written: the database %s", len(held.rows), held.reason)
        error = unavailable(held.reason, self.wait)
        self._release(held.written_front(len(held.rows)), error)
        for flag in held.ready():
            flag.set(error)

    @staticmethod
    def _release(events: list[Held], error: BaseException | None) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
        for h in events:
            if h.waiter is not None:
                loop, future = h.waiter
                by_loop.setdefault(loop, []).append(future)
                h.waiter = None
        for loop, futures in by_loop.items():
            _wake(loop, futures, error)  # one wake-up per loop per batch, not one per event

    # -- reading ---------------------------------------------------------------------------

    def _to_dict(self, row: Any) -> dict[str, Any]:
        m = row._mapping
        preview = m["payload_preview"]
        return {
            "seq": m["id"],
            "ts": m["ts"],
            "conversation": m["conversation"],
            "view": m["view"],
            "server": m["server"],
            "direction": m["direction"],
            "method": m["method"],
            "id": None if m["msg_id"] is None else json.loads(m["msg_id"]),
            "decision": m["decision"],
            "reason": m["reason"],
            "payload_sha256": m["payload_sha256"],
            "payload_size": m["payload_size"],
            "payload": preview,
            "payload_truncated": preview is not None and len(preview) > self.preview_chars,
            "tenant": m["tenant"],
            "user": m["user_id"],
        }

    def query(self, where: AuditFilter | None = None, *, limit: int | None = 1000,
              **fields: Any) -> list[dict[str, Any]]:
        """Committed events, oldest first, matching ``where`` (or an :class:`AuditFilter` of ``fields``).

        ``payload`` is the preview text; see :meth:`payload`.
        """
        stmt = (where or AuditFilter(**fields)).select()
        if limit is not None:
            if limit < 0:
                raise ValueError("limit: must not be negative")
            stmt = stmt.limit(limit)
        with self.engine.connect() as conn:
            return [self._to_dict(row) for row in conn.execute(stmt)]

    def export_jsonl(self, where: AuditFilter | None = None, *, page: int = 1000, **fields: Any) -> Iterator[str]:
        """One JSON object per line (with the newline), every matching event, paged by id."""
        where = where or AuditFilter(**fields)
        while True:
            rows = self.query(where, limit=page)
            for row in rows:
                yield json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n"
            if len(rows) < page:
                return
            where = replace(where, after_id=rows[-1]["seq"])

    def payload(self, sha256: str, seen_by: AuditFilter | None = None) -> Any:
        """The full payload stored under this hash (KeyError if unknown). With ``seen_by``, only a
        payload one of the events it matches carries: a person reads the payloads of their own rows."""
        stmt = select(audit_payloads.c.json).where(audit_payloads.c.sha256 == sha256)
        if seen_by is not None:
            events = seen_by.select().where(audit_events.c.payload_sha256 == sha256).limit(1).subquery()
            stmt = stmt.where(select(events.c.id).exists())
        with self.engine.connect() as conn:
            text = conn.scalar(stmt)
        if text is None:
            raise KeyError(sha256)
        return json.loads(text)
