"""Conversations as an ordered log of items, and the templates their views need to render again.

An item is one thing the conversation shows: a person's message, the model's
answer, a tool call (with its input, result and view), a message a view sent.
A tool call is written when it starts and updated when it ends, so a restart
in between shows it as interrupted rather than losing it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, delete, insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from ..values.identity import Identity
from .owners import mine, owner_columns
from .schema import conversation_items, conversations, templates, view_host_states, view_states

# "history" items are what the model saw (not shown); the others are what the page shows.
ITEM_KINDS = ("user", "assistant", "tool-call", "view-message", "notice", "history")


@dataclass(frozen=True)
class Conversation:
    id: str
    title: str
    created: float
    updated: float


@dataclass(frozen=True)
class Item:
    id: int
    kind: str
    ts: float
    data: dict[str, Any]


# Built once: a statement given its values with `.values(...)` is built, keyed and looked up again on every
# call (about 0.15 ms each on SQLite), and an item is written for every call a view makes. A batch of items
# goes in one statement, their ids back in the order given (one statement each cost an item more than its row).
_APPEND_ITEMS = insert(conversation_items).returning(conversation_items.c.id, sort_by_parameter_order=True)
_TOUCH = update(conversations).where(conversations.c.id == bindparam("conversation_id")).values(
    updated=bindparam("now"))
_UPDATE_ITEM = update(conversation_items).where(conversation_items.c.id == bindparam("item_id")).values(
    data=bindparam("data"))


# An item to append: the conversation (one the caller has opened through `Conversations.bound`), its kind, its data.
NewItem = tuple[str, str, dict[str, Any]]


def _conversation(row: Any) -> Conversation:
    return Conversation(row.id, row.title, row.created, row.updated)


class Conversations:
    """Synchronous repository; call it from a worker thread in async code. The conversations
    themselves are reached through :meth:`bound`, which keeps a person to their own."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def bound(self, identity: Identity) -> OwnConversations:
        return OwnConversations(self, identity)

    def append(self, conversation_id: str, kind: str, data: dict[str, Any]) -> int:
        """An item of a conversation the caller has already opened through :meth:`bound`."""
        return self.append_many([(conversation_id, kind, data)])[0]

    def append_many(self, items: Sequence[NewItem]) -> list[int]:
        """Items of conversations the callers have opened, in one transaction; their ids, in order."""
        for _, kind, _ in items:
            if kind not in ITEM_KINDS:
                raise ValueError(f"unknown item kind {kind!r}")
        now = time.time()
        with self.engine.begin() as db:
            rows = db.execute(_APPEND_ITEMS, [{"conversation": conversation_id, "kind": kind, "ts": now, "data": data}
                                              for conversation_id, kind, data in items])
            ids = [int(row.id) for row in rows]
            touched = dict.fromkeys(conversation_id for conversation_id, _, _ in items)
            db.execute(_TOUCH, [{"conversation_id": conversation_id, "now": now} for conversation_id in touched])
        return ids

    def update_items(self, changes: Sequence[tuple[int, dict[str, Any]]]) -> None:
        """Replace the data of items (by row id), in one transaction."""
        with self.engine.begin() as db:
            db.execute(_UPDATE_ITEM, [{"item_id": item_id, "data": data} for item_id, data in changes])

    def items(self, conversation_id: str) -> list[Item]:
        t = conversation_items
        with self.engine.connect() as db:
            rows = db.execute(select(t).where(t.c.conversation == conversation_id).order_by(t.c.id)).all()
        return [Item(r.id, r.kind, r.ts, r.data) for r in rows]

    # ---- view state ---------------------------------------------------------------------------

    def save_view_state(self, instance: str, conversation_id: str, state: dict[str, Any]) -> None:
        """Keep the state a view instance last reported (one row per instance, replaced each time)."""
        with self.engine.begin() as db:
            done = db.execute(update(view_states).where(view_states.c.instance == instance).values(
                state=state, updated=time.time()))
            if done.rowcount == 0:
                db.execute(insert(view_states).values(instance=instance, conversation=conversation_id, state=state,
                                                      updated=time.time()))

    def load_view_state(self, instance: str) -> dict[str, Any] | None:
        with self.engine.connect() as db:
            row = db.execute(select(view_states.c.state).where(view_states.c.instance == instance)).first()
        return dict(row.state) if row is not None and isinstance(row.state, dict) and row.state else None

    def save_view_heights(self, conversation_id: str, heights: dict[str, int]) -> None:
        """Keep the height each view instance's frame last had (a row without state until it reports one)."""
        with self.engine.begin() as db:
            for instance, height in heights.items():
                done = db.execute(update(view_states).where(view_states.c.instance == instance).values(height=height))
                if done.rowcount == 0:
                    db.execute(insert(view_states).values(instance=instance, conversation=conversation_id, state={},
                                                          updated=time.time(), height=height))

    def view_heights(self, conversation_id: str) -> dict[str, int]:
        """The last height of each view of the conversation that has one, by view instance."""
        t = view_states
        with self.engine.connect() as db:
            rows = db.execute(select(t.c.instance, t.c.height)
                              .where(t.c.conversation == conversation_id, t.c.height.is_not(None))).all()
        return {r.instance: int(r.height) for r in rows}

    # ---- templates --------------------------------------------------------------------------

    def save_template(self, sha256: str, server: str, uri: str, html: str, meta: dict[str, Any]) -> None:
        try:
            with self.engine.begin() as db:
                if db.execute(select(templates.c.sha256).where(templates.c.sha256 == sha256)).first() is None:
                    db.execute(insert(templates).values(
                        sha256=sha256, server=server, uri=uri, html=html, meta=meta, first_seen=time.time()))
        except IntegrityError:
            pass  # another worker or tab stored the same template (by its hash) at the same moment

    def load_template(self, sha256: str) -> dict[str, Any] | None:
        with self.engine.connect() as db:
            row = db.execute(select(templates).where(templates.c.sha256 == sha256)).first()
        if row is None:
            return None
        return {"sha256": row.sha256, "server": row.server, "uri": row.uri, "html": row.html, "meta": row.meta}


