"""Writes a tab's conversation items in order, off the event loop, without holding up the page.

An item updated before its append is written is appended as it is by then: a call that ends before
its record was written (a view's own calls, mostly) costs one write, not two. The data is taken as the
write starts, which may be on another thread (the audit writer's, `AuditLog.run_beside`), hence the lock.
Given the worker's `ItemAppends`, the items of all its tabs are appended together.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ...settings import DEFAULT_LIMITS
from ...store.conversations import Conversation, NewItem, OwnConversations
from ...store.item_appends import ItemAppends
from ...store.outage import retried
from ...values.calls import CallRecord

T = TypeVar("T")


# Told of every item once it is written: (conversation, item id, kind, "append" | "update").
Written = Callable[[str, int, str, str], None]
# Runs a blocking write off the event loop and returns its result.
Write = Callable[..., Awaitable[Any]]
# Hear the news of a conversation (another tab's items), until the returned function is called.
Watch = Callable[[str], Callable[[], None]]


class Journal:
    """Append and update conversation items; a key stands for the row id until it is known."""

    def __init__(self, conversations: OwnConversations, on_written: Written | None = None,
                 write: Write | None = None, wait: float = DEFAULT_LIMITS.database_wait_timeout,
                 appends: ItemAppends | None = None) -> None:
        self.conversations = conversations
        self._wait = wait  # seconds a write is tried again while the database cannot take it
        self.on_written = on_written
        self._write: Write = write or asyncio.to_thread  # where blocking writes run
        self._appends = appends  # the worker's appends of every tab's items together; None: one by one
        self._kinds: dict[int, tuple[str, str]] = {}  # key -> (conversation, kind)
        self._queue: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
        self._ids: dict[int, int] = {}
        # Appends still queued, by key: (conversation, kind, data), where an update replaces the data.
        self._waiting: dict[int, NewItem] = {}
        self._lock = threading.Lock()  # an update and the write that takes the data, one at a time
        self._keys = itertools.count()
        self._task = asyncio.get_running_loop().create_task(self._writer())

    def append(self, conversation: str, kind: str, data: dict[str, Any]) -> int:
        key = next(self._keys)
        self._waiting[key] = (conversation, kind, dict(data))  # a snapshot: callers keep editing
        self._queue.put_nowait(("append", key))
        return key

    def update(self, key: int, data: dict[str, Any]) -> None:
        with self._lock:
            waiting = self._waiting.get(key)
            if waiting is not None:  # not written yet: it is written as it is now
                self._waiting[key] = (waiting[0], waiting[1], dict(data))
                return
        self._queue.put_nowait(("update", key, dict(data)))

    def run(self, fn: Callable[..., Any], *args: Any) -> None:
        """Queue a repository call whose result nobody waits for."""
        self._queue.put_nowait(("run", fn, args))

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a repository call after everything queued before it (reads see earlier writes)."""
        done: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(("call", done, fn, args))
        return await done

    async def _writer(self) -> None:
        while True:
            ops = [await self._queue.get()]
            while not self._queue.empty():
                ops.append(self._queue.get_nowait())
            for op in self._together(ops):
                await self._attempt(op)

    def _together(self, ops: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        """Queued ops in order, the appends next to each other as one (given the worker's `ItemAppends`) and the
        updates next to each other as one: a tab whose views call faster than one write per call would
        otherwise fall ever further behind, its items kept in memory and on record seconds late."""
        out: list[tuple[Any, ...]] = []
        for op in ops:
            kind = "appends" if op[0] == "append" and self._appends is not None else \
                "updates" if op[0] == "update" else None
            if kind is None:
                out.append(op)
            elif out and out[-1][0] == kind:
                out[-1][1].append(op[1:])
            else:
                out.append((kind, [op[1:]]))
        return out

    async def _attempt(self, op: tuple[Any, ...]) -> None:
        """Run one write; a database that cannot take it now (restarting, full) is tried again, in order,
        for up to ``wait`` seconds."""
        await retried(lambda: self._run(op), "a conversation item", self._wait)

    async def _run(self, op: tuple[Any, ...]) -> None:
        if op[0] == "append":
            key = op[1]
            conversation, kind, _ = self._waiting[key]
            self._ids[key] = await self._write(self._append, key)
            self._kinds[key] = (conversation, kind)
            self._written(key, "append")
        elif op[0] == "appends":
            await self._append_all([key for (key,) in op[1]])
        elif op[0] == "updates":
            latest = {key: data for key, data in op[1] if key in self._ids}  # each item as it is last
            if latest:
                await self._write(self.conversations.update_items, [(self._ids[k], d) for k, d in latest.items()])
                for key in latest:
                    self._written(key, "update")
        elif op[0] == "run":
            _, fn, args = op
            await self._write(fn, *args)
        else:
            _, done, fn, args = op
            try:
                result = await asyncio.to_thread(fn, *args)
            except Exception as exc:  # handed to the caller
                if not done.done():
                    done.set_exception(exc)
            else:
                if not done.done():
                    done.set_result(result)

    async def _append_all(self, keys: list[int]) -> None:
        """Append items with the worker's other tabs' items; those written before a failed attempt are not
        written again when it is tried again. Raises the first failure."""
        assert self._appends is not None
        todo = [key for key in keys if key not in self._ids]
        if not todo:
            return
        kinds = {key: self._waiting[key][:2] for key in todo}
        outcomes = await self._appends.append_all([(functools.partial(self._take, key),
                                                    functools.partial(self._put_back, key)) for key in todo])
        failure: BaseException | None = None
        for key, outcome in zip(todo, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                failure = failure or outcome
                continue
            self._ids[key] = outcome
            self._kinds[key] = kinds[key]
            self._written(key, "append")
        if failure is not None:
            raise failure

    def _append(self, key: int) -> int:
        """Write an item as it is now (on the thread that writes)."""
        item = self._take(key)
        try:
            return self.conversations.append(*item)
        except Exception:
            self._put_back(key, item)
            raise

    def _take(self, key: int) -> NewItem:
        """The item as it is now, as its write starts (on the thread that writes)."""
        with self._lock:
            return self._waiting.pop(key)

    def _put_back(self, key: int, item: NewItem) -> None:
        """A failed write's item waits for the next attempt (an update meanwhile is queued after it)."""
        with self._lock:
            self._waiting.setdefault(key, item)

    def _written(self, key: int, op: str) -> None:
        if self.on_written is not None:
            conversation, kind = self._kinds[key]
            self.on_written(conversation, self._ids[key], kind, op)

    async def close(self) -> None:
        """Finish what is queued, then stop."""
        await self.call(lambda: None)
        self._task.cancel()


class ConversationLog:
    """The conversation a tab shows, and what it keeps of it (nothing, without a store)."""

    def __init__(self, conversations: OwnConversations | None, on_written: Written | None = None,
                 write: Write | None = None, watch: Watch | None = None,
                 wait: float = DEFAULT_LIMITS.database_wait_timeout, appends: ItemAppends | None = None) -> None:
        self.journal = (Journal(conversations, on_written, write, wait, appends)
                        if conversations is not None else None)
        self.current: Conversation | None = None
        self.latest = 0  # the newest item of the current conversation this tab has drawn or written
        self._watch = watch
        self._unwatch: Callable[[], None] | None = None

    def show(self, conversation: Conversation) -> None:
        """The tab shows ``conversation`` now: it hears news of that one (``watch``), no longer of the last."""
        if self._unwatch is not None:
            self._unwatch()
        if self.current is None or self.current.id != conversation.id:
            self.latest = 0
        self.current = conversation
        self._unwatch = self._watch(conversation.id) if self._watch is not None else None

    def saw(self, conversation: str, item_id: int) -> None:
        """This tab has drawn or written that item (news of items up to it is no news to it)."""
        if conversation == self.conversation_id:
            self.latest = max(self.latest, item_id)

    @property
    def conversation_id(self) -> str | None:
        return self.current.id if self.current else None

    def keep(self, kind: str, data: dict[str, Any], into: str | None = None) -> int | None:
        """Append an item to the current conversation (or to ``into``, the one it belongs to if kept later);
        the key updates it later."""
        conversation = into or self.conversation_id
        if self.journal is None or conversation is None:
            return None
        return self.journal.append(conversation, kind, data)

    def rekeep(self, key: int | None, data: dict[str, Any]) -> None:
        if self.journal is not None and key is not None:
            self.journal.update(key, data)

    def keep_call(self, record: CallRecord, into: str | None = None) -> int | None:
        return self.keep("tool-call", record.to_json(), into)

    def rekeep_call(self, key: int | None, record: CallRecord) -> None:
        self.rekeep(key, record.to_json())

    async def close(self) -> None:
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None
        if self.journal is not None:
            await self.journal.close()
