"""A template never seen is kept in the database for replays (`Mounting._save`), and the call's view starts
while that write runs: on a busy writer it took tens of milliseconds, and the view's mount waited for it. The
call's item names the view only once the template is kept, so another tab of the conversation, told of the
item, finds the template by its hash."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from mcp_apps_host.host.tab.mounting import Mounting
from mcp_apps_host.store.conversations import Conversations, OwnConversations
from mcp_apps_host.values.templates import Template
from tests.unit.tabdriver import open_tab
from tests.unit.test_failing_servers import call
from tests.unit.test_later_results import mounted_for, posted
from tests.unit.test_view_host_state import bring_up, rec_app

pytestmark = pytest.mark.anyio

HELD_FOR_S = 30.0  # the longest the test holds the template's write: ample, and never a hang


def hold_template_writes(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """Keeping a template (`Mounting._save`) waits until the returned event is set."""
    release = asyncio.Event()
    save = Mounting._save

    async def held_save(self: Mounting, template: Template) -> None:
        await asyncio.wait_for(release.wait(), HELD_FOR_S)
        await save(self, template)

    monkeypatch.setattr(Mounting, "_save", held_save)
    return release


async def test_the_view_starts_while_its_template_is_kept_and_its_item_names_it_only_once_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    loop = asyncio.get_running_loop()
    release = hold_template_writes(monkeypatch)
    ended, named = asyncio.Event(), asyncio.Event()
    happened: list[str] = []  # in order: the template kept, items written that name the view
    save_template, append_many, update_items = (OwnConversations.save_template, Conversations.append_many,
                                                Conversations.update_items)

    def kept(self: OwnConversations, *args: Any) -> None:
        save_template(self, *args)
        happened.append("template kept")

    def written(data: dict[str, Any]) -> None:  # on the thread that writes
        if data.get("view"):
            happened.append("item names the view")
            loop.call_soon_threadsafe(named.set)
        if data.get("status") == "ok":
            loop.call_soon_threadsafe(ended.set)

    def append(self: Conversations, items: list[tuple[str, str, dict[str, Any]]]) -> list[int]:
        for _, _, data in items:
            written(data)
        return append_many(self, items)

    def update(self: Conversations, changes: list[tuple[int, dict[str, Any]]]) -> None:
        for _, data in changes:
            written(data)
        update_items(self, changes)

    monkeypatch.setattr(OwnConversations, "save_template", kept)
    monkeypatch.setattr(Conversations, "append_many", append)
    monkeypatch.setattr(Conversations, "update_items", update)
    try:
        async with open_tab(rec_app(tmp_path)) as tab:
            call_id = await call(tab, "rec", "record")
            mount = await tab.until(mounted_for(call_id), timeout=HELD_FOR_S / 2)
            assert mount["type"] == "view-mount" and mount["templateSha256"], mount
            # The call ends and its item is written while the template is still not kept: it names no view yet.
            await asyncio.wait_for(ended.wait(), HELD_FOR_S)
            assert happened == [], happened
            release.set()
            await asyncio.wait_for(named.wait(), HELD_FOR_S)
    finally:
        release.set()
    assert happened[:2] == ["template kept", "item names the view"], happened


async def test_a_call_cancelled_while_its_template_is_kept_tells_its_view(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    release = hold_template_writes(monkeypatch)
    try:
        async with open_tab(rec_app(tmp_path)) as tab:
            call_id = await call(tab, "rec", "record")
            view = (await tab.until(mounted_for(call_id), timeout=HELD_FOR_S / 2))["view"]
            tab.put({"type": "cancel", "callId": call_id})
            await bring_up(tab, view)
            cancelled = await tab.until(posted(view, "ui/notifications/tool-cancelled"), timeout=HELD_FOR_S / 2)
            assert cancelled["message"]["params"]["reason"] == "the call was cancelled", cancelled
    finally:
        release.set()
