"""`mcp-apps-host/later-results` in a real browser: a view whose app declares the capability is given a
later `/call` of its tool, so the conversation keeps one view, showing the newest result, and the later
call's card names that view."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from harness import call_tool, view_frame, wait_view
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "servers.py"


def test_a_second_call_updates_the_open_view_and_its_card_names_it(start_host, page_for):
    host = start_host(servers={"later": shlex.join([sys.executable, str(FIXTURES), "later"])})
    page = page_for(host)
    views = page.locator('[data-testid=view][data-server="later"][data-tool="show-later"]')
    cards = page.locator('[data-testid=call][data-server="later"][data-tool="show-later"]')

    call_tool(page, "later", "show-later", {"text": "first"})
    view = wait_view(page, "later", "show-later")
    expect(view_frame(view).locator("#latest")).to_have_text("first")
    handle = view.get_attribute("data-view")
    assert handle

    call_tool(page, "later", "show-later", {"text": "second"})
    expect(cards).to_have_count(2)
    second = cards.nth(1)
    expect(second).to_have_attribute("data-state", "done")
    expect(second).to_have_attribute("data-delivered-to", handle)
    expect(second.locator("[data-testid=call-delivered]")).to_contain_text("open view above")
    expect(view_frame(view).locator("#latest")).to_have_text("second")
    expect(views).to_have_count(1)
    expect(cards.first).not_to_have_attribute("data-delivered-to", handle)
