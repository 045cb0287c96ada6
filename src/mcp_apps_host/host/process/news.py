"""This worker's tabs by the conversation each shows.

News of a conversation (an item another tab wrote, on this worker or another, over the bus) goes
to the tabs showing that conversation only, not to every tab to be dropped by nearly all of them:
with a thousand tabs, a view's call would otherwise wake every one of them twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("mcp_apps_host.bus")

Handler = Callable[[dict[str, Any]], None]


class ConversationNews:
    def __init__(self) -> None:
        self._watchers: dict[str, set[Handler]] = {}

    def watch(self, conversation: str, handler: Handler) -> Callable[[], None]:
        """``handler`` hears the news of ``conversation`` until the returned function is called."""
        self._watchers.setdefault(conversation, set()).add(handler)

        def unwatch() -> None:
            watchers = self._watchers.get(conversation)
            if watchers is not None:
                watchers.discard(handler)
                if not watchers:
                    del self._watchers[conversation]

        return unwatch

    def heard(self, news: dict[str, Any]) -> None:
        """A message of the bus's "conversation" channel. After an outage of the bus (``missed``), every
        watcher is told that it may have missed news of its conversation."""
        if news.get("missed") is True:
            for conversation, handlers in list(self._watchers.items()):
                self._tell(handlers, {"missed": True, "conversation": conversation})
            return
        self._tell(self._watchers.get(str(news.get("conversation")), set()), news)

    @staticmethod
    def _tell(handlers: set[Handler], news: dict[str, Any]) -> None:
        for handler in list(handlers):
            try:
                handler(news)
            except Exception:  # one tab's failure must not keep the news from the others
                log.exception("a tab failed on news of its conversation")
