"""The JSON value a view asks the host to keep (`mcp-apps-host/state`), per person and view instance: a
reload, remount or restart of the same instance reads it back; another person or instance never does."""

from __future__ import annotations

import json
import time

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from ..values.identity import Identity
from ..values.json import JsonValue
from .owners import mine, owner_columns
from .schema import view_host_states

INSTANCE_MAX = 64  # the view instance ids the host makes are 32 hex characters


class ViewStateTooLarge(ValueError):
    """The value is larger than the host keeps for one view (settings.Limits.max_view_state_bytes)."""


def state_size(state: JsonValue) -> int:
    """Bytes of ``state`` as compact UTF-8 JSON: what the limit counts."""
    return len(json.dumps(state, separators=(",", ":"), ensure_ascii=False).encode())


class ViewHostStates:
    """Synchronous repository; call it from a worker thread in async code."""

    def __init__(self, engine: Engine, max_bytes: int) -> None:
        self.engine = engine
        self.max_bytes = max_bytes

    def bound(self, identity: Identity) -> OwnViewHostStates:
        return OwnViewHostStates(self.engine, identity, self.max_bytes)


class OwnViewHostStates:
    """One person's kept view states: nobody else's are read or written through it."""

    def __init__(self, engine: Engine, identity: Identity, max_bytes: int) -> None:
        self.engine = engine
        self.identity = identity
        self.max_bytes = max_bytes
        self._mine = mine(view_host_states, identity)

    def get(self, instance: str) -> JsonValue:
        """The value last kept for this view instance, or None when there is none."""
        with self.engine.connect() as db:
            row = db.execute(select(view_host_states.c.state)
                             .where(self._mine, view_host_states.c.instance == instance)).first()
        return None if row is None else row.state

    def set(self, instance: str, state: JsonValue, conversation: str | None = None) -> None:
        """Keep ``state`` (None forgets it); refused, naming the limit, when too large (the old value stays)."""
        if not instance or len(instance) > INSTANCE_MAX:
            raise ValueError(f"view state needs the view's instance id (at most {INSTANCE_MAX} characters)")
        size = state_size(state)
        if size > self.max_bytes:
            raise ViewStateTooLarge(
                f"view state of {size} bytes is larger than max_view_state_bytes ({self.max_bytes})")
        try:
            self._replace(instance, state, conversation)
        except IntegrityError:  # another worker kept one for it between our delete and insert: ours is later
            self._replace(instance, state, conversation)

    def _replace(self, instance: str, state: JsonValue, conversation: str | None) -> None:
        with self.engine.begin() as db:
            db.execute(delete(view_host_states).where(self._mine, view_host_states.c.instance == instance))
            if state is not None:
                db.execute(insert(view_host_states).values(
                    instance=instance, conversation=conversation, state=state, updated=time.time(),
                    **owner_columns(self.identity)))
