"""The person's "always allow this tool from this server" answers, kept across restarts."""

from __future__ import annotations

import threading
import time

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Engine

from ..values.identity import Identity
from .owners import mine, owner_columns
from .schema import consent_remembered


class RememberedConsents:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def bound(self, identity: Identity) -> OwnConsents:
        return OwnConsents(self.engine, identity)


class OwnConsents:
    """One person's answers, read once into memory (so a decision never touches the database);
    writes go straight through. Another session's new answer is seen from its next start."""

    def __init__(self, engine: Engine, identity: Identity) -> None:
        self.engine = engine
        self.identity = identity
        self._mine = mine(consent_remembered, identity)
        self._lock = threading.Lock()
        self._loaded: set[tuple[str, str]] | None = None

    @property
    def _allowed(self) -> set[tuple[str, str]]:
        if self._loaded is None:
            with self.engine.connect() as conn:
                rows = conn.execute(select(consent_remembered.c.server, consent_remembered.c.tool)
                                    .where(self._mine)).all()
            self._loaded = {(r.server, r.tool) for r in rows}
        return self._loaded

    def is_allowed(self, server: str, tool: str) -> bool:
        return (server, tool) in self._allowed

    def remember_allow(self, server: str, tool: str) -> None:
        now = time.time()
        with self._lock, self.engine.begin() as conn:
            key = self._mine & (consent_remembered.c.server == server) & (consent_remembered.c.tool == tool)
            if conn.execute(update(consent_remembered).where(key).values(ts=now)).rowcount == 0:
                conn.execute(insert(consent_remembered).values(server=server, tool=tool, ts=now,
                                                               **owner_columns(self.identity)))
            self._allowed.add((server, tool))
