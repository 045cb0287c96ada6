"""Every row belongs to a tenant and a user; mounted views and sampling budgets are kept in the database.

Rows from before belong to the console's own person (tenant "default", user "local").

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _owner(primary_key: bool = False) -> list[sa.Column[str]]:
    return [sa.Column("tenant", sa.String(128), primary_key=primary_key, nullable=False, server_default="default"),
            sa.Column("user_id", sa.String(256), primary_key=primary_key, nullable=False, server_default="local")]


def _rekey(table: str, columns: list[sa.Column[object]], copied: str) -> None:
    """A new primary key: build the table afresh and copy the rows (works on SQLite and PostgreSQL)."""
    op.rename_table(table, f"{table}_old")
    op.create_table(table, *_owner(primary_key=True), *columns)
    op.execute(f"INSERT INTO {table} ({copied}) SELECT {copied} FROM {table}_old")
    op.drop_table(f"{table}_old")


def upgrade() -> None:
    with op.batch_alter_table("conversations") as batch:
        for column in _owner():
            batch.add_column(column)
        batch.create_index("ix_conversations_owner", ["tenant", "user_id", "updated"])
    with op.batch_alter_table("audit_events") as batch:
        for column in _owner():
            batch.add_column(column)
        batch.create_index("ix_audit_events_owner", ["tenant", "user_id"])
    _rekey("consent_remembered", [
        sa.Column("server", sa.String(128), primary_key=True),
        sa.Column("tool", sa.String(256), primary_key=True),
        sa.Column("ts", sa.Float, nullable=False),
    ], "server, tool, ts")
    _rekey("template_pins", [
        sa.Column("server", sa.String(128), primary_key=True),
        sa.Column("uri", sa.String(1024), primary_key=True),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("size", sa.Integer, nullable=False),
        sa.Column("first_seen", sa.Float, nullable=False),
        sa.Column("accepted_at", sa.Float, nullable=True),
    ], "server, uri, sha256, size, first_seen, accepted_at")
    op.create_table(
        "view_instances",
        sa.Column("handle", sa.String(64), primary_key=True),
        *_owner(),
        sa.Column("conversation", sa.String(36), nullable=True),
        sa.Column("server", sa.String(128), nullable=False),
        sa.Column("tool", sa.String(256), nullable=False),
        sa.Column("template_sha256", sa.String(64), nullable=False),
        sa.Column("origin", sa.String(512), nullable=False),
        sa.Column("csp_header", sa.Text, nullable=False),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("closed", sa.Float, nullable=True),
    )
    op.create_table(
        "sampling_budgets",
        *_owner(primary_key=True),
        sa.Column("server", sa.String(128), primary_key=True),
        sa.Column("tokens", sa.Float, nullable=False),
        sa.Column("at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("sampling_budgets")
    op.drop_table("view_instances")
    for table in ("audit_events", "conversations"):
        with op.batch_alter_table(table) as batch:
            batch.drop_index(f"ix_{table}_owner")
            batch.drop_column("user_id")
            batch.drop_column("tenant")
