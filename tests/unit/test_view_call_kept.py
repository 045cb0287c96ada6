"""A view's own call is kept in the conversation once: as it ended when it ends within the time its card is put
off, running and then ended when it lasts longer (so a call still running is on record while it runs)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from mcp_apps_host.host.tab.runner import VIEW_CARD_AFTER_S
from mcp_apps_host.store.conversations import Conversations, NewItem
from tests.unit.tabdriver import Socket, app_for, open_tab, reply_to
from tests.unit.test_failing_servers import failing, ready_view

pytestmark = pytest.mark.anyio


def record_writes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str]]:
    """Each write of a view's call item: (append or update, its tool, its status), on the thread that writes."""
    writes: list[tuple[str, str, str]] = []
    append_many, update_items = Conversations.append_many, Conversations.update_items

    def note(op: str, data: dict[str, Any]) -> None:
        if data.get("source") == "view":
            writes.append((op, data["tool"], data["status"]))

    def append(self: Conversations, items: list[NewItem]) -> list[int]:
        for _, _, data in items:
            note("append", data)
        return append_many(self, items)

    def update(self: Conversations, changes: list[tuple[int, dict[str, Any]]]) -> None:
        for _, data in changes:
            note("update", data)
        update_items(self, changes)

    monkeypatch.setattr(Conversations, "append_many", append)
    monkeypatch.setattr(Conversations, "update_items", update)
    return writes


async def view_calls(tab: Socket, view: str, request_id: int, tool: str, arguments: dict[str, Any]) -> None:
    tab.put({"type": "view-message", "view": view, "message": {
        "jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}})
    assert "result" in (await tab.until(reply_to(view, request_id)))["message"]


async def until_written(writes: list[tuple[str, str, str]], write: tuple[str, str, str]) -> None:
    try:
        async with asyncio.timeout(30):
            while write not in writes:
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"{write} was not written; the writes: {writes}") from None


async def test_a_view_call_is_kept_once_as_it_ended_unless_it_outlasts_its_card(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch):
    writes = record_writes(monkeypatch)
    async with open_tab(app_for({"fine": failing("fine")}, f"sqlite:///{tmp_path}/h.db")) as tab:
        view = await ready_view(tab, "fine", "fine-view")
        # Longer than the writes wait for company (5 ms), shorter than the card is put off.
        short = VIEW_CARD_AFTER_S / 3
        await view_calls(tab, view, 10, "pause", {"seconds": short})
        await until_written(writes, ("append", "pause", "ok"))
        await view_calls(tab, view, 11, "pause", {"seconds": VIEW_CARD_AFTER_S * 3})
        await until_written(writes, ("update", "pause", "ok"))
    assert writes == [("append", "pause", "ok"), ("append", "pause", "running"), ("update", "pause", "ok")], writes
