"""The height each view's frame last had inline, kept with the view instance: a conversation replayed
after a reload or a restart draws a placeholder of that height in the view's place, so nothing below it
moves when the view is mounted again. Written when it changes (a view sends at most
`max_view_messages_per_second` messages), so a restart right after a resize does not lose it."""

from __future__ import annotations

from .driver import ViewDriver
from .journal import Journal


class ViewHeights:
    def __init__(self, journal: Journal | None) -> None:
        self.journal = journal
        self._kept: dict[str, int] = {}  # view instance -> the height last written for it

    def resized(self, view: ViewDriver, height: int) -> None:
        """A view of a conversation was given ``height`` inline (a pinned one never waits as a placeholder)."""
        if self.journal is None or view.instance is None or view.conversation is None or view.pinned:
            return
        if view.session.display_mode != "inline" or self._kept.get(view.instance) == height:
            return
        self._kept[view.instance] = height
        self.journal.run(self.journal.conversations.save_view_heights, view.conversation, {view.instance: height})
