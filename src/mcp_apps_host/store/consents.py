"""The person's "always allow this tool from this server" answers, kept across restarts."""

from __future__ import annotations

import threading
import time

from sqlalchemy import delete, insert, select, update
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

    def forget(self, server: str, tool: str | None = None) -> None:
        """Withdraw one remembered tool, or every one of a server."""
        with self._lock, self.engine.begin() as conn:
            cond = consent_remembered.c.server == server
            if tool is not None:
                cond = cond & (consent_remembered.c.tool == tool)
            conn.execute(delete(consent_remembered).where(cond))
            self._allowed = {
                (s, t) for s, t in self._allowed if not (s == server and (tool is None or t == tool))
            }

    def entries(self) -> list[tuple[str, str]]:
        return sorted(self._allowed)
