"""The height a view's frame last had in the conversation, so a placeholder drawn for it after a reload
or a restart takes the view's place and size (nothing below it moves when it is mounted again).

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("view_states") as batch:
        batch.add_column(sa.Column("height", sa.Integer, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("view_states") as batch:
        batch.drop_column("height")
