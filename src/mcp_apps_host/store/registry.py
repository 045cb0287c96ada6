"""The server registry's rows: each server an admin added, with the body they gave, by name.

A write returns what was there before, for the audit trail's before → after. Two admins writing the
same name at once: the row lock of the read (`FOR UPDATE` on PostgreSQL, SQLite's one writer) makes the
before each of them records the one their write replaced; two adding the same new name, the second's insert
fails on the key and is made again as a change.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from .schema import registry_servers


@dataclass(frozen=True)
class StoredServer:
    name: str
    tenant: str
    body: dict[str, Any]
    updated: float
    updated_by: str


def _row(row: Any) -> StoredServer:
    return StoredServer(row.name, row.tenant, json.loads(row.body), row.updated, row.updated_by)


class ServerRegistry:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def all(self) -> list[StoredServer]:
        with self.engine.connect() as conn:
            return [_row(r) for r in conn.execute(select(registry_servers).order_by(registry_servers.c.name))]

    def get(self, name: str) -> StoredServer | None:
        with self.engine.connect() as conn:
            return self._get(conn, name)

    @staticmethod
    def _get(conn: Connection, name: str, lock: bool = False) -> StoredServer | None:
        stmt = select(registry_servers).where(registry_servers.c.name == name)
        row = conn.execute(stmt.with_for_update() if lock else stmt).first()
        return _row(row) if row is not None else None

    def put(self, name: str, tenant: str, body: dict[str, Any], by: str) -> StoredServer | None:
        """Add or replace ``name``; what was there before (None: it is new)."""
        values = {"tenant": tenant, "body": json.dumps(body, sort_keys=True), "updated": time.time(),
                  "updated_by": by}
        try:
            return self._put(name, values)
        except IntegrityError:
            # A new name written twice at once: no row to lock, both insert, one wins. The other's write
            # replaces it, as if it had come just after.
            return self._put(name, values)

    def _put(self, name: str, values: dict[str, Any]) -> StoredServer | None:
        with self.engine.begin() as conn:
            before = self._get(conn, name, lock=True)
            if before is None:
                conn.execute(insert(registry_servers).values(name=name, **values))
            else:
                conn.execute(update(registry_servers).where(registry_servers.c.name == name).values(**values))
        return before

    def delete(self, name: str) -> StoredServer | None:
        """Remove ``name``; what was there (None: nothing was)."""
        with self.engine.begin() as conn:
            before = self._get(conn, name, lock=True)
            if before is not None:
                conn.execute(delete(registry_servers).where(registry_servers.c.name == name))
        return before
