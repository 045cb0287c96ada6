"""Names from the MCP Apps specification and MCP, in one place.

Every method name the host sends or understands lives here, so the next revision of
the protocol is a change to this file. Grouped by who sends them.
"""

from __future__ import annotations

from typing import Final

EXTENSION_ID: Final = "io.modelcontextprotocol/ui"
APP_MIME_TYPE: Final = "text/html;profile=mcp-app"
# Templates written for the OpenAI Apps SDK: rendered with the `window.openai` shim (compatibility only).
OPENAI_MIME_TYPE: Final = "text/html+skybridge"
PROTOCOL_VERSION: Final = "2026-01-26"  # the MCP Apps version this host speaks
SUPPORTED_PROTOCOL_VERSIONS: Final = (PROTOCOL_VERSION,)

DISPLAY_MODES: Final = ("inline", "fullscreen", "pip")
LOG_LEVELS: Final = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

# ---- sandbox proxy ⇄ host ---------------------------------------------------------------
SANDBOX_PREFIX: Final = "ui/notifications/sandbox-"
SANDBOX_PROXY_READY: Final = "ui/notifications/sandbox-proxy-ready"
SANDBOX_RESOURCE_READY: Final = "ui/notifications/sandbox-resource-ready"

# ---- view → host requests ----------------------------------------------------------------
INITIALIZE: Final = "ui/initialize"
PING: Final = "ping"
TOOLS_CALL: Final = "tools/call"
RESOURCES_READ: Final = "resources/read"
OPEN_LINK: Final = "ui/open-link"
MESSAGE: Final = "ui/message"
UPDATE_MODEL_CONTEXT: Final = "ui/update-model-context"
REQUEST_DISPLAY_MODE: Final = "ui/request-display-mode"
DOWNLOAD_FILE: Final = "ui/download-file"
SAMPLING_CREATE_MESSAGE: Final = "sampling/createMessage"

# ---- view → host notifications -------------------------------------------------------------
INITIALIZED: Final = "ui/notifications/initialized"
SIZE_CHANGED: Final = "ui/notifications/size-changed"
REQUEST_TEARDOWN: Final = "ui/notifications/request-teardown"
LOG_MESSAGE: Final = "notifications/message"
CANCELLED: Final = "notifications/cancelled"

# ---- host → view -----------------------------------------------------------------------------
TOOL_INPUT_PARTIAL: Final = "ui/notifications/tool-input-partial"
TOOL_INPUT: Final = "ui/notifications/tool-input"
TOOL_RESULT: Final = "ui/notifications/tool-result"
TOOL_CANCELLED: Final = "ui/notifications/tool-cancelled"
HOST_CONTEXT_CHANGED: Final = "ui/notifications/host-context-changed"
RESOURCE_TEARDOWN: Final = "ui/resource-teardown"
PROGRESS: Final = "notifications/progress"
