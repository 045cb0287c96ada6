"""Every table the host keeps, in one SQLAlchemy `MetaData` (Core tables, no ORM).

Changing a table here needs an Alembic migration under `migrations/versions/`.
"""

from __future__ import annotations

from sqlalchemy import JSON, BigInteger, Column, Float, ForeignKey, Integer, MetaData, String, Table, Text

metadata = MetaData()

# ---- conversations ----------------------------------------------------------------------------

conversations = Table(
    "conversations",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("title", String(200), nullable=False),
    Column("created", Float, nullable=False),
    Column("updated", Float, nullable=False, index=True),
)

# One thing the conversation shows (a message, a tool call with its view, a notice) or what the model saw.
conversation_items = Table(
    "conversation_items",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("conversation", String(36), ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False,
           index=True),
    Column("kind", String(16), nullable=False),
    Column("ts", Float, nullable=False),
    Column("data", JSON, nullable=False),
)

# Template HTML by content hash: a stored view renders again from exactly what it ran.
templates = Table(
    "templates",
    metadata,
    Column("sha256", String(64), primary_key=True),
    Column("server", String(64), nullable=False),
    Column("uri", Text, nullable=False),
    Column("html", Text, nullable=False),
    Column("meta", JSON, nullable=False),  # csp, permissions, domain, prefersBorder
    Column("first_seen", Float, nullable=False),
)

# The state a view last kept (its latest ui/update-model-context; an OpenAI widget's widgetState), by the
# view instance id its tool-call item carries, so a replayed view starts where it was left.
view_states = Table(
    "view_states",
    metadata,
    Column("instance", String(64), primary_key=True),
    Column("conversation", String(36), nullable=False, index=True),
    Column("state", JSON, nullable=False),
    Column("updated", Float, nullable=False),
)

# ---- policy state -------------------------------------------------------------------------------

# The person's "always allow this tool from this server" answers.
consent_remembered = Table(
    "consent_remembered",
    metadata,
    Column("server", String(128), primary_key=True),
    Column("tool", String(256), primary_key=True),
    Column("ts", Float, nullable=False),
)

# The template hash pinned per (server, URI) on first use or when the person accepted a change.
template_pins = Table(
    "template_pins",
    metadata,
    Column("server", String(128), primary_key=True),
    Column("uri", String(1024), primary_key=True),
    Column("sha256", String(64), nullable=False),
    Column("size", Integer, nullable=False),
    Column("first_seen", Float, nullable=False),
    Column("accepted_at", Float, nullable=True),  # NULL for a pin taken on first use
)

# ---- the audit trail ------------------------------------------------------------------------------

audit_events = Table(
    "audit_events",
    metadata,
    # 64-bit on PostgreSQL; on SQLite an INTEGER primary key is the 64-bit rowid.
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("ts", Float, nullable=False, index=True),
    Column("conversation", String(128), nullable=True, index=True),
    Column("view", String(128), nullable=True, index=True),
    Column("server", String(128), nullable=True, index=True),
    Column("direction", String(16), nullable=False),
    Column("method", String(256), nullable=True),
    Column("msg_id", Text, nullable=True),  # JSON text, so that id 1 and id "1" stay different
    Column("decision", String(16), nullable=True),
    Column("reason", Text, nullable=True),
    Column("payload_sha256", String(64), nullable=True),
    Column("payload_preview", Text, nullable=True),
)

# Payloads stored once, keyed by the SHA-256 of their canonical JSON.
audit_payloads = Table(
    "audit_payloads",
    metadata,
    Column("sha256", String(64), primary_key=True),
    Column("json", Text, nullable=False),
    Column("size", Integer, nullable=False),  # bytes of the UTF-8 canonical JSON
)
