"""A conversation survives a reload and a restart of the host, its views rendered again from the stored template."""

from __future__ import annotations

import sys

import pytest
from harness import call_tool, server_list, view_frame, view_locator, wait_view

pytestmark = pytest.mark.browser

CHART = f"{sys.executable} -m mcp_apps_host.demo.chart"


def chart_ready(page):
    view = wait_view(page, "chart", "show-chart", timeout=30_000)
    frame = view_frame(view)
    frame.get_by_text("Active users").first.wait_for(timeout=20_000)
    return view


def test_reload_and_restart_bring_the_conversation_back(start_host, page_for, tmp_path):
    db = f"sqlite:///{tmp_path}/keep.db"
    host = start_host(servers={"chart": CHART}, extra_args=["--db", db])
    page = page_for(host)
    call_tool(page, "chart", "show-chart", {"metric": "users"})
    chart_ready(page)

    page.reload()
    page.locator("[data-testid=chat-input]").wait_for()
    chart_ready(page)
    assert view_locator(page, "chart", "show-chart").count() == 1

    host.close()
    # The server is gone after the restart (its command no longer runs): the view can only be
    # drawn from the template stored with the conversation.
    again = start_host(servers={"chart": "/nonexistent/chart-server"}, extra_args=["--db", db])
    page2 = page_for(again, wait_ready=False)
    chart_ready(page2)
    assert {s["name"]: s["status"] for s in server_list(page2, again)}["chart"] != "ready"
    assert page2.get_by_text("Active users over the last", exact=False).count() >= 1  # the tool result text
