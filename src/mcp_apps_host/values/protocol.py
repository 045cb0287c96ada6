"""Names from the MCP Apps specification and MCP, in one place.

Every method name the host sends or understands lives here, so the next revision of
the protocol is a change to this file. Grouped by who sends them.
"""

from __future__ import annotations

from typing import Final, Literal

EXTENSION_ID: Final = "io.modelcontextprotocol/ui"
APP_MIME_TYPE: Final = "text/html;profile=mcp-app"
# Templates written for the OpenAI Apps SDK: rendered with the `window.openai` shim (compatibility only).
OPENAI_MIME_TYPE: Final = "text/html+skybridge"
PROTOCOL_VERSION: Final = "2026-01-26"  # the MCP Apps version this host speaks
SUPPORTED_PROTOCOL_VERSIONS: Final = (PROTOCOL_VERSION,)

DISPLAY_MODES: Final = ("inline", "fullscreen", "pip")
LOG_LEVELS: Final = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

# Content block types as `hostCapabilities.message` / `.updateModelContext` name them
# (SupportedContentBlockModalities), keyed by the block's `type`.
MODALITY_OF_BLOCK: Final = {"text": "text", "image": "image", "audio": "audio", "resource": "resource",
                            "resource_link": "resourceLink"}

# ---- sandbox proxy ⇄ host ---------------------------------------------------------------
SANDBOX_PREFIX: Final = "ui/notifications/sandbox-"
SANDBOX_PROXY_READY: Final = "ui/notifications/sandbox-proxy-ready"
SANDBOX_RESOURCE_READY: Final = "ui/notifications/sandbox-resource-ready"

# ---- view → host requests ----------------------------------------------------------------
INITIALIZE: Final = "ui/initialize"
PING: Final = "ping"
TOOLS_CALL: Final = "tools/call"  # also host → view, for the view's own tools
TOOLS_LIST: Final = "tools/list"  # also host → view, for the view's own tools
RESOURCES_READ: Final = "resources/read"
RESOURCES_LIST: Final = "resources/list"
RESOURCES_TEMPLATES_LIST: Final = "resources/templates/list"
ResourceListing = Literal["resources/list", "resources/templates/list"]  # what a view may list of its server
OPEN_LINK: Final = "ui/open-link"
MESSAGE: Final = "ui/message"
UPDATE_MODEL_CONTEXT: Final = "ui/update-model-context"
REQUEST_DISPLAY_MODE: Final = "ui/request-display-mode"
DOWNLOAD_FILE: Final = "ui/download-file"
SAMPLING_CREATE_MESSAGE: Final = "sampling/createMessage"  # also server → host
# Not in the MCP Apps spec: this host's own request, a view asking to open another view of its server
# (advertised under hostCapabilities.experimental).
OPEN_VIEW: Final = "mcp-apps-host/open-view"
# Not in the MCP Apps spec either: a capability both sides declare under `experimental` (no method of
# its own). A view that declares it is given a later call of its tool, as tool-input and tool-result
# again, instead of a new view being mounted for that call.
LATER_RESULTS: Final = "mcp-apps-host/later-results"
# And this host's own store of a view's state (a JSON value per view instance and person, kept across
# reload, remount and restart): the capability, advertised with its size limit, and its two requests.
VIEW_STATE: Final = "mcp-apps-host/state"
VIEW_STATE_GET: Final = "mcp-apps-host/state/get"
VIEW_STATE_SET: Final = "mcp-apps-host/state/set"

# ---- view → host notifications -------------------------------------------------------------
INITIALIZED: Final = "ui/notifications/initialized"
SIZE_CHANGED: Final = "ui/notifications/size-changed"
REQUEST_TEARDOWN: Final = "ui/notifications/request-teardown"
LOG_MESSAGE: Final = "notifications/message"  # also server → host
CANCELLED: Final = "notifications/cancelled"  # both ways, and host → server
TOOLS_LIST_CHANGED: Final = "notifications/tools/list_changed"  # view → host, server → host → view

# ---- host → view -----------------------------------------------------------------------------
TOOL_INPUT_PARTIAL: Final = "ui/notifications/tool-input-partial"
TOOL_INPUT: Final = "ui/notifications/tool-input"
TOOL_RESULT: Final = "ui/notifications/tool-result"
TOOL_CANCELLED: Final = "ui/notifications/tool-cancelled"
HOST_CONTEXT_CHANGED: Final = "ui/notifications/host-context-changed"
RESOURCE_TEARDOWN: Final = "ui/resource-teardown"
PROGRESS: Final = "notifications/progress"

# ---- host ⇄ MCP server (core protocol; the SDK speaks most of it, these name it in the audit) --
MCP_INITIALIZE: Final = "initialize"  # the handshake of the 2024-11-05 … 2025-11-25 servers
SERVER_DISCOVER: Final = "server/discover"  # the 2026-07-28 servers' version and capability probe
SUBSCRIPTIONS_LISTEN: Final = "subscriptions/listen"  # 2026-07-28: change notifications
RESOURCES_SUBSCRIBE: Final = "resources/subscribe"  # before 2026-07-28 (and from a view, to its host)
RESOURCES_UNSUBSCRIBE: Final = "resources/unsubscribe"
LOGGING_SET_LEVEL: Final = "logging/setLevel"  # before 2026-07-28; later, a level in each request's _meta
ELICITATION_CREATE: Final = "elicitation/create"  # server → host (or inside an input_required result)
ROOTS_LIST: Final = "roots/list"  # server → host (or inside an input_required result)
ROOTS_LIST_CHANGED: Final = "notifications/roots/list_changed"  # host → server, before 2026-07-28
RESOURCES_LIST_CHANGED: Final = "notifications/resources/list_changed"
RESOURCE_UPDATED: Final = "notifications/resources/updated"

# The MCP protocol eras: which revisions open with `initialize` and which with `server/discover`.
MODERN_MCP_VERSIONS: Final = ("2026-07-28",)

# ---- error codes --------------------------------------------------------------------------------
# "Resource not found": -32002 before 2026-07-28, -32602 (invalid params) from then on.
RESOURCE_NOT_FOUND_CODES: Final = (-32002, -32602)
