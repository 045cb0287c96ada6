"""The one place engines are opened: connection settings, migrations, and a clear error for a bad URL."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from mcp_apps_host.errors import DatabaseError
from mcp_apps_host.store.consents import RememberedConsents
from mcp_apps_host.store.conversations import Conversations
from mcp_apps_host.store.db import FIRST_REVISION, migrate, open_database
from mcp_apps_host.store.schema import metadata
from mcp_apps_host.values.identity import CONSOLE, Identity

HEAD = "0008"


def test_migrations_build_exactly_the_declared_schema(tmp_path: Path):
    """A table changed in schema.py without a migration (or the other way round) fails here."""
    engine = open_database(f"sqlite:///{tmp_path / 'fresh.db'}")
    try:
        with engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), metadata) == []
            assert set(inspect(conn).get_table_names()) == {*metadata.tables, "alembic_version"}
    finally:
        engine.dispose()


def test_sqlite_commits_survive_a_killed_host(tmp_path: Path):
    engine = open_database(f"sqlite:///{tmp_path / 'h.db'}")
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL, in WAL
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    finally:
        engine.dispose()


def test_a_database_from_before_migrations_is_adopted(tmp_path: Path):
    path = tmp_path / "old.db"
    old = create_engine(f"sqlite:///{path}")
    with old.begin() as conn:  # what the first release made, without Alembic
        migrate(conn, FIRST_REVISION)
        conn.exec_driver_sql("DROP TABLE alembic_version")
        conn.exec_driver_sql("INSERT INTO conversations VALUES ('c1', 'kept', 1.0, 1.0)")
        conn.exec_driver_sql("INSERT INTO consent_remembered VALUES ('srv', 'tool', 1.0)")
    old.dispose()
    engine = open_database(f"sqlite:///{path}")
    try:
        # The console's own person keeps what was there.
        assert [c.title for c in Conversations(engine).bound(CONSOLE).recent()] == ["kept"]
        assert RememberedConsents(engine).bound(CONSOLE).is_allowed("srv", "tool")
    finally:
        engine.dispose()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [(HEAD,)]
        assert conn.execute("SELECT count(*) FROM view_states").fetchall() == [(0,)]


def test_a_database_that_cannot_be_opened_is_named_without_its_password():
    with pytest.raises(DatabaseError) as caught:
        open_database("postgresql+psycopg://someone:s3cret@127.0.0.1:1/nowhere")
    text = str(caught.value)
    assert "cannot open the database" in text and "s3cret" not in text and "127.0.0.1:1/nowhere" in text


def test_a_view_state_is_kept_per_instance_replaced_and_deleted_with_its_conversation(tmp_path: Path):
    engine = open_database(f"sqlite:///{tmp_path / 'h.db'}")
    try:
        repo = Conversations(engine).bound(CONSOLE)
        conv = repo.create()
        repo.save_view_state("i1", conv.id, {"structuredContent": {"n": 1}})
        repo.save_view_state("i1", conv.id, {"structuredContent": {"n": 2}})
        assert repo.load_view_state("i1") == {"structuredContent": {"n": 2}}
        assert repo.load_view_state("other") is None
        # Someone else's session cannot read it.
        assert Conversations(engine).bound(Identity("mallory", "other")).load_view_state("i1") is None
        repo.delete(conv.id)
        assert repo.load_view_state("i1") is None
    finally:
        engine.dispose()


def test_a_view_height_is_kept_beside_its_state_and_read_per_conversation(tmp_path: Path):
    engine = open_database(f"sqlite:///{tmp_path / 'h.db'}")
    try:
        repo = Conversations(engine).bound(CONSOLE)
        conv, other = repo.create(), repo.create()
        repo.save_view_heights(conv.id, {"i1": 300, "i2": 120})  # before any state: the state stays unknown
        assert repo.load_view_state("i1") is None
        repo.save_view_state("i1", conv.id, {"structuredContent": {"n": 1}})
        repo.save_view_heights(conv.id, {"i1": 420})
        repo.save_view_heights(other.id, {"i3": 90})
        assert repo.view_heights(conv.id) == {"i1": 420, "i2": 120}
        assert repo.load_view_state("i1") == {"structuredContent": {"n": 1}}  # a new height keeps the state
        repo.save_view_state("i1", conv.id, {"structuredContent": {"n": 2}})
        assert repo.view_heights(conv.id)["i1"] == 420  # and a new state keeps the height
        # Someone else's session cannot read them.
        assert Conversations(engine).bound(Identity("mallory", "other")).view_heights(conv.id) == {}
        repo.delete(conv.id)
        assert repo.view_heights(conv.id) == {} and repo.view_heights(other.id) == {"i3": 90}
    finally:
        engine.dispose()
