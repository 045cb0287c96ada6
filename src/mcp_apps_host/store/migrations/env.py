"""Alembic environment: migrations run on the connection `store.db.migrate` hands over."""

from alembic import context

from mcp_apps_host.store.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
