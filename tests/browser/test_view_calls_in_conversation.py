"""A view's own calls in the conversation, in a real browser: kept in one closed line per stretch of the
conversation (a view paging or polling its server makes them by the hundred), each call's card inside it,
so the column stays readable and the view the person is using is not pushed away by its own calls."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from harness import call_tool, view_frame, wait_view
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

REC = shlex.join([sys.executable, str(Path(__file__).resolve().parent.parent / "fixtures" / "servers.py"), "rec"])


def test_a_views_own_calls_are_kept_in_one_closed_line_that_does_not_move_the_view(start_host, page_for):
    host = start_host(servers={"rec": REC})
    page = page_for(host)
    call_tool(page, "rec", "record", {"action": "calls", "tool": "rec-app-only", "text": "page", "n": 1})
    view = wait_view(page, "rec", "record")
    frame = view_frame(view)
    frame.locator('[data-check="calls-done"]').wait_for(state="attached", timeout=20_000)
    group = page.locator("[data-testid=view-calls][data-server=rec]")
    expect(group).to_have_count(1)
    expect(group.locator("[data-testid=view-calls-count]")).to_have_text("1 call from its view")
    height = group.evaluate("g => g.getBoundingClientRect().height")
    scroller = page.locator("[data-testid=conversation]")
    tall = scroller.evaluate("s => s.scrollHeight")

    # The same view calls again and again (a person paging through it): the calls join that line, closed.
    call_tool(page, "rec", "record", {"action": "calls", "tool": "rec-app-only", "text": "more", "n": 6})
    second = view_frame(wait_view(page, "rec", "record"))
    expect(second.locator('[data-check="calls-done"]')).to_have_text("6", timeout=20_000)
    groups = page.locator("[data-testid=view-calls][data-server=rec]")
    expect(groups).to_have_count(2)  # the person's second call came between: a line of its own after it
    latest = groups.last
    expect(latest.locator("[data-testid=view-calls-count]")).to_have_text("6 calls from its view")
    expect(latest.locator("[data-testid=view-calls-latest]")).to_have_text("last: rec-app-only — Done")
    expect(latest).to_have_attribute("data-state", "done")
    cards = latest.locator("[data-testid=call][data-source=view][data-tool=rec-app-only]")
    expect(cards).to_have_count(6)
    for i in range(6):
        expect(cards.nth(i)).to_have_attribute("data-state", "done")
    expect(cards.last.locator("[data-testid=call-result]")).to_contain_text("app only more 6")
    assert latest.get_attribute("open") is None and not cards.first.is_visible()
    # Six calls took the column one line, as one call did, not a card each.
    assert latest.evaluate("g => g.getBoundingClientRect().height") == height
    grew = scroller.evaluate("s => s.scrollHeight") - tall
    second_call = page.locator("[data-testid=call][data-source=person]").last.evaluate(
        "c => c.getBoundingClientRect().height")
    assert grew <= second_call + 2 * height + 40, (grew, second_call, height)

    # Opened, the line shows each call's card, in order.
    latest.locator(":scope > summary").click()
    expect(cards.first).to_be_visible()
    expect(cards.first.locator("[data-testid=call-result]")).to_contain_text("app only more 1")
