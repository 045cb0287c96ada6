"""The conversation journal writes items in order, and an item that changes before it is written is
written once, as it is by then."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from mcp_apps_host.host.tab.journal import Journal


class Repo:
    """The conversation store's writes, recorded."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, Any, dict[str, Any]]] = []

    def append(self, conversation: str, kind: str, data: dict[str, Any]) -> int:
        self.writes.append(("append", kind, data))
        return len(self.writes)

    def update_items(self, changes: list[tuple[int, dict[str, Any]]]) -> None:
        self.writes += [("update", item_id, data) for item_id, data in changes]


@pytest.mark.anyio
async def test_an_item_updated_before_it_is_written_is_written_once_as_it_is_then() -> None:
    repo = Repo()
    written: list[tuple[int, str]] = []
    journal = Journal(repo, lambda conversation, item, kind, op: written.append((item, op)))  # type: ignore[arg-type]
    first = journal.append("c", "tool-call", {"status": "running"})
    second = journal.append("c", "tool-call", {"status": "running"})
    # Nothing was awaited yet, so the journal's writer has not taken either: both are still queued.
    journal.update(second, {"status": "ok"})
    journal.update(first, {"status": "ok", "n": 1})
    await journal.call(lambda: None)
    assert repo.writes == [("append", "tool-call", {"status": "ok", "n": 1}),
                           ("append", "tool-call", {"status": "ok"})]
    assert written == [(1, "append"), (2, "append")]
    # Once written, a change is an update of the row.
    journal.update(first, {"status": "failed"})
    await journal.call(lambda: None)
    assert repo.writes[-1] == ("update", 1, {"status": "failed"}) and written[-1] == (1, "update")
    await journal.close()


@pytest.mark.anyio
async def test_an_item_updated_while_its_write_waits_for_its_turn_is_written_as_it_is_then() -> None:
    """The writes may run where they take turns with others (the audit writer): the data is read as the
    write starts, not as the journal hands it over."""
    repo = Repo()
    turn = asyncio.Event()

    async def write(fn: Any, *args: Any) -> Any:
        await turn.wait()
        return fn(*args)

    journal = Journal(repo, write=write)  # type: ignore[arg-type]
    key = journal.append("c", "tool-call", {"status": "running"})
    for _ in range(5):
        await asyncio.sleep(0)  # the journal's writer has handed the append over; it waits for its turn
    journal.update(key, {"status": "ok"})
    turn.set()
    await journal.call(lambda: None)
    assert repo.writes == [("append", "tool-call", {"status": "ok"})]
    await journal.close()


@pytest.mark.anyio
async def test_what_the_caller_edits_after_handing_it_over_is_not_written() -> None:
    repo = Repo()
    journal = Journal(repo)  # type: ignore[arg-type]
    data = {"status": "running"}
    key = journal.append("c", "tool-call", data)
    data["status"] = "edited"
    journal.update(key, {"status": "ok"})
    data["status"] = "edited again"
    await journal.call(lambda: None)
    assert [w[2] for w in repo.writes] == [{"status": "ok"}]
    await journal.close()


class Away(Repo):
    """A store that cannot take writes (a full disk) until ``back`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.back = False
        self.refused = 0

    def append(self, conversation: str, kind: str, data: dict[str, Any]) -> int:
        if not self.back:
            self.refused += 1
            raise OperationalError("INSERT", None, sqlite3.OperationalError("database or disk is full"))
        return super().append(conversation, kind, data)


@pytest.mark.anyio
async def test_a_write_the_database_cannot_take_now_is_tried_again_in_order() -> None:
    repo = Away()
    journal = Journal(repo, wait=120)  # type: ignore[arg-type]
    first = journal.append("c", "tool-call", {"status": "running"})
    journal.append("c", "message", {"text": "after it"})
    async with asyncio.timeout(60):
        while repo.refused < 3:  # tried again, not given up
            await asyncio.sleep(0.05)
    journal.update(first, {"status": "ok"})  # a change meanwhile is written with it
    repo.back = True
    async with asyncio.timeout(60):
        await journal.call(lambda: None)
    assert repo.writes == [("append", "tool-call", {"status": "ok"}), ("append", "message", {"text": "after it"})]
    await journal.close()


@pytest.mark.anyio
async def test_a_write_is_given_up_after_the_wait_and_said_so(caplog: pytest.LogCaptureFixture) -> None:
    repo = Away()
    journal = Journal(repo, wait=1.0)  # type: ignore[arg-type]
    journal.append("c", "tool-call", {"status": "running"})
    async with asyncio.timeout(60):
        await journal.call(lambda: None)  # queued after the write: runs once it was given up
    assert repo.writes == [] and repo.refused >= 2
    assert any("the database is full" in r.getMessage() and "database_wait_timeout" in r.getMessage()
               for r in caplog.records)
    repo.back = True
    journal.append("c", "message", {"text": "next"})  # the journal goes on
    async with asyncio.timeout(60):
        await journal.call(lambda: None)
    assert repo.writes == [("append", "message", {"text": "next"})]
    await journal.close()
