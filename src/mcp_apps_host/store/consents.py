"""The person's "always allow this tool from this server" answers, kept across restarts."""

from __future__ import annotations

import threading
import time

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Engine

from .schema import consent_remembered


class RememberedConsents:
    """Read once into memory, so :meth:`is_allowed` never touches the database; writes go straight through."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._lock = threading.Lock()
        with engine.connect() as conn:
            rows = conn.execute(select(consent_remembered.c.server, consent_remembered.c.tool)).all()
        self._allowed: set[tuple[str, str]] = {(r.server, r.tool) for r in rows}

    def is_allowed(self, server: str, tool: str) -> bool:
        return (server, tool) in self._allowed

    def remember_allow(self, server: str, tool: str) -> None:
        now = time.time()
        with self._lock, self.engine.begin() as conn:
            key = (consent_remembered.c.server == server) & (consent_remembered.c.tool == tool)
            if conn.execute(update(consent_remembered).where(key).values(ts=now)).rowcount == 0:
                conn.execute(insert(consent_remembered).values(server=server, tool=tool, ts=now))
            self._allowed.add((server, tool))