class OwnConversations:
    """One person's conversations: every read and write is limited to their tenant and user."""

    def __init__(self, repo: Conversations, identity: Identity) -> None:
        self.repo = repo
        self.identity = identity
        self._mine = mine(conversations, identity)

    def create(self, title: str = "New conversation") -> Conversation:
        now = time.time()
        conv = Conversation(str(uuid.uuid4()), title[:200], now, now)
        with self.repo.engine.begin() as db:
            db.execute(insert(conversations).values(id=conv.id, title=conv.title, created=now, updated=now,
                                                    **owner_columns(self.identity)))
        return conv

    def get(self, conversation_id: str) -> Conversation | None:
        with self.repo.engine.connect() as db:
            row = db.execute(select(conversations).where(conversations.c.id == conversation_id, self._mine)).first()
        return _conversation(row) if row else None

    def recent(self, limit: int = 200) -> list[Conversation]:
        """The newest conversations first."""
        with self.repo.engine.connect() as db:
            rows = db.execute(select(conversations).where(self._mine)
                              .order_by(conversations.c.updated.desc()).limit(limit)).all()
        return [_conversation(r) for r in rows]

    def rename(self, conversation_id: str, title: str) -> bool:
        title = " ".join(title.split())[:200]
        if not title:
            raise ValueError("a conversation title cannot be empty")
        with self.repo.engine.begin() as db:
            done = db.execute(update(conversations).where(conversations.c.id == conversation_id, self._mine)
                              .values(title=title))
        return done.rowcount > 0

    def delete(self, conversation_id: str) -> bool:
        with self.repo.engine.begin() as db:
            if db.execute(select(conversations.c.id).where(conversations.c.id == conversation_id,
                                                           self._mine)).first() is None:
                return False
            db.execute(delete(conversation_items).where(conversation_items.c.conversation == conversation_id))
            db.execute(delete(view_states).where(view_states.c.conversation == conversation_id))
            db.execute(delete(view_host_states).where(view_host_states.c.conversation == conversation_id,
                                                      mine(view_host_states, self.identity)))
            db.execute(delete(conversations).where(conversations.c.id == conversation_id))
        return True

    def items(self, conversation_id: str) -> list[Item]:
        """The items of one of this person's conversations (none for anyone else's)."""
        return self.repo.items(conversation_id) if self.get(conversation_id) is not None else []

    def append(self, conversation_id: str, kind: str, data: dict[str, Any]) -> int:
        return self.repo.append(conversation_id, kind, data)

    def update_items(self, changes: Sequence[tuple[int, dict[str, Any]]]) -> None:
        self.repo.update_items(changes)

    def item(self, conversation_id: str, item_id: int) -> Item | None:
        """One item of one of this person's conversations."""
        if self.get(conversation_id) is None:
            return None
        t = conversation_items
        with self.repo.engine.connect() as db:
            row = db.execute(select(t).where(t.c.id == item_id, t.c.conversation == conversation_id)).first()
        return Item(row.id, row.kind, row.ts, row.data) if row else None

    def save_template(self, sha256: str, server: str, uri: str, html: str, meta: dict[str, Any]) -> None:
        self.repo.save_template(sha256, server, uri, html, meta)

    def save_view_state(self, instance: str, conversation_id: str, state: dict[str, Any]) -> None:
        self.repo.save_view_state(instance, conversation_id, state)

    def save_view_heights(self, conversation_id: str, heights: dict[str, int]) -> None:
        self.repo.save_view_heights(conversation_id, heights)

    def view_heights(self, conversation_id: str) -> dict[str, int]:
        """Of one of this person's conversations only."""
        return self.repo.view_heights(conversation_id) if self.get(conversation_id) is not None else {}

    def load_view_state(self, instance: str) -> dict[str, Any] | None:
        """The state a view of one of this person's conversations last reported."""
        with self.repo.engine.connect() as db:
            row = db.execute(select(view_states.c.state).select_from(
                view_states.join(conversations, view_states.c.conversation == conversations.c.id))
                .where(view_states.c.instance == instance, self._mine)).first()
        return dict(row.state) if row is not None and isinstance(row.state, dict) and row.state else None

    def load_template(self, sha256: str) -> dict[str, Any] | None:
        return self.repo.load_template(sha256)
