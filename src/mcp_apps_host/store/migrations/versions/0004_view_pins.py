"""The views a person pinned to the side panel, kept so a reload or a restart brings them back.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "view_pins",
        sa.Column("tenant", sa.String(128), primary_key=True, nullable=False, server_default="default"),
        sa.Column("user_id", sa.String(256), primary_key=True, nullable=False, server_default="local"),
        sa.Column("instance", sa.String(64), primary_key=True),
        sa.Column("conversation", sa.String(36), nullable=False),
        sa.Column("call", sa.JSON, nullable=False),
        sa.Column("pinned_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("view_pins")
