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
queued, whichever of ``record`` and ``record_nowait`` queued them.

Payloads are stored once, keyed by the SHA-256 of their canonical JSON (sorted keys,
no whitespace, UTF-8, no NaN/Infinity); the event row keeps a short preview for the
timeline. All SQL is built with SQLAlchemy Core and runs on PostgreSQL as well; the
only SQLite-specific statements are the two connection pragmas.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import queue
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, Self, get_args

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    insert,
    select,
)
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

__all__ = [
    "DECISIONS",
    "DIRECTIONS",
    "AuditEvent",
    "AuditLog",
    "Decision",
    "Direction",
    "canonical_json",
    "payload_sha256",
]

log = logging.getLogger(__name__)

Direction = Literal["view->host", "host->view", "host->server", "server->host", "model->host"]
Decision = Literal["allowed", "refused", "asked", "consented", "declined"]
DIRECTIONS: Final[frozenset[str]] = frozenset(get_args(Direction))
DECISIONS: Final[frozenset[str]] = frozenset(get_args(Decision))

PREVIEW_CHARS: Final = 500
_MAX_BATCH: Final = 2000

metadata = MetaData()

audit_events = Table(
    "audit_events",
    metadata,
    # 64-bit on PostgreSQL; on SQLite an INTEGER primary key is the 64-bit rowid.
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("ts", Float, nullable=False, index=True),
    Column("conversation", String(128), nullable=True, index=True),
    Column("view", String(128), nullable=True, index=True),
    Column("server", String(128), nullable=True, index=True),
    Column("direction", String(16), nullable=False),
    Column("method", String(256), nullable=True),
    # JSON text, so that id 1 and id "1" stay different.
    Column("msg_id", Text, nullable=True),
    Column("decision", String(16), nullable=True),
    Column("reason", Text, nullable=True),
    Column("payload_sha256", String(64), nullable=True),
    Column("payload_preview", Text, nullable=True),
)

audit_payloads = Table(
    "audit_payloads",
    metadata,
    Column("sha256", String(64), primary_key=True),
    Column("json", Text, nullable=False),
    Column("size", Integer, nullable=False),  # bytes of the UTF-8 canonical JSON
)


def canonical_json(value: Any) -> str:
    """The one text of a JSON value that is hashed and stored.

    Raises ValueError for values JSON cannot carry (NaN, sets, objects).
    """
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"payload: not representable as JSON ({exc})") from exc


