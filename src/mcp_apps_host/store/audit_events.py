"""One line of the audit trail, and how a batch of them is written (payloads stored once).

Payloads are keyed by the SHA-256 of their canonical JSON (sorted keys, no whitespace,
UTF-8, no NaN/Infinity); the event row keeps a short preview for the timeline.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final, get_args

from sqlalchemy import insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from ..values.decisions import Decision, Direction
from ..values.identity import CONSOLE_USER, DEFAULT_TENANT
from .schema import audit_events, audit_payloads

DIRECTIONS: Final[frozenset[str]] = frozenset(get_args(Direction))
DECISIONS: Final[frozenset[str]] = frozenset(get_args(Decision))

PREVIEW_CHARS: Final = 500


def canonical_json(value: Any) -> str:
    """The one text of a JSON value that is hashed and stored.

    Raises ValueError for values JSON cannot carry (NaN, sets, objects).
    """
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"payload: not representable as JSON ({exc})") from exc


def _id_json(msg_id: Any) -> str:
    """The canonical JSON of a message id. Most are integers, written without the encoder: a view's call
    carries its id in four events."""
    return str(msg_id) if type(msg_id) is int else canonical_json(msg_id)


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
        raise ValueError(f"{name}: must be a string or None, not {type(value).__name__}")
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
    tenant: str = DEFAULT_TENANT  # whose session it happened in
    user_id: str = CONSOLE_USER

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
        _opt_str("tenant", self.tenant, 128)
        _opt_str("user_id", self.user_id, 256)
        _opt_str("reason", self.reason, 10_000)
        if isinstance(self.ts, bool) or not isinstance(self.ts, (int, float)) or not math.isfinite(self.ts):
            raise ValueError(f"ts: must be a finite number of seconds, not {self.ts!r}")
        if self.msg_id is not None:
            _id_json(self.msg_id)  # raises for non-JSON ids


@dataclass(frozen=True)
class Row:
    """An event ready for the writer: serialised in the caller's thread, so the writer only writes."""

    event: dict[str, Any]
    payload: tuple[str, str, int] | None  # (sha256, json, size)


def to_row(event: AuditEvent, preview_chars: int) -> Row:
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
        "msg_id": None if event.msg_id is None else _id_json(event.msg_id),
        "decision": event.decision,
        "reason": event.reason,
        "payload_sha256": sha,
        "payload_preview": preview,
        "tenant": event.tenant,
        "user_id": event.user_id,
    }
    return Row(row, payload)




# Databases whose insert can skip a payload already stored (a payload is stored once, by hash): a commit
# then needs no query for which are there, one statement fewer in the commit a view's reply waits for.
_SKIPS_PRESENT: Final = frozenset({"sqlite", "postgresql"})


# Built once, not at each commit: building and keying a statement costs more than SQLite's own insert.
_INSERT_PAYLOADS: Final = {
    "sqlite": sqlite.insert(audit_payloads).on_conflict_do_nothing(index_elements=["sha256"]),
    "postgresql": postgresql.insert(audit_payloads).on_conflict_do_nothing(index_elements=["sha256"]),
}
_INSERT_EVENTS: Final = insert(audit_events)


def _insert_payloads(conn: Connection) -> Any:
    return _INSERT_PAYLOADS.get(conn.dialect.name, insert(audit_payloads))


class BatchWriter:
    """Commits a batch of rows in one transaction, each payload stored once."""

    def __init__(self) -> None:
        self._known: set[str] = set()  # payload hashes already in the table (bounded below)

    def commit(self, conn: Connection, rows: list[Row]) -> BaseException | None:
        # One retry covers a payload inserted by another process between our check and our insert.
        for attempt in (1, 2):
            try:
                with conn.begin():
                    new_payloads = self._new_payloads(conn, rows)
                    if new_payloads:
                        conn.execute(_insert_payloads(conn), new_payloads)
                    conn.execute(_INSERT_EVENTS, [row.event for row in rows])
                self._remember(p["sha256"] for p in new_payloads)
                return None
            except IntegrityError as exc:
                self._known.clear()
                if attempt == 2:
                    return exc
            except Exception as exc:  # handed to the writer, which logs it (once per outage) and tells the callers
                return exc
        return None  # pragma: no cover - the loop always returns

    def _new_payloads(self, conn: Connection, rows: list[Row]) -> list[dict[str, Any]]:
        wanted: dict[str, dict[str, Any]] = {}
        for row in rows:
            if row.payload is not None:
                sha, text, size = row.payload
                if sha not in self._known and sha not in wanted:
                    wanted[sha] = {"sha256": sha, "json": text, "size": size}
        if not wanted or conn.dialect.name in _SKIPS_PRESENT:
            return list(wanted.values())  # those already stored are skipped by the insert itself
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
