"""Durable records, through SQLAlchemy: SQLite by default, any SQLAlchemy URL with --db."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sqlalchemy import JSON, Float, Integer, String, Text, create_engine, event, insert
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class ToolCallRecord(Base):
    """Every tool call the host made, from a person or a view."""

    __tablename__ = "tool_calls"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    ts: Mapped[float] = mapped_column(Float, index=True)
    server: Mapped[str] = mapped_column(String(64))
    tool: Mapped[str] = mapped_column(String(256))
    source: Mapped[str] = mapped_column(String(16))  # person | view
    arguments: Mapped[Any] = mapped_column(JSON)
    outcome: Mapped[str] = mapped_column(String(16))  # ok | tool-error | failed | cancelled
    result: Mapped[Any] = mapped_column(JSON, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    duration_ms: Mapped[int] = mapped_column(Integer)


def default_db_url() -> str:
    path = Path.home() / ".local" / "share" / "mcp-apps-host" / "host.db"
    return f"sqlite:///{path}"


class Store:
    def __init__(self, url: str) -> None:
        if url.startswith("sqlite:///"):
            Path(url.removeprefix("sqlite:///")).expanduser().parent.mkdir(parents=True, exist_ok=True)
        self.engine: Engine = create_engine(url)
        if self.engine.dialect.name == "sqlite":
            @event.listens_for(self.engine, "connect")
            def _sqlite_pragmas(conn: Any, _record: Any) -> None:
                # WAL: readers never block the writer; synchronous=FULL: a committed row survives a crash.
                cur = conn.cursor()
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute("PRAGMA synchronous=FULL")
                cur.close()
        Base.metadata.create_all(self.engine)

    def record_call(self, **row: Any) -> None:
        row.setdefault("ts", time.time())
        with self.engine.begin() as conn:
            conn.execute(insert(ToolCallRecord), [row])
