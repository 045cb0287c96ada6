"""The package version (one place, read by the CLI, the view handshake and the MCP client info)."""

__version__ = "0.1.0"
