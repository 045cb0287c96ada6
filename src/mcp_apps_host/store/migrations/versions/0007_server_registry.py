"""The server registry: servers an admin adds, changes and removes while the host runs.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "registry_servers",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("tenant", sa.String(128), nullable=False, server_default="default"),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("updated", sa.Float, nullable=False),
        sa.Column("updated_by", sa.String(256), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("registry_servers")
