"""How a view's tool calls are run, as a typed interface: the view's driver is handed one at construction,
and the tab's `CallRunner` is it (a unit test passes a fake)."""

from __future__ import annotations

from typing import Any, Protocol

from ...servers.connection import ProgressFn


class ToolRunner(Protocol):
    """Runs a tool call a view asked for, as the conversation shows it (its card, its record, the audit trail)."""

    async def for_view(self, server: str, tool: str, arguments: dict[str, Any],
                       on_progress: ProgressFn) -> dict[str, Any]:
        """The CallToolResult; raises `CallFailed` saying why there is none."""
        ...
