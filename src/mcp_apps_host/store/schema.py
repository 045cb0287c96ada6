"""Every table the host keeps, in one SQLAlchemy `MetaData` (Core tables, no ORM).

Changing a table here needs an Alembic migration under `migrations/versions/`.
"""

from __future__ import annotations

from sqlalchemy import JSON, BigInteger, Column, Float, ForeignKey, Index, Integer, MetaData, String, Table, Text

metadata = MetaData()


def _owner(primary_key: bool = False) -> list[Column[str]]:
    """Whose row it is: every row a person's session reads or writes carries their tenant and user."""
    return [Column("tenant", String(128), primary_key=primary_key, nullable=False, server_default="default"),
            Column("user_id", String(256), primary_key=primary_key, nullable=False, server_default="local")]


# ---- conversations ----------------------------------------------------------------------------

conversations = Table(
    "conversations",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("title", String(200), nullable=False),
    Column("created", Float, nullable=False),
    Column("updated", Float, nullable=False, index=True),
    *_owner(),
    Index("ix_conversations_owner", "tenant", "user_id", "updated"),
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
# view instance id its tool-call item carries, so a replayed view starts where it was left; and the height
# its frame last had inline, for the placeholder a replay draws in its place.
view_states = Table(
    "view_states",
    metadata,
    Column("instance", String(64), primary_key=True),
    Column("conversation", String(36), nullable=False, index=True),
    Column("state", JSON, nullable=False),
    Column("updated", Float, nullable=False),
    Column("height", Integer, nullable=True),
)

# The views a person pinned to the side panel, by view instance, with the call that made the view (what
# it takes to mount it again after a reload or a restart).
view_pins = Table(
    "view_pins",
    metadata,
    *_owner(primary_key=True),
    Column("instance", String(64), primary_key=True),
    Column("conversation", String(36), nullable=False),
    Column("call", JSON, nullable=False),
    Column("pinned_at", Float, nullable=False),
)

# The JSON value a view asked the host to keep (mcp-apps-host/state/set), per person and view instance:
# a replay or remount of the same instance reads it back, nobody else and no other instance does.
view_host_states = Table(
    "view_host_states",
    metadata,
    *_owner(primary_key=True),
    Column("instance", String(64), primary_key=True),
    Column("conversation", String(36), nullable=True, index=True),  # deleted with it
    Column("state", JSON, nullable=False),
    Column("updated", Float, nullable=False),
)

# ---- policy state -------------------------------------------------------------------------------

# The person's "always allow this tool from this server" answers.
consent_remembered = Table(
    "consent_remembered",
    metadata,
    *_owner(primary_key=True),
    Column("server", String(128), primary_key=True),
    Column("tool", String(256), primary_key=True),
    Column("ts", Float, nullable=False),
)

# The template hash pinned per (server, URI) on first use or when the person accepted a change.
template_pins = Table(
    "template_pins",
    metadata,
    *_owner(primary_key=True),
    Column("server", String(128), primary_key=True),
    Column("uri", String(1024), primary_key=True),
    Column("sha256", String(64), nullable=False),
    Column("size", Integer, nullable=False),
    Column("first_seen", Float, nullable=False),
    Column("accepted_at", Float, nullable=True),  # NULL for a pin taken on first use
)

# A mounted view: what the sandbox origin needs to serve its proxy page on any worker.
view_instances = Table(
    "view_instances",
    metadata,
    Column("handle", String(64), primary_key=True),
    *_owner(),
    Column("conversation", String(36), nullable=True),
    Column("server", String(128), nullable=False),
    Column("tool", String(256), nullable=False),
    Column("template_sha256", String(64), nullable=False),
    Column("origin", String(512), nullable=False),
    Column("csp_header", Text, nullable=False),
    Column("created", Float, nullable=False),
    Column("closed", Float, nullable=True),
)

# What is left of a person's sampling allowance per server (a token bucket shared by every worker).
sampling_budgets = Table(
    "sampling_budgets",
    metadata,
    *_owner(primary_key=True),
    Column("server", String(128), primary_key=True),
    Column("tokens", Float, nullable=False),
    Column("at", Float, nullable=False),
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
    *_owner(),
    Index("ix_audit_events_owner", "tenant", "user_id"),
)

# Payloads stored once, keyed by the SHA-256 of their canonical JSON.
audit_payloads = Table(
    "audit_payloads",
    metadata,
    Column("sha256", String(64), primary_key=True),
    Column("json", Text, nullable=False),
    Column("size", Integer, nullable=False),  # bytes of the UTF-8 canonical JSON
)

# ---- signing in to servers ------------------------------------------------------------------------

# What a person got by signing in to a server (MCP authorization): tokens and the client registration,
# each Fernet-encrypted (never stored in clear), with when the access token runs out.
server_credentials = Table(
    "server_credentials",
    metadata,
    *_owner(primary_key=True),
    Column("server", String(128), primary_key=True),
    Column("tokens", Text, nullable=True),
    Column("client", Text, nullable=True),
    Column("expires_at", Float, nullable=True),
    Column("updated", Float, nullable=False),
)

# A sign-in under way, by its OAuth `state`: whichever worker the redirect reaches finds whose it is.
signin_flows = Table(
    "signin_flows",
    metadata,
    Column("state", String(128), primary_key=True),
    *_owner(),
    Column("server", String(128), nullable=False),
    Column("created", Float, nullable=False, index=True),
)

# ---- the server registry --------------------------------------------------------------------------

# Servers an admin added while the host runs, by name (one namespace with the config file's servers):
# the body as given (an mcpServers entry plus grants and enabled), the tenant it belongs to, who last
# changed it and when. Every worker builds its connections from these rows.
registry_servers = Table(
    "registry_servers",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("tenant", String(128), nullable=False, server_default="default"),
    Column("body", Text, nullable=False),  # JSON
    Column("updated", Float, nullable=False),
    Column("updated_by", String(256), nullable=False),
)
