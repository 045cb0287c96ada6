"""Rows that belong to a person: the clause that keeps a session to its own, and the columns to write."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Table, and_

from ..values.identity import Identity


def mine(table: Table, identity: Identity) -> ColumnElement[bool]:
    return and_(table.c.tenant == identity.tenant, table.c.user_id == identity.user)


def owner_columns(identity: Identity) -> dict[str, Any]:
    return {"tenant": identity.tenant, "user_id": identity.user}
