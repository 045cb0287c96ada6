"""Signing in to servers: each person's encrypted tokens and client registration per server, and the
sign-ins under way (by OAuth state) so the redirect can land on any worker.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def _owner() -> list[sa.Column]:  # type: ignore[type-arg]
    return [sa.Column("tenant", sa.String(128), primary_key=True, nullable=False, server_default="default"),
            sa.Column("user_id", sa.String(256), primary_key=True, nullable=False, server_default="local")]


def upgrade() -> None:
    op.create_table(
        "server_credentials",
        *_owner(),
        sa.Column("server", sa.String(128), primary_key=True),
        sa.Column("tokens", sa.Text, nullable=True),
        sa.Column("client", sa.Text, nullable=True),
        sa.Column("expires_at", sa.Float, nullable=True),
        sa.Column("updated", sa.Float, nullable=False),
    )
    op.create_table(
        "signin_flows",
        sa.Column("state", sa.String(128), primary_key=True),
        sa.Column("tenant", sa.String(128), nullable=False, server_default="default"),
        sa.Column("user_id", sa.String(256), nullable=False, server_default="local"),
        sa.Column("server", sa.String(128), nullable=False),
        sa.Column("created", sa.Float, nullable=False, index=True),
    )


def downgrade() -> None:
    op.drop_table("signin_flows")
    op.drop_table("server_credentials")
