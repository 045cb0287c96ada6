"""Template pins: the hash a (server, URI) template had when a person first used it or last accepted it."""

from __future__ import annotations

import threading
import time
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from ..values.identity import Identity
from .owners import mine, owner_columns
from .schema import template_pins

_SHOWN = ("server", "uri", "sha256", "size", "first_seen", "accepted_at")


class TemplatePins:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._lock = threading.Lock()

    def bound(self, identity: Identity) -> OwnPins:
        return OwnPins(self, identity)


class OwnPins:
    """One person's pins."""

    def __init__(self, store: TemplatePins, identity: Identity) -> None:
        self.engine = store.engine
        self.identity = identity
        self._lock = store._lock
        self._mine = mine(template_pins, identity)

    def get(self, server: str, uri: str) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(*(template_pins.c[c] for c in _SHOWN))
                               .where(self._mine, template_pins.c.server == server, template_pins.c.uri == uri)).first()
        return dict(row._mapping) if row is not None else None

    def pin_first(self, server: str, uri: str, sha256: str, size: int) -> tuple[dict[str, Any], bool]:
        """The pin for (server, URI), taking this hash if there is none yet; True when this call took it."""
        with self._lock:
            existing = self.get(server, uri)
            if existing is not None:
                return existing, False
            row = {"server": server, "uri": uri, "sha256": sha256, "size": size, "first_seen": time.time(),
                   "accepted_at": None}
            try:
                with self.engine.begin() as conn:
                    conn.execute(insert(template_pins), [{**row, **owner_columns(self.identity)}])
            except IntegrityError:
                # Another process pinned it first: its pin is the one that counts.
                existing = self.get(server, uri)
                if existing is not None:
                    return existing, False
                raise
            return row, True

    def accept(self, server: str, uri: str, sha256: str, size: int) -> None:
        """Pin this hash as accepted by the person."""
        now = time.time()
        with self._lock, self.engine.begin() as conn:
            key = self._mine & (template_pins.c.server == server) & (template_pins.c.uri == uri)
            changed = conn.execute(update(template_pins).where(key).values(sha256=sha256, size=size, accepted_at=now))
            if changed.rowcount == 0:
                conn.execute(insert(template_pins), [{"server": server, "uri": uri, "sha256": sha256, "size": size,
                                                      "first_seen": now, "accepted_at": now,
                                                      **owner_columns(self.identity)}])
