"""Writes a tab's conversation items in order, off the event loop, without holding up the page."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..store.conversations import Conversations

log = logging.getLogger("mcp_apps_host.journal")


class Journal:
    """Append and update conversation items; a key stands for the row id until it is known."""

    def __init__(self, conversations: Conversations) -> None:
        self.conversations = conversations
        self._queue: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
        self._ids: dict[int, int] = {}
        self._next_key = 0
        self._task = asyncio.get_running_loop().create_task(self._writer())

    def append(self, conversation: str, kind: str, data: dict[str, Any]) -> int:
        key = self._next_key
        self._next_key += 1
        self._queue.put_nowait(("append", key, conversation, kind, dict(data)))  # a snapshot: callers keep editing
        return key

    def update(self, key: int, data: dict[str, Any]) -> None:
        self._queue.put_nowait(("update", key, dict(data)))

    async def call(self, fn: Any, *args: Any) -> Any:
        """Run a repository call after everything queued before it (reads see earlier writes)."""
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(("call", done, fn, args))
        return await done

    async def _writer(self) -> None:
        while True:
            op = await self._queue.get()
            try:
                if op[0] == "append":
                    _, key, conversation, kind, data = op
                    self._ids[key] = await asyncio.to_thread(self.conversations.append, conversation, kind, data)
                elif op[0] == "update":
                    _, key, data = op
                    if key in self._ids:
                        await asyncio.to_thread(self.conversations.update_item, self._ids[key], data)
                else:
                    _, done, fn, args = op
                    try:
                        result = await asyncio.to_thread(fn, *args)
                    except Exception as exc:  # noqa: BLE001 - handed to the caller
                        if not done.done():
                            done.set_exception(exc)
                    else:
                        if not done.done():
                            done.set_result(result)
            except Exception:  # noqa: BLE001 - a full disk must not break the console
                log.exception("could not write a conversation item")

    async def close(self) -> None:
        """Finish what is queued, then stop."""
        await self.call(lambda: None)
        self._task.cancel()
