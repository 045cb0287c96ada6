"""What a server said changed (its tools, its resources, one resource), kept until it is read again.

Notifications arrive on the connection's reader; the connection's own loop reads the changes
again between health checks, so a burst of notifications is one refresh.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcp import types


class Changes:
    def __init__(self) -> None:
        self.wake = asyncio.Event()  # set when there is something to read again (or the connection failed)
        self._tools = False
        self._templates: set[str] | None = None  # None: nothing; empty: all

    def note(self, kind: str, uri: str | None) -> None:
        """``kind`` is "tools" or "all" (tools and every template), "resources", or "resource" (``uri``)."""
        if kind in ("tools", "all"):
            self._tools = True
            self._templates = set()
        elif kind == "resources":
            self._templates = set()
        elif kind == "resource" and uri is not None:
            if self._templates is None:
                self._templates = {uri}
            elif self._templates:
                self._templates.add(uri)
        self.wake.set()

    def pending(self) -> bool:
        return self._tools or self._templates is not None

    def take(self) -> tuple[bool, set[str] | None]:
        """Whether to read the tools again, and which templates (None: none; empty: all); then forget."""
        taken = self._tools, self._templates
        self._tools, self._templates = False, None
        return taken


def change_of(message: Any) -> tuple[str, str | None] | None:
    """The change an SDK notification reports, as `Changes.note` takes it, or None."""
    root = getattr(message, "root", message)
    if isinstance(root, types.ToolListChangedNotification):
        return "tools", None
    if isinstance(root, types.ResourceListChangedNotification):
        return "resources", None
    if isinstance(root, types.ResourceUpdatedNotification):
        return "resource", str(root.params.uri)
    return None
