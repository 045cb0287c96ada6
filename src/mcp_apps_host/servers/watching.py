"""Who follows which resource of one server: the views that subscribed to it.

The server is asked to send updates of a resource once, however many views follow it, and told
to stop when the last one lets go; an update goes to the views that follow that resource only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

log = logging.getLogger("mcp_apps_host.servers")

# Called with the uri the server said was updated.
Updated = Callable[[str], None]


class ResourceWatchers:
    def __init__(self) -> None:
        self._by_uri: dict[str, list[Updated]] = {}

    def add(self, uri: str, updated: Updated) -> bool:
        """Follow ``uri``; True when nobody followed it before (the server must be asked)."""
        followers = self._by_uri.setdefault(uri, [])
        followers.append(updated)
        return len(followers) == 1

    def remove(self, uri: str, updated: Updated) -> bool:
        """Stop following; True when that was the last follower (the server may stop sending)."""
        followers = self._by_uri.get(uri, [])
        if updated not in followers:
            return False
        followers.remove(updated)
        if followers:
            return False
        del self._by_uri[uri]
        return True

    def uris(self) -> list[str]:
        return sorted(self._by_uri)

    def updated(self, uri: str) -> None:
        for updated in list(self._by_uri.get(uri, ())):
            try:
                updated(uri)
            except Exception:  # one view's failure must not stop the server's connection or the other views
                log.exception("a view following %s failed to take its update", uri)