def payload_sha256(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def _preview(text: str, limit: int) -> str:
    # A truncated preview is exactly limit + 1 characters and ends with the ellipsis;
    # a preview of limit characters or fewer is the whole payload.
    return text if len(text) <= limit else text[:limit] + "\u2026"


def _opt_str(name: str, value: object, max_len: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        # ValueError, like every other field check: callers catch one type and read the field name.
        raise ValueError(f"{name}: must be a string or None, not {type(value).__name__}")  # noqa: TRY004
    if len(value) > max_len:
        raise ValueError(f"{name}: longer than {max_len} characters")
    return value


@dataclass(frozen=True)
class AuditEvent:
    """One line of the audit trail. Validated on construction.

    ``msg_id`` is the JSON-RPC id as received (any JSON value; 0 and "0" differ).
    ``payload`` is the message or decision detail as JSON-able data; None means none.
    ``decision`` is None for plain traffic; ``refused`` needs a ``reason`` naming the rule.
    """

    direction: Direction
    method: str | None = None
    server: str | None = None
    view: str | None = None
    conversation: str | None = None
    msg_id: Any = None
    decision: Decision | None = None
    reason: str | None = None
    payload: Any = None
    ts: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise ValueError(f"direction: {self.direction!r} is not one of {', '.join(sorted(DIRECTIONS))}")
        if self.decision is not None and self.decision not in DECISIONS:
            raise ValueError(
                f"decision: {self.decision!r} is not one of {', '.join(sorted(DECISIONS))} or None"
            )
        if self.decision == "refused" and not self.reason:
            raise ValueError("reason: required when decision is 'refused' (name the rule)")
        _opt_str("method", self.method, 256)
        _opt_str("server", self.server, 128)
        _opt_str("view", self.view, 128)
        _opt_str("conversation", self.conversation, 128)
        _opt_str("reason", self.reason, 10_000)
        if isinstance(self.ts, bool) or not isinstance(self.ts, (int, float)) or not math.isfinite(self.ts):
            raise ValueError(f"ts: must be a finite number of seconds, not {self.ts!r}")
        if self.msg_id is not None:
            canonical_json(self.msg_id)  # raises for non-JSON ids


@dataclass(frozen=True)
class _Row:
    """An event ready for the writer: serialised in the caller's thread, so the writer only writes."""

    event: dict[str, Any]
    payload: tuple[str, str, int] | None  # (sha256, json, size)


def _prepare(event: AuditEvent, preview_chars: int) -> _Row:
    if not isinstance(event, AuditEvent):
        raise TypeError(f"expected an AuditEvent, got {type(event).__name__}")
    payload: tuple[str, str, int] | None = None
    sha: str | None = None
    preview: str | None = None
    if event.payload is not None:
        text = canonical_json(event.payload)
        raw = text.encode("utf-8")
        sha = hashlib.sha256(raw).hexdigest()
        payload = (sha, text, len(raw))
        preview = _preview(text, preview_chars)
    row = {
        "ts": float(event.ts),
        "conversation": event.conversation,
        "view": event.view,
        "server": event.server,
        "direction": event.direction,
        "method": event.method,
        "msg_id": None if event.msg_id is None else canonical_json(event.msg_id),
        "decision": event.decision,
        "reason": event.reason,
        "payload_sha256": sha,
        "payload_preview": preview,
    }
    return _Row(row, payload)


class _Waiter:
    """Completion of one queued event, for an asyncio caller or a blocking one."""

    __slots__ = ("done", "error", "future", "loop")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop | None = None,
        future: asyncio.Future[None] | None = None,
    ) -> None:
        self.loop = loop
        self.future = future
        self.done: threading.Event | None = None if future is not None else threading.Event()
        self.error: BaseException | None = None


_STOP: Final = object()
_FLUSH: Final = object()


def _settle(futures: list[asyncio.Future[None]], error: BaseException | None) -> None:
    for fut in futures:
        if fut.done():  # the awaiting task was cancelled; the event is written anyway
            continue
        if error is None:
            fut.set_result(None)
        else:
            fut.set_exception(error)


class AuditLog:
    """Durable, ordered audit events with group commit.

    ``engine_or_url``: an Engine (share the host's :class:`~mcp_apps_host.store.db.Store`
    engine) or a database URL. The tables are created if missing.
    """

    def __init__(self, engine_or_url: Engine | str, *, preview_chars: int = PREVIEW_CHARS) -> None:
        if isinstance(engine_or_url, str):
            if engine_or_url.startswith("sqlite:///"):
                Path(engine_or_url.removeprefix("sqlite:///")).expanduser().parent.mkdir(
                    parents=True, exist_ok=True
                )
            self.engine = create_engine(engine_or_url)
            self._owns_engine = True
        else:
            self.engine = engine_or_url
            self._owns_engine = False
        if preview_chars < 1:
            raise ValueError("preview_chars: must be at least 1")
        self.preview_chars = preview_chars
        metadata.create_all(self.engine, tables=[audit_events, audit_payloads])
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()  # makes "check closed + enqueue" atomic against close()
        self._closed = False
        self._known: set[str] = set()  # payload hashes already in the table (bounded below)
        self._failure: BaseException | None = None
        self._ready = threading.Event()
        self._writer = threading.Thread(target=self._run, name="audit-writer", daemon=True)
        self._writer.start()
        self._ready.wait()
        if self._failure is not None:
            raise self._failure

    # -- writing ---------------------------------------------------------------------------

    def _enqueue(self, item: Any) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("the audit log is closed")
            self._queue.put(item)

    async def record(self, event: AuditEvent) -> None:
        """Queue the event and return once it is committed (raises if the commit failed).

        The event is queued when this coroutine starts running, so concurrent callers
        are written in the order their ``record`` calls began. If the awaiting task is
        cancelled, the event is still written.
        """
        row = _prepare(event, self.preview_chars)
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._enqueue((row, _Waiter(loop, fut)))
        await fut

    def record_nowait(self, event: AuditEvent) -> None:
        """Queue the event and return at once; it is written in order with every other event.

        Validation errors are still raised here; a failed commit is only logged.
        """
        self._enqueue((_prepare(event, self.preview_chars), None))

    def record_blocking(self, event: AuditEvent, timeout: float | None = None) -> None:
        """For threads without an event loop: block until the event is committed."""
        waiter = _Waiter()
        self._enqueue((_prepare(event, self.preview_chars), waiter))
        assert waiter.done is not None
        if not waiter.done.wait(timeout):
            raise TimeoutError("the audit event was not committed in time")
        if waiter.error is not None:
            raise waiter.error

    def flush(self, timeout: float | None = None) -> None:
        """Block until everything queued so far is committed (or failed)."""
        done = threading.Event()
        self._enqueue((_FLUSH, done))
        if not done.wait(timeout):
            raise TimeoutError("the audit log did not drain in time")

    async def drain(self) -> None:
        """:meth:`flush` for event-loop code, without blocking the loop."""
        await asyncio.to_thread(self.flush)

    def close(self, timeout: float | None = 30.0) -> None:
        """Write everything queued, then stop the writer. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(_STOP)
        self._writer.join(timeout)
        if self._owns_engine:
            self.engine.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the writer thread -----------------------------------------------------------------

    def _connect(self) -> Connection:
        conn = self.engine.connect()
        if self.engine.dialect.name == "sqlite":
            # Per-connection settings, applied here whatever engine we were handed.
            # WAL is persistent for a file; an in-memory database ignores it.
            conn.exec_driver_sql("PRAGMA busy_timeout=10000")  # share the file with other writers
            conn.exec_driver_sql("PRAGMA journal_mode=WAL")
            conn.exec_driver_sql("PRAGMA synchronous=NORMAL")
            conn.commit()
        return conn

    def _run(self) -> None:
        conn: Connection | None
        try:
            conn = self._connect()
        except BaseException as exc:  # noqa: BLE001 - reported to the constructor
            self._failure = exc
            self._ready.set()
            return
        self._ready.set()
        stopping = False
        try:
            while not stopping:
                batch: list[tuple[_Row, _Waiter | None]] = []
                flushes: list[threading.Event] = []
                item = self._queue.get()
                while True:
                    if item is _STOP:
                        stopping = True
                    elif isinstance(item, tuple) and item[0] is _FLUSH:
                        flushes.append(item[1])
                    else:
                        batch.append(item)
                    if stopping or len(batch) >= _MAX_BATCH:
                        break
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                if batch:
                    error: BaseException | None
                    try:
                        if conn is None:
                            conn = self._connect()
                        error = self._commit(conn, [row for row, _ in batch])
                    except Exception as exc:  # noqa: BLE001 - could not reconnect
                        error = exc
                    if error is not None and conn is not None:
                        # A broken connection (a restarted PostgreSQL, say) is replaced for the next batch.
                        conn.invalidate()
                        conn = None
                    self._release(batch, error)
                for done in flushes:
                    done.set()
        finally:
            if conn is not None:
                conn.close()

    def _commit(self, conn: Connection, rows: list[_Row]) -> BaseException | None:
        # One retry covers a payload inserted by another process between our check and our insert.
        for attempt in (1, 2):
            try:
                with conn.begin():
                    new_payloads = self._new_payloads(conn, rows)
                    if new_payloads:
                        conn.execute(insert(audit_payloads), new_payloads)
                    conn.execute(insert(audit_events), [row.event for row in rows])
                self._remember(p["sha256"] for p in new_payloads)
                return None
            except IntegrityError as exc:
                self._known.clear()
                if attempt == 2:
                    log.error("audit batch of %d events failed: %s", len(rows), exc)
                    return exc
            except Exception as exc:  # noqa: BLE001 - handed to the waiting callers
                log.error("audit batch of %d events failed: %s", len(rows), exc)
                return exc
        return None  # pragma: no cover - the loop always returns

    def _new_payloads(self, conn: Connection, rows: list[_Row]) -> list[dict[str, Any]]:
        wanted: dict[str, dict[str, Any]] = {}
        for row in rows:
            if row.payload is not None:
                sha, text, size = row.payload
                if sha not in self._known and sha not in wanted:
                    wanted[sha] = {"sha256": sha, "json": text, "size": size}
        if not wanted:
            return []
        present: set[str] = set()
        keys = list(wanted)
        for start in range(0, len(keys), 500):  # stay under any driver's bound-parameter limit
            chunk = keys[start : start + 500]
            present.update(
                conn.scalars(select(audit_payloads.c.sha256).where(audit_payloads.c.sha256.in_(chunk)))
            )
        self._remember(present)
        return [p for sha, p in wanted.items() if sha not in present]

    def _remember(self, hashes: Iterable[str]) -> None:
        if len(self._known) > 100_000:  # a cache, not a ledger: the table is the truth
            self._known.clear()
        self._known.update(hashes)

    @staticmethod
    def _release(batch: list[tuple[_Row, _Waiter | None]], error: BaseException | None) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
        for _, waiter in batch:
            if waiter is None:
                continue
            if waiter.future is not None and waiter.loop is not None:
                by_loop.setdefault(waiter.loop, []).append(waiter.future)
            elif waiter.done is not None:
                waiter.error = error
                waiter.done.set()
        for loop, futures in by_loop.items():
            try:
                # One wake-up per loop per batch, not one per event.
                loop.call_soon_threadsafe(_settle, futures, error)
            except RuntimeError:
                pass  # that loop is closed; nobody is waiting any more

    # -- reading ---------------------------------------------------------------------------

    def _select(
        self,
        *,
        view: str | None,
        server: str | None,
        conversation: str | None,
        direction: str | None,
        decision: str | None,
        method: str | None,
        since: float | None,
        until: float | None,
        after_id: int | None,
    ) -> Any:
        if direction is not None and direction not in DIRECTIONS:
            raise ValueError(f"direction: {direction!r} is not one of {', '.join(sorted(DIRECTIONS))}")
        if decision is not None and decision not in DECISIONS:
            raise ValueError(f"decision: {decision!r} is not one of {', '.join(sorted(DECISIONS))}")
        e = audit_events
        stmt = select(e)
        for column, value in (
            (e.c.view, view),
            (e.c.server, server),
            (e.c.conversation, conversation),
            (e.c.direction, direction),
            (e.c.decision, decision),
            (e.c.method, method),
        ):
            if value is not None:
                stmt = stmt.where(column == value)
        if since is not None:
            stmt = stmt.where(e.c.ts >= since)
        if until is not None:
            stmt = stmt.where(e.c.ts < until)
        if after_id is not None:
            stmt = stmt.where(e.c.id > after_id)
        return stmt.order_by(e.c.id)

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
            "payload": preview,
            "payload_truncated": preview is not None and len(preview) > self.preview_chars,
        }

    def query(
        self,
        view: str | None = None,
        server: str | None = None,
        conversation: str | None = None,
        direction: str | None = None,
        decision: str | None = None,
        method: str | None = None,
        since: float | None = None,
        *,
        until: float | None = None,
        after_id: int | None = None,
        limit: int | None = 1000,
    ) -> list[dict[str, Any]]:
        """Committed events, oldest first. ``payload`` is the preview text; see :meth:`payload`.

        ``since``/``until`` are epoch seconds (``since`` inclusive); ``after_id`` pages
        on the ``seq`` of the last event seen.
        """
        stmt = self._select(
            view=view,
            server=server,
            conversation=conversation,
            direction=direction,
            decision=decision,
            method=method,
            since=since,
            until=until,
            after_id=after_id,
        )
        if limit is not None:
            if limit < 0:
                raise ValueError("limit: must not be negative")
            stmt = stmt.limit(limit)
        with self.engine.connect() as conn:
            return [self._to_dict(row) for row in conn.execute(stmt)]

    def export_jsonl(
        self,
        view: str | None = None,
        server: str | None = None,
        conversation: str | None = None,
        direction: str | None = None,
        decision: str | None = None,
        method: str | None = None,
        since: float | None = None,
        *,
        until: float | None = None,
        after_id: int | None = None,
        page: int = 1000,
    ) -> Iterator[str]:
        """One JSON object per line (with the newline), every matching event, paged by id."""
        last = after_id
        while True:
            rows = self.query(
                view,
                server,
                conversation,
                direction,
                decision,
                method,
                since,
                until=until,
                after_id=last,
                limit=page,
            )
            for row in rows:
                yield json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n"
            if len(rows) < page:
                return
            last = rows[-1]["seq"]

    def payload(self, sha256: str) -> Any:
        """The full payload stored under this hash (KeyError if unknown)."""
        with self.engine.connect() as conn:
            text = conn.scalar(select(audit_payloads.c.json).where(audit_payloads.c.sha256 == sha256))
        if text is None:
            raise KeyError(sha256)
        return json.loads(text)
