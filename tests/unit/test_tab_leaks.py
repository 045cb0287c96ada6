"""No leak per tab or per view: after tabs that each mounted views have closed, none of their tabs,
view sessions or mounted views is still alive in the host (counted by the garbage collector)."""

from __future__ import annotations

import asyncio
import gc
import sys
from pathlib import Path

import pytest

from mcp_apps_host.host.tab.tab import Tab
from mcp_apps_host.views.session import ViewSession
from tests.unit.tabdriver import Socket, app_for, open_tab, reply_to, view_handshake

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "servers.py"


def alive(kind: type) -> int:
    gc.collect()
    return sum(1 for obj in gc.get_objects() if isinstance(obj, kind))


@pytest.mark.anyio
async def test_closed_tabs_leave_no_tab_or_view_behind(tmp_path: Path):
    app = app_for({"rec": {"command": sys.executable, "args": [str(FIXTURES), "rec"], "apps": True}},
                  f"sqlite:///{tmp_path}/h.db")
    async with app.lifespan():
        for _ in range(3):
            socket = Socket()
            async with open_tab(app, socket, started=True):
                # A page opens the newest conversation and replays its views: start a fresh one.
                socket.put({"type": "conversation-new"})
                while len(socket.frames(lambda f: f["type"] == "conversation-reset")) < 2:
                    await asyncio.sleep(0.02)
                fresh = len(socket.sent)
                for n in range(3):
                    socket.put({"type": "call", "server": "rec", "tool": "record", "arguments": {"n": n}})
                # Each call's view: mounted for it, or booted ahead and adopted by it.
                views: list[str] = []
                async with asyncio.timeout(60):
                    while len(views) < 3:
                        await asyncio.sleep(0.02)
                        views = [f["view"] for f, _ in socket.sent[fresh:]
                                 if f["type"] in ("view-mount", "view-adopt") and f.get("callId") is not None]
                for i, view in enumerate(views):
                    view_handshake(socket, view, request_id=100 + i)
                    await socket.until(reply_to(view, 100 + i))
                assert alive(Tab) >= 1 and alive(ViewSession) >= 3
                assert len(app.host.views) >= 3
        # Every tab of the loop has closed: what they held is gone with them.
        assert app.host.views == {}
        assert alive(Tab) == 0
        assert alive(ViewSession) == 0
