"""A view's timers (its handshake's, and each question the host puts to it) are let go once they are due:
a view that lives long and is asked often keeps none of the past ones."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from mcp_apps_host.settings import Limits
from mcp_apps_host.views import events as ev
from tests.unit.test_lazy_views import TOOL, FakeViews

DUE_S = 0.05


def tools_lists(views: FakeViews, handle: str) -> list[dict[str, Any]]:
    return [m for m in views.posted.get(handle, []) if m.get("method") == "tools/list"]


@pytest.mark.anyio
async def test_timers_that_are_due_are_not_kept():
    views = FakeViews(max_live=5)
    views.host.limits = Limits(max_live_views=5, app_tool_call_timeout=DUE_S, view_init_timeout=DUE_S)
    views.ports = replace(views.ports, news=SimpleNamespace(app_tools_changed=lambda view, tools: None))
    view = views.mount(1, TOOL, template="t")
    for message in ({"jsonrpc": "2.0", "method": "ui/notifications/sandbox-proxy-ready"},
                    {"jsonrpc": "2.0", "id": 0, "method": "ui/initialize",
                     "params": {"appInfo": {}, "appCapabilities": {"tools": {}}}},
                    {"jsonrpc": "2.0", "method": "ui/notifications/initialized"}):
        view.drive(ev.FromView(message))
    # The view's tools change twenty times; each time the host lists them (a question with a time limit),
    # and the view answers at once.
    for _ in range(20):
        asked = tools_lists(views, view.handle)[-1]
        view.drive(ev.FromView({"jsonrpc": "2.0", "id": asked["id"], "result": {"tools": []}}))
        view.drive(ev.FromView({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
    assert len(tools_lists(views, view.handle)) == 21
    assert view.timers  # the last question's limit, and those not due yet
    loop = asyncio.get_running_loop()
    last_due = max(timer.when() for timer in view.timers)
    while loop.time() <= last_due:  # until every limit set so far has come
        await asyncio.sleep(last_due - loop.time() + 0.01)
    assert view.timers == set()
