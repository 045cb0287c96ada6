"""Conversation items from every tab of a worker, appended together: the items queued while one write
runs are written by the next, in one transaction. Every call a view makes appends an item, and a
transaction of its own cost each of them more than its row.

A journal hands over how to take its item's data as the write starts (an update meanwhile is written
with it) and how to put it back when the write fails (its journal tries again, or gives up, as before).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from .conversations import Conversations, NewItem
from .outage import cannot_write

# Runs a blocking write off the event loop (the audit writer's `write_in_turn`) and returns its result.
Write = Callable[..., Awaitable[Any]]
Take = Callable[[], NewItem]
PutBack = Callable[[NewItem], None]

MOST_AT_ONCE: Final = 500  # items in one transaction: a backlog after an outage is written in steps


@dataclass(frozen=True)
class _Queued:
    take: Take
    put_back: PutBack
    done: asyncio.Future[int]


class ItemAppends:
    """One per worker, shared by its tabs' journals."""

    def __init__(self, repo: Conversations, write: Write) -> None:
        self._repo = repo
        self._write = write
        self._queued: list[_Queued] = []
        self._writer: asyncio.Task[None] | None = None

    async def append_all(self, items: list[tuple[Take, PutBack]]) -> list[int | BaseException]:
        """Append items with whatever else is queued, in order; for each its row id, or what its write raised."""
        loop = asyncio.get_running_loop()
        queued = [_Queued(take, put_back, loop.create_future()) for take, put_back in items]
        self._queued.extend(queued)
        if self._writer is None or self._writer.done():
            self._writer = loop.create_task(self._write_queued())
        return await asyncio.gather(*(q.done for q in queued), return_exceptions=True)

    async def _write_queued(self) -> None:
        while self._queued:
            batch, self._queued = self._queued[:MOST_AT_ONCE], self._queued[MOST_AT_ONCE:]
            outcomes: list[int | Exception]
            try:
                outcomes = await self._write(self._append_all, batch)
            except Exception as exc:  # the write could not run at all (the audit writer stopped, say)
                outcomes = [exc] * len(batch)
            except BaseException as exc:  # cancelled with the loop: nobody is left waiting forever
                for queued in [*batch, *self._queued]:
                    if not queued.done.done():
                        queued.done.set_exception(exc)
                self._queued = []
                raise
            for queued, outcome in zip(batch, outcomes, strict=True):
                if queued.done.done():  # its journal stopped waiting; the item is written anyway
                    continue
                if isinstance(outcome, Exception):
                    queued.done.set_exception(outcome)
                else:
                    queued.done.set_result(outcome)

    def _append_all(self, batch: list[_Queued]) -> list[int | Exception]:
        """On the thread that writes: the batch's items as they are now, in one transaction."""
        items = [queued.take() for queued in batch]
        try:
            return list(self._repo.append_many(items))
        except Exception as exc:
            if cannot_write(exc):  # each item waits for its journal's next attempt
                for queued, item in zip(batch, items, strict=True):
                    queued.put_back(item)
                return [exc] * len(batch)
        # A wrong item (its conversation deleted meanwhile, say) fails alone: the others are written one by one.
        outcomes: list[int | Exception] = []
        for queued, item in zip(batch, items, strict=True):
            try:
                outcomes.append(self._repo.append(*item))
            except Exception as exc:
                queued.put_back(item)
                outcomes.append(exc)
        return outcomes
