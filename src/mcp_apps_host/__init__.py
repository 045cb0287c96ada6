"""mcp-apps-host: a Python host for MCP Apps (extension `io.modelcontextprotocol/ui`)."""

__version__ = "0.1.0"
EXTENSION_ID = "io.modelcontextprotocol/ui"
APP_MIME_TYPE = "text/html;profile=mcp-app"
PROTOCOL_VERSION = "2026-01-26"
