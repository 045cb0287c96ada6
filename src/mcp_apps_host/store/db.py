"""The one place that opens a database: an engine, its connection settings, the schema migrated.

Any SQLAlchemy URL works (SQLite by default). The schema is `schema.py`, brought up to
date with Alembic on every open; a database made before migrations existed is adopted
as the first revision.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, event, inspect, text
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import SQLAlchemyError

from ..errors import DatabaseError

# The revision whose tables a database made before migrations already has.
FIRST_REVISION = "0001"
# Serialises migrations of several processes starting at once on PostgreSQL.
_MIGRATION_LOCK = 7_345_812


def default_db_url() -> str:
    path = Path.home() / ".local" / "share" / "mcp-apps-host" / "host.db"
    return f"sqlite:///{path}"


def shown_url(url: str) -> str:
    """The URL as it may be printed: without its password."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # a URL SQLAlchemy cannot read is shown as given
        return url


def open_database(url: str) -> Engine:
    """An engine for ``url`` with the schema migrated; :class:`DatabaseError` names what failed."""
    try:
        engine = _engine(url)
        with engine.begin() as conn:
            migrate(conn)
    except SQLAlchemyError as exc:
        raise DatabaseError(f"cannot open the database {shown_url(url)}: {exc.args[0] if exc.args else exc}") from exc
    except ImportError as exc:
        raise DatabaseError(f"cannot open the database {shown_url(url)}: its driver {exc.name!r} is not installed "
                            "(for PostgreSQL: pip install 'mcp-apps-host[postgres]')") from exc
    except OSError as exc:
        raise DatabaseError(f"cannot open the database {shown_url(url)}: {exc}") from exc
    return engine


def _engine(url: str) -> Engine:
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        Path(url.removeprefix("sqlite:///")).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, pool_pre_ping=not url.startswith("sqlite"))
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


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


def migrate(conn: Connection, revision: str = "head") -> None:
    """Bring the schema to ``revision`` (the newest by default) inside the caller's transaction."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
    config = Config()
    config.set_main_option("script_location", "mcp_apps_host.store:migrations")
    config.attributes["connection"] = conn
    tables = set(inspect(conn).get_table_names())
    if "alembic_version" not in tables and "conversations" in tables:
        command.stamp(config, FIRST_REVISION)
    command.upgrade(config, revision)
