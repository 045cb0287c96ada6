"""The height each view's frame last had inline, kept with the view instance: a conversation replayed
after a reload or a restart draws a placeholder of that height in the view's place, so nothing below it
moves when the view is mounted again. A view's first height is written at once, later ones in batches as
views settle, not at every size change."""

from __future__ import annotations

import asyncio

from .journal import Journal
from .live import LiveView

SAVE_AFTER_S = 1.0  # a view that draws itself resizes a few times in a row: keep where it settles


class ViewHeights:
    def __init__(self, journal: Journal | None) -> None:
        self.journal = journal
        self._pending: dict[str, dict[str, int]] = {}  # conversation -> instance -> height
        self._timer: asyncio.TimerHandle | None = None
        self._sized: set[str] = set()  # view instances whose height this tab has kept

    def resized(self, view: LiveView, height: int) -> None:
        """A view of a conversation was given ``height`` inline (a pinned one never waits as a placeholder)."""
        if self.journal is None or view.instance is None or view.conversation is None or view.pinned:
            return
        if view.session.display_mode != "inline":
            return
        if view.instance not in self._sized:  # its first size is kept at once: a reload may follow
            self._sized.add(view.instance)
            self.journal.run(self.journal.conversations.save_view_heights, view.conversation, {view.instance: height})
            return
        self._pending.setdefault(view.conversation, {})[view.instance] = height
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(SAVE_AFTER_S, self.save)

    def save(self) -> None:
        """Write what is pending now (the tab closes, or the views have settled)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pending, self._pending = self._pending, {}
        if self.journal is not None:
            for conversation, heights in pending.items():
                self.journal.run(self.journal.conversations.save_view_heights, conversation, heights)
