"""Views pinned to the side panel, per person: each stays live across turns and conversations until
unpinned, and comes back after a reload or a restart."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Engine

from ..values.identity import Identity
from .owners import mine, owner_columns
from .schema import view_pins

MAX_PINS = 20  # a side panel, not a second conversation


@dataclass(frozen=True)
class ViewPin:
    instance: str  # the view instance id its tool-call item carries
    conversation: str
    call: dict[str, Any]  # the tool-call item: server, tool, definition, arguments, result, view (template hash)
    pinned_at: float


class ViewPins:
    """Synchronous repository; call it from a worker thread in async code."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def bound(self, identity: Identity) -> OwnViewPins:
        return OwnViewPins(self.engine, identity)


class OwnViewPins:
    """One person's pins: nobody else's are read, written or removed through it."""

    def __init__(self, engine: Engine, identity: Identity) -> None:
        self.engine = engine
        self.identity = identity
        self._mine = mine(view_pins, identity)

    def list(self) -> list[ViewPin]:
        """Oldest pin first."""
        with self.engine.connect() as db:
            rows = db.execute(select(view_pins).where(self._mine).order_by(view_pins.c.pinned_at)).all()
        return [ViewPin(r.instance, r.conversation, dict(r.call), r.pinned_at) for r in rows]

    def pin(self, instance: str, conversation: str, call: dict[str, Any]) -> ViewPin:
        if not instance or len(instance) > 64:
            raise ValueError("a pinned view needs its instance id (at most 64 characters)")
        pin = ViewPin(instance, conversation, dict(call), time.time())
        with self.engine.begin() as db:
            db.execute(delete(view_pins).where(self._mine, view_pins.c.instance == instance))
            count = len(db.execute(select(view_pins.c.instance).where(self._mine)).all())
            if count >= MAX_PINS:
                raise ValueError(f"at most {MAX_PINS} views can be pinned; unpin one first")
            db.execute(insert(view_pins).values(instance=instance, conversation=conversation, call=pin.call,
                                                pinned_at=pin.pinned_at, **owner_columns(self.identity)))
        return pin

    def unpin(self, instance: str) -> bool:
        with self.engine.begin() as db:
            return db.execute(delete(view_pins).where(self._mine, view_pins.c.instance == instance)).rowcount > 0
