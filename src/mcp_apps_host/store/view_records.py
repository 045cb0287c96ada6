"""Mounted views on record: what the sandbox origin needs to serve a view's proxy page, on any worker."""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Engine

from ..values.identity import Identity
from .owners import owner_columns
from .schema import view_instances


@dataclass(frozen=True)
class ViewRecord:
    handle: str
    identity: Identity
    conversation: str | None
    server: str
    tool: str
    template_sha256: str
    origin: str
    csp_header: str
    closed: bool = False


class ViewInstances:
    """Synchronous repository; call it from a worker thread in async code."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def add(self, view: ViewRecord) -> None:
        with self.engine.begin() as db:
            db.execute(insert(view_instances).values(
                handle=view.handle, conversation=view.conversation, server=view.server, tool=view.tool,
                template_sha256=view.template_sha256, origin=view.origin, csp_header=view.csp_header,
                created=time.time(), **owner_columns(view.identity)))

    def get(self, handle: str) -> ViewRecord | None:
        with self.engine.connect() as db:
            row = db.execute(select(view_instances).where(view_instances.c.handle == handle)).first()
        if row is None:
            return None
        return ViewRecord(row.handle, Identity(row.user_id, row.tenant), row.conversation, row.server, row.tool,
                          row.template_sha256, row.origin, row.csp_header, row.closed is not None)

    def close(self, handle: str) -> None:
        with self.engine.begin() as db:
            db.execute(update(view_instances).where(view_instances.c.handle == handle).values(closed=time.time()))
