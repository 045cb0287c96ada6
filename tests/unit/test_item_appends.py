"""Every tab's conversation items are appended together: what is queued while one write runs goes in the
next one's transaction, a wrong item fails alone, and a database that cannot take them leaves each item to
its journal's next attempt."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.exc import IntegrityError, OperationalError

from mcp_apps_host.host.tab.journal import Journal
from mcp_apps_host.store.conversations import Conversations, NewItem
from mcp_apps_host.store.db import open_database
from mcp_apps_host.store.item_appends import ItemAppends
from mcp_apps_host.values.identity import Identity


class Gate:
    """A `write` that runs each job on a worker thread once let through, one job at a time."""

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.jobs = 0

    async def write(self, fn: Callable[..., Any], *args: Any) -> Any:
        self.jobs += 1
        await self.open.wait()
        return await asyncio.to_thread(fn, *args)


def database(tmp_path: Path) -> tuple[Conversations, list[str], list[int]]:
    """A repository on a fresh SQLite file, two conversations in it, and the list its commits are counted in."""
    engine = open_database(f"sqlite:///{tmp_path / 'items.db'}")
    repo = Conversations(engine)
    own = repo.bound(Identity("ana"))
    conversations = [own.create().id, own.create().id]
    commits: list[int] = []
    event.listen(engine, "commit", lambda _conn: commits.append(1))
    return repo, conversations, commits


@pytest.mark.anyio
async def test_items_of_several_tabs_queued_during_a_write_go_in_one_transaction(tmp_path: Path) -> None:
    repo, (first, second), commits = database(tmp_path)
    gate = Gate()
    appends = ItemAppends(repo, gate.write)
    journals = [Journal(repo.bound(Identity("ana")), appends=appends) for _ in range(4)]
    keys = [journals[0].append(first, "tool-call", {"n": 0})]
    async with asyncio.timeout(30):
        while gate.jobs < 1:  # the first item's write waits for its turn
            await asyncio.sleep(0.01)
    # Three more tabs append while it waits; one of them changes its item before it is written.
    keys += [journal.append(conversation, "tool-call", {"n": n})
             for n, (journal, conversation) in enumerate(zip(journals[1:], [second, first, second], strict=True), 1)]
    for _ in range(5):
        await asyncio.sleep(0)  # each journal's writer has handed its item over
    journals[3].update(keys[3], {"n": 3, "status": "ok"})
    gate.open.set()
    async with asyncio.timeout(30):
        for journal in journals:
            await journal.call(lambda: None)
    assert gate.jobs == 2 and len(commits) == 2, (gate.jobs, commits)  # one by one: four of each
    shown = {c: [(i.kind, i.data) for i in repo.items(c)] for c in (first, second)}
    assert shown == {first: [("tool-call", {"n": 0}), ("tool-call", {"n": 2})],
                     second: [("tool-call", {"n": 1}), ("tool-call", {"n": 3, "status": "ok"})]}
    # Each journal knows its own row: a change after the write updates that row.
    journals[2].update(keys[2], {"n": 2, "status": "failed"})
    await journals[2].call(lambda: None)
    assert repo.items(first)[1].data == {"n": 2, "status": "failed"}
    for journal in journals:
        await journal.close()


@pytest.mark.anyio
async def test_what_one_tab_queued_while_a_write_runs_goes_in_the_next_write(tmp_path: Path) -> None:
    """A tab whose views call faster than a write takes must not fall behind one write per item."""
    repo, (first, _), commits = database(tmp_path)
    gate = Gate()
    appends = ItemAppends(repo, gate.write)
    written: list[tuple[int, str]] = []
    journal = Journal(repo.bound(Identity("ana")), lambda _c, item, _k, op: written.append((item, op)),
                      write=gate.write, appends=appends)
    keys = [journal.append(first, "tool-call", {"n": 0})]
    async with asyncio.timeout(30):
        while gate.jobs < 1:  # the first item's write waits for its turn
            await asyncio.sleep(0.01)
    keys += [journal.append(first, "tool-call", {"n": n}) for n in range(1, 6)]
    journal.update(keys[4], {"n": 4, "status": "ok"})  # not written yet: written once, as it is then
    gate.open.set()
    async with asyncio.timeout(30):
        await journal.call(lambda: None)
    assert (gate.jobs, len(commits)) == (2, 2), (gate.jobs, commits)  # not one of each per item
    items = repo.items(first)
    assert [i.data for i in items] == [{"n": 0}, {"n": 1}, {"n": 2}, {"n": 3}, {"n": 4, "status": "ok"}, {"n": 5}]
    assert written == [(i.id, "append") for i in items]
    # Changes of written items, queued together, are written together, each item as it was last changed.
    journal.update(keys[1], {"n": 1, "status": "ok"})
    journal.update(keys[2], {"n": 2, "status": "running"})
    journal.update(keys[2], {"n": 2, "status": "failed"})
    async with asyncio.timeout(30):
        await journal.call(lambda: None)
    assert (gate.jobs, len(commits)) == (3, 3), (gate.jobs, commits)
    assert [i.data for i in repo.items(first)][1:3] == [{"n": 1, "status": "ok"}, {"n": 2, "status": "failed"}]
    assert written[6:] == [(items[1].id, "update"), (items[2].id, "update")]
    await journal.close()


@pytest.mark.anyio
async def test_a_wrong_item_fails_alone_and_the_others_are_written(tmp_path: Path) -> None:
    repo, (first, _), _ = database(tmp_path)
    gate = Gate()
    appends = ItemAppends(repo, gate.write)
    put_back: list[NewItem] = []

    items: list[NewItem] = [(first, "tool-call", {"n": 1}),
                            ("no-such-conversation", "tool-call", {"n": 2}),  # deleted meanwhile, say
                            (first, "no-such-kind", {"n": 3}),
                            (first, "tool-call", {"n": 4})]
    pending = asyncio.ensure_future(appends.append_all([(lambda item=item: item, put_back.append) for item in items]))
    gate.open.set()
    async with asyncio.timeout(30):
        outcomes = await pending
    assert isinstance(outcomes[0], int) and isinstance(outcomes[3], int), outcomes
    assert isinstance(outcomes[1], IntegrityError) and isinstance(outcomes[2], ValueError), outcomes
    assert [i.data for i in repo.items(first)] == [{"n": 1}, {"n": 4}]
    assert [i.id for i in repo.items(first)] == [outcomes[0], outcomes[3]]
    assert put_back == [("no-such-conversation", "tool-call", {"n": 2}), (first, "no-such-kind", {"n": 3})]


class Full(Conversations):
    """A database that cannot take writes now (a full disk)."""

    def __init__(self) -> None:
        self.tried = 0

    def append_many(self, items: Any) -> list[int]:
        self.tried += 1
        raise OperationalError("INSERT", None, sqlite3.OperationalError("database or disk is full"))

    def append(self, conversation_id: str, kind: str, data: dict[str, Any]) -> int:
        raise AssertionError("a database that cannot take the batch is not tried item by item")


@pytest.mark.anyio
async def test_items_the_database_cannot_take_now_wait_for_their_journals_next_attempt() -> None:
    repo = Full()
    appends = ItemAppends(repo, asyncio.to_thread)
    put_back: list[NewItem] = []
    items: list[NewItem] = [("c", "tool-call", {"n": n}) for n in range(3)]
    async with asyncio.timeout(30):
        outcomes = await appends.append_all([(lambda item=item: item, put_back.append) for item in items])
    assert all(isinstance(o, OperationalError) for o in outcomes), outcomes
    assert put_back == items and repo.tried == 1


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_a_batch_of_items_gets_each_item_its_own_row_id(store: str, tmp_path: Path,
                                                        request: pytest.FixtureRequest) -> None:
    """The ids of a batch come back from one statement: each must be its own item's, in the order given, or a
    journal would update another item's row."""
    url = (request.getfixturevalue("postgres").database() if store == "postgresql"
           else f"sqlite:///{tmp_path / 'items.db'}")
    engine = open_database(url)
    try:
        repo = Conversations(engine)
        own = repo.bound(Identity("ana"))
        first, second = own.create().id, own.create().id
        items: list[NewItem] = [(first if n % 3 else second, "tool-call", {"n": n}) for n in range(12)]
        ids = repo.append_many(items)
        stored = {i.id: i.data for c in (first, second) for i in repo.items(c)}
        assert [stored[i] for i in ids] == [data for _, _, data in items]
        assert ids == sorted(ids)
    finally:
        engine.dispose()
