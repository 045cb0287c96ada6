"""The database, through SQLAlchemy: SQLite by default, any SQLAlchemy URL with --db."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase


class Base(DeclarativeBase):
    pass


def default_db_url() -> str:
    path = Path.home() / ".local" / "share" / "mcp-apps-host" / "host.db"
    return f"sqlite:///{path}"


def open_engine(url: str) -> Engine:
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url)
    if engine.dialect.name == "sqlite":
        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(conn: Any, _record: Any) -> None:
            # WAL: readers never block the writer; synchronous=NORMAL: a committed row survives the
            # host being killed (not a power cut, which would cost an fsync per commit);
            # busy_timeout: the audit writer and the conversation writer take turns instead of failing.
            cur = conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=10000")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()
    return engine


class Store:
    """Everything the host keeps: conversations (with their templates) live here."""

    def __init__(self, url: str) -> None:
        from .conversations import Conversations

        self.url = url
        self.engine = open_engine(url)
        self.conversations = Conversations(self.engine)
