"""A view keeps its own state in the host (`mcp-apps-host/state/get` and `/set`, beyond the spec): per view
instance and person, read back by the same instance after a reload and after a restart of the host, never
by another view instance (nor another person: tests/unit/test_owned_stores.py). Too large a state is
refused naming the limit, and the old one stays. The capability is advertised with its limit; the
requests are in the audit trail."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_apps_host.settings import Limits
from mcp_apps_host.web.embed import HostApp
from tests.unit.tabdriver import Socket, app_for, open_tab, reply_to
from tests.unit.test_failing_servers import call
from tests.unit.test_later_results import REC, mounted_for

pytestmark = pytest.mark.anyio

STATE = "mcp-apps-host/state"


def rec_app(tmp_path: Path, max_bytes: int = 64 * 1024) -> HostApp:
    return app_for({"rec": REC}, f"sqlite:///{tmp_path}/h.db", limits=Limits(max_view_state_bytes=max_bytes))


async def bring_up(tab: Socket, view: str) -> dict[str, Any]:
    """The view's handshake; what the host said it offers."""
    tab.put({"type": "view-message", "view": view, "message": {
        "jsonrpc": "2.0", "method": "ui/notifications/sandbox-proxy-ready", "params": {}}})
    tab.put({"type": "view-message", "view": view, "message": {
        "jsonrpc": "2.0", "id": 1, "method": "ui/initialize",
        "params": {"appInfo": {"name": "t", "version": "1"}, "appCapabilities": {}, "protocolVersion": "2026-01-26"}}})
    init = (await tab.until(reply_to(view, 1)))["message"]
    tab.put({"type": "view-message", "view": view,
             "message": {"jsonrpc": "2.0", "method": "ui/notifications/initialized"}})
    return dict(init["result"]["hostCapabilities"])


async def ask(tab: Socket, view: str, msg_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    tab.put({"type": "view-message", "view": view,
             "message": {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}})
    return dict((await tab.until(reply_to(view, msg_id)))["message"])


async def kept(tab: Socket, view: str, msg_id: int) -> Any:
    answer = await ask(tab, view, msg_id, f"{STATE}/get", {})
    assert "result" in answer, answer
    return answer["result"]["state"]


async def new_view(tab: Socket, text: str) -> str:
    view = str((await tab.until(mounted_for(await call(tab, "rec", "record", {"text": text}))))["view"])
    await bring_up(tab, view)
    return view


async def replayed_views(tab: Socket, count: int) -> list[str]:
    """The views a reload of the conversation mounted again, in order, each brought up. Views booted ahead are
    mounted too, with no call (`callId` null), and may come first when the server connects meanwhile."""
    def replays(g: dict[str, Any]) -> bool:
        return g["type"] == "view-mount" and g.get("callId") is not None

    await tab.until(lambda f: len(tab.frames(replays)) >= count)
    views = [str(f["view"]) for f in tab.frames(replays)][:count]
    for view in views:
        await bring_up(tab, view)
    return views


async def test_a_view_gets_back_what_it_kept_after_a_reload_and_a_restart_and_no_other_view_does(tmp_path: Path):
    app = rec_app(tmp_path)
    async with app.lifespan():
        async with open_tab(app, started=True) as tab:
            first = await new_view(tab, "one")
            assert await kept(tab, first, 10) is None
            state = {"page": 3, "filter": "blue", "open": [1, 2], "note": "héllo"}
            assert (await ask(tab, first, 11, f"{STATE}/set", {"state": state}))["result"] == {}
            assert await kept(tab, first, 12) == state
            second = await new_view(tab, "two")
            assert await kept(tab, second, 10) is None  # another call's view is another instance
            await ask(tab, second, 11, f"{STATE}/set", {"state": "second's"})
        async with open_tab(app, started=True) as again:  # a reload: both views are mounted anew
            first_again, second_again = await replayed_views(again, 2)
            assert first_again != first
            assert await kept(again, first_again, 10) == state
            assert await kept(again, second_again, 10) == "second's"
    audit = app.host.audit
    assert audit is not None
    rows = [r for r in audit.query(server="rec", direction="view->host") if r["method"] == f"{STATE}/set"]
    assert {r["view"] for r in rows} == {first, second}

    restarted = rec_app(tmp_path)  # the same database, a new process's host
    async with restarted.lifespan(), open_tab(restarted, started=True) as tab:
        first_now, _ = await replayed_views(tab, 2)
        assert await kept(tab, first_now, 10) == state
        assert (await ask(tab, first_now, 11, f"{STATE}/set", {"state": None}))["result"] == {}  # forgotten
        assert await kept(tab, first_now, 12) is None


async def test_the_limit_is_advertised_and_a_larger_state_is_refused_keeping_the_old(tmp_path: Path):
    app = rec_app(tmp_path, max_bytes=100)
    async with app.lifespan(), open_tab(app, started=True) as tab:
        view = str((await tab.until(mounted_for(await call(tab, "rec", "record", {"text": "one"}))))["view"])
        offered = await bring_up(tab, view)
        assert offered["experimental"][STATE] == {"maxBytes": 100}
        await ask(tab, view, 11, f"{STATE}/set", {"state": {"small": True}})
        big = "x" * 100
        assert len(json.dumps(big)) > 100
        refused = await ask(tab, view, 12, f"{STATE}/set", {"state": big})
        assert refused["error"]["code"] == -32602, refused
        assert "larger than max_view_state_bytes (100)" in refused["error"]["message"]
        assert await kept(tab, view, 13) == {"small": True}
        missing = await ask(tab, view, 14, f"{STATE}/set", {})
        assert missing["error"]["code"] == -32602 and '"state"' in missing["error"]["message"], missing
