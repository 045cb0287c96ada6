"""The tables of the first release: conversations, templates, consents, pins, audit.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "conversations",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("updated", sa.Float, nullable=False),
    )
    op.create_index("ix_conversations_updated", "conversations", ["updated"])
    op.create_table(
        "conversation_items",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("conversation", sa.String(36), sa.ForeignKey("conversations.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("ts", sa.Float, nullable=False),
        sa.Column("data", sa.JSON, nullable=False),
    )
    op.create_index("ix_conversation_items_conversation", "conversation_items", ["conversation"])
    op.create_table(
        "templates",
        sa.Column("sha256", sa.String(64), primary_key=True),
        sa.Column("server", sa.String(64), nullable=False),
        sa.Column("uri", sa.Text, nullable=False),
        sa.Column("html", sa.Text, nullable=False),
        sa.Column("meta", sa.JSON, nullable=False),
        sa.Column("first_seen", sa.Float, nullable=False),
    )
    op.create_table(
        "consent_remembered",
        sa.Column("server", sa.String(128), primary_key=True),
        sa.Column("tool", sa.String(256), primary_key=True),
        sa.Column("ts", sa.Float, nullable=False),
    )
    op.create_table(
        "template_pins",
        sa.Column("server", sa.String(128), primary_key=True),
        sa.Column("uri", sa.String(1024), primary_key=True),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("size", sa.Integer, nullable=False),
        sa.Column("first_seen", sa.Float, nullable=False),
        sa.Column("accepted_at", sa.Float, nullable=True),
    )
    op.create_table(
        "audit_events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("ts", sa.Float, nullable=False),
        sa.Column("conversation", sa.String(128), nullable=True),
        sa.Column("view", sa.String(128), nullable=True),
        sa.Column("server", sa.String(128), nullable=True),
        sa.Column("direction", sa.String(16), nullable=False),
        sa.Column("method", sa.String(256), nullable=True),
        sa.Column("msg_id", sa.Text, nullable=True),
        sa.Column("decision", sa.String(16), nullable=True),
        sa.Column("reason", sa.Text, nullable=True),
        sa.Column("payload_sha256", sa.String(64), nullable=True),
        sa.Column("payload_preview", sa.Text, nullable=True),
    )
    for column in ("ts", "conversation", "view", "server"):
        op.create_index(f"ix_audit_events_{column}", "audit_events", [column])
    op.create_table(
        "audit_payloads",
        sa.Column("sha256", sa.String(64), primary_key=True),
        sa.Column("json", sa.Text, nullable=False),
        sa.Column("size", sa.Integer, nullable=False),
    )


def downgrade() -> None:
    for table in ("audit_payloads", "audit_events", "template_pins", "consent_remembered", "templates",
                  "conversation_items", "conversations"):
        op.drop_table(table)
