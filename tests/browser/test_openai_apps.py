"""A widget written for the OpenAI Apps SDK (text/html+skybridge, window.openai) renders in the host
through the shim, calls a tool, and keeps its widget state across a reload; every step is an MCP Apps
message the host checks and records like any view's."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest
from harness import REPO, HostLauncher, call_tool, view_frame, wait_view
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

PIZZAZ = f"{sys.executable} {REPO / 'tests' / 'fixtures' / 'servers.py'} pizzaz"


def test_an_apps_sdk_widget_renders_calls_a_tool_and_keeps_its_state(
        start_host: HostLauncher, page_for: Callable[..., Page]) -> None:
    host = start_host({"pizzaz": PIZZAZ})
    page = page_for(host)
    call_tool(page, "pizzaz", "pizza-list", {"pizzaTopping": "mushroom"})
    view = wait_view(page, "pizzaz", "pizza-list")
    app = view_frame(view)
    # toolOutput and toolInput reached window.openai, and the widget re-rendered on openai:set_globals.
    expect(app.locator("#title")).to_have_text("Best mushroom pizza")
    expect(app.locator("#places li")).to_have_count(3)
    expect(app.locator("#mode")).to_contain_text('input: {"pizzaTopping":"mushroom"}')
    expect(app.locator("#mode")).to_contain_text("theme: light")

    # callTool: the app-only pizza-order tool (widgetAccessible, private) runs through the host.
    app.locator("#order").click()
    expect(app.locator("#ordered")).to_have_text('Ordered: one mushroom pizza / {"ordered":"mushroom"}')
    card = page.locator("[data-testid=call][data-source=view][data-tool=pizza-order]")
    expect(card).to_have_attribute("data-state", "done")
    # A tool the widget may not call is refused by the host, whatever the shim is asked.
    app.locator("#peek").click()
    expect(app.locator("#secret")).to_contain_text("Secret refused: tool 'pizza-secret' of server 'pizzaz' is not "
                                                   "visible to apps")
    # requestDisplayMode: the shim declared fullscreen, so the host grants it.
    app.locator("#expand").click()
    expect(app.locator("#mode")).to_have_attribute("data-granted", "fullscreen")
    expect(view).to_have_attribute("data-display-mode", "fullscreen")
    view.locator("[data-testid=fullscreen-close]").click()
    expect(view).to_have_attribute("data-display-mode", "inline")

    # setWidgetState: shown by the widget, given to the model as the view's context, kept with the view.
    app.locator("#fav").click()
    expect(app.locator("#favorite")).to_have_text("Favorite: Nice Slice (mushroom)")
    expect(view.locator("[data-testid=view-context]")).to_contain_text("Nice Slice (mushroom)")

    audit = page.request.get(f"{host.origin}/api/audit?format=json&server=pizzaz&method=tools/call").json()["events"]
    from_view = [e for e in audit if e["direction"] == "view->host"]
    assert {e["decision"] for e in from_view} >= {"allowed", "refused"}, from_view

    # A reload replays the conversation: the widget comes back from the stored template with its state.
    page.reload()
    view = wait_view(page, "pizzaz", "pizza-list")
    app = view_frame(view)
    expect(app.locator("#title")).to_have_text("Best mushroom pizza")
    expect(app.locator("#favorite")).to_have_text("Favorite: Nice Slice (mushroom)")
