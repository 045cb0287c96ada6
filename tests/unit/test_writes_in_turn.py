"""On SQLite one writer holds the database at a time. A write made on another thread while the audit writer
commits waits for the lock in SQLite's busy handler, which sleeps 1, 2, 5, 10, … ms at a time; a view's
mount, a pin or a kept state waited with it (a mount once took 42 ms instead of 2). So these writes take
their turn on the audit writer's own thread between its commits: the template's pin and the template kept
for replays (a mount), the view's record, a view pinned, a view's kept state, the conversation's items."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcp_apps_host.store.conversations import Conversations, OwnConversations
from mcp_apps_host.store.pins import OwnPins
from mcp_apps_host.store.view_host_states import OwnViewHostStates
from mcp_apps_host.store.view_pins import OwnViewPins
from mcp_apps_host.store.view_records import ViewInstances
from tests.unit.tabdriver import open_tab, reply_to
from tests.unit.test_failing_servers import call
from tests.unit.test_later_results import mounted_for
from tests.unit.test_view_host_state import bring_up, rec_app

pytestmark = pytest.mark.anyio

WRITES = {"the template's pin": (OwnPins, "pin_first"), "the template kept": (OwnConversations, "save_template"),
          "the view's record": (ViewInstances, "add"), "the view's state": (OwnViewHostStates, "set"),
          "a conversation item": (Conversations, "append_many"), "a view pinned": (OwnViewPins, "pin")}


def on_threads(monkeypatch: pytest.MonkeyPatch) -> dict[str, set[str]]:
    """Which threads each write of WRITES ran on."""
    seen: dict[str, set[str]] = {}

    def spy(what: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            seen.setdefault(what, set()).add(threading.current_thread().name)
            return fn(*args, **kwargs)
        return wrapped

    for what, (cls, name) in WRITES.items():
        monkeypatch.setattr(cls, name, spy(what, getattr(cls, name)))
    return seen


async def test_what_a_view_writes_on_sqlite_takes_its_turn_on_the_audit_writers_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    seen = on_threads(monkeypatch)
    async with open_tab(rec_app(tmp_path)) as tab:
        call_id = await call(tab, "rec", "record")
        view = (await tab.until(mounted_for(call_id)))["view"]
        await bring_up(tab, view)
        tab.put({"type": "view-message", "view": view, "message": {
            "jsonrpc": "2.0", "id": 5, "method": "mcp-apps-host/state/set", "params": {"state": {"draft": "hi"}}}})
        assert "result" in (await tab.until(reply_to(view, 5)))["message"]
        tab.put({"type": "view-pin", "view": view, "pinned": True})
        await tab.until(lambda f: f["type"] == "view-pinned" and f["view"] == view and f["pinned"] is True)
    assert set(seen) == set(WRITES), f"writes not seen: {set(WRITES) - set(seen)}"
    elsewhere = {what: threads for what, threads in seen.items() if threads != {"audit-writer"}}
    assert not elsewhere, f"written on another thread than the audit writer's: {elsewhere}"
