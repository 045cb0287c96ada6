"""The state a view keeps in the host, per person and view instance (mcp-apps-host/state/*).

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "view_host_states",
        sa.Column("tenant", sa.String(128), primary_key=True, nullable=False, server_default="default"),
        sa.Column("user_id", sa.String(256), primary_key=True, nullable=False, server_default="local"),
        sa.Column("instance", sa.String(64), primary_key=True),
        sa.Column("conversation", sa.String(36), nullable=True),
        sa.Column("state", sa.JSON, nullable=False),
        sa.Column("updated", sa.Float, nullable=False),
    )
    op.create_index("ix_view_host_states_conversation", "view_host_states", ["conversation"])


def downgrade() -> None:
    op.drop_table("view_host_states")
