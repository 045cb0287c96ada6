"""The state each view instance last kept, restored when its conversation is replayed.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "view_states",
        sa.Column("instance", sa.String(64), primary_key=True),
        sa.Column("conversation", sa.String(36), nullable=False),
        sa.Column("state", sa.JSON, nullable=False),
        sa.Column("updated", sa.Float, nullable=False),
    )
    op.create_index("ix_view_states_conversation", "view_states", ["conversation"])


def downgrade() -> None:
    op.drop_table("view_states")
