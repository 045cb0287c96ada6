"""Conversations as an ordered log of items, and the templates their views need to render again.

An item is one thing the conversation shows: a person's message, the model's
answer, a tool call (with its input, result and view), a message a view sent.
A tool call is written when it starts and updated when it ends, so a restart
in between shows it as interrupted rather than losing it.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import JSON, Float, ForeignKey, Integer, String, Text, delete, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Mapped, mapped_column

from .db import Base

# "history" items are what the model saw (not shown); the others are what the page shows.
ITEM_KINDS = ("user", "assistant", "tool-call", "view-message", "notice", "history")


class ConversationRow(Base):
    __tablename__ = "conversations"
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    created: Mapped[float] = mapped_column(Float)
    updated: Mapped[float] = mapped_column(Float, index=True)


class ItemRow(Base):
    __tablename__ = "conversation_items"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    conversation: Mapped[str] = mapped_column(String(36), ForeignKey("conversations.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    ts: Mapped[float] = mapped_column(Float)
    data: Mapped[Any] = mapped_column(JSON)


class TemplateRow(Base):
    """Template HTML by content hash: a stored view renders again from exactly what it ran."""

    __tablename__ = "templates"
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    server: Mapped[str] = mapped_column(String(64))
    uri: Mapped[str] = mapped_column(Text)
    html: Mapped[str] = mapped_column(Text)
    meta: Mapped[Any] = mapped_column(JSON)  # csp, permissions, domain, prefersBorder
    first_seen: Mapped[float] = mapped_column(Float)


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


class Conversations:
    """Synchronous repository; call it from a worker thread in async code."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        Base.metadata.create_all(engine)

    def create(self, title: str = "New conversation") -> Conversation:
        now = time.time()
        conv = Conversation(str(uuid.uuid4()), title[:200], now, now)
        with self.engine.begin() as db:
            db.execute(ConversationRow.__table__.insert().values(
                id=conv.id, title=conv.title, created=now, updated=now))
        return conv

    def get(self, conversation_id: str) -> Conversation | None:
        with self.engine.connect() as db:
            row = db.execute(select(ConversationRow.__table__).where(ConversationRow.id == conversation_id)).first()
        return Conversation(row.id, row.title, row.created, row.updated) if row else None

    def list(self, limit: int = 200) -> list[Conversation]:
        table = ConversationRow.__table__
        with self.engine.connect() as db:
            rows = db.execute(select(table).order_by(table.c.updated.desc()).limit(limit)).all()
        return [Conversation(r.id, r.title, r.created, r.updated) for r in rows]

    def rename(self, conversation_id: str, title: str) -> bool:
        title = " ".join(title.split())[:200]
        if not title:
            raise ValueError("a conversation title cannot be empty")
        with self.engine.begin() as db:
            done = db.execute(update(ConversationRow).where(ConversationRow.id == conversation_id).values(title=title))
        return done.rowcount > 0

    def delete(self, conversation_id: str) -> bool:
        with self.engine.begin() as db:
            db.execute(delete(ItemRow).where(ItemRow.conversation == conversation_id))
            done = db.execute(delete(ConversationRow).where(ConversationRow.id == conversation_id))
        return done.rowcount > 0

    def append(self, conversation_id: str, kind: str, data: dict[str, Any]) -> int:
        if kind not in ITEM_KINDS:
            raise ValueError(f"unknown item kind {kind!r}")
        now = time.time()
        with self.engine.begin() as db:
            item_id = db.execute(ItemRow.__table__.insert().values(
                conversation=conversation_id, kind=kind, ts=now, data=data)).inserted_primary_key[0]
            db.execute(update(ConversationRow).where(ConversationRow.id == conversation_id).values(updated=now))
        return int(item_id)

    def update_item(self, item_id: int, data: dict[str, Any]) -> None:
        with self.engine.begin() as db:
            db.execute(update(ItemRow).where(ItemRow.id == item_id).values(data=data))

    def items(self, conversation_id: str) -> list[Item]:
        table = ItemRow.__table__
        with self.engine.connect() as db:
            rows = db.execute(select(table).where(table.c.conversation == conversation_id).order_by(table.c.id)).all()
        return [Item(r.id, r.kind, r.ts, r.data) for r in rows]

    # ---- templates --------------------------------------------------------------------------

    def save_template(self, sha256: str, server: str, uri: str, html: str, meta: dict[str, Any]) -> None:
        with self.engine.begin() as db:
            if db.execute(select(TemplateRow.sha256).where(TemplateRow.sha256 == sha256)).first() is None:
                db.execute(TemplateRow.__table__.insert().values(
                    sha256=sha256, server=server, uri=uri, html=html, meta=meta, first_seen=time.time()))

    def load_template(self, sha256: str) -> dict[str, Any] | None:
        with self.engine.connect() as db:
            row = db.execute(select(TemplateRow.__table__).where(TemplateRow.sha256 == sha256)).first()
        if row is None:
            return None
        return {"sha256": row.sha256, "server": row.server, "uri": row.uri, "html": row.html, "meta": row.meta}
