"""The app launcher in a real browser: it lists every tool with a view (and only those) across the
ready servers, filters them, opens one through its form (no JSON) so the view renders with that input,
opens a tool without arguments at once, and works from the keyboard alone; and a view that asks to open
another view of its own server (`mcp-apps-host/open-view`), which the person allows or declines."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from harness import answer_consent, call_tool, view_frame, wait_view
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "servers.py"
# rec: record, record-slow, write-note have views (rec-app-only is for its view only); vis: vis-view and
# model-only-tool have views (app-only-tool and nobody-tool are not the person's); other: no view at all.
APPS = {("rec", "record"), ("rec", "record-slow"), ("rec", "write-note"),
        ("vis", "vis-view"), ("vis", "model-only-tool")}


def fixture(kind: str) -> str:
    return shlex.join([sys.executable, str(FIXTURES), kind])


def entries(page: Page) -> set[tuple[str, str]]:
    launcher = page.locator("[data-testid=launcher]")
    return {(e.get_attribute("data-server") or "", e.get_attribute("data-tool") or "")
            for e in launcher.locator("[data-testid=launcher-app]").all()}


def focused_testid(page: Page) -> str | None:
    return page.evaluate("() => document.activeElement && document.activeElement.dataset.testid || null")


def test_the_launcher_opening_a_view_with_form_input(start_host, page_for):
    host = start_host(servers={"rec": fixture("rec"), "vis": fixture("vis"), "other": fixture("other")})
    page = page_for(host)
    launcher = page.locator("[data-testid=launcher]")
    # The tool without a view is in the sidebar, so its absence below is the launcher's choice.
    expect(page.locator('[data-testid=tool][data-server="other"][data-tool="other-tool"]')).to_be_visible()

    page.locator("[data-testid=launcher-open]").click()
    expect(launcher).to_be_visible()
    expect(launcher.locator("[data-testid=launcher-app]")).to_have_count(len(APPS))
    assert entries(page) == APPS
    expect(launcher.locator('[data-testid=launcher-app][data-tool="write-note"]')).to_have_accessible_name(
        "write-note, from rec")

    # Filtering: by words of the name, title, description or server.
    search = launcher.locator("[data-testid=launcher-search]")
    search.fill("note")
    expect(launcher.locator("[data-testid=launcher-app]")).to_have_count(1)
    assert entries(page) == {("rec", "write-note")}
    search.fill("vis")
    expect(launcher.locator("[data-testid=launcher-app]")).to_have_count(2)
    assert entries(page) == {("vis", "vis-view"), ("vis", "model-only-tool")}
    search.fill("no such app")
    expect(launcher.locator("[data-testid=launcher-app]")).to_have_count(0)
    expect(launcher.locator("[role=status]")).to_contain_text("No app matches")
    search.fill("record")
    expect(launcher.locator("[data-testid=launcher-app]")).to_have_count(2)

    # Open one: its form, filled field by field (no JSON), then the view with that input.
    launcher.locator('[data-testid=launcher-app][data-server="rec"][data-tool="record"]').click()
    expect(launcher).to_be_hidden()
    form = page.locator("[data-testid=picker-form]")
    expect(form).to_be_visible()
    expect(page.locator("[data-testid=picker-json]")).to_have_count(0)
    form.locator("[data-field=text] input").fill("from the launcher")
    form.locator("[data-field=n] input").fill("7")
    page.locator("[data-testid=picker-submit]").click()
    expect(form).to_be_hidden()
    frame = view_frame(wait_view(page, "rec", "record"))
    expect(frame.locator('[data-check="result"]')).to_have_text(
        json.dumps({"action": "", "text": "from the launcher", "n": 7}, separators=(",", ":")))
    expect(frame.locator("li.seen", has_text="tool-input ")).to_contain_text('"text":"from the launcher"')

    # A tool without arguments opens at once: no form.
    page.locator("[data-testid=launcher-open]").click()
    launcher.locator('[data-testid=launcher-app][data-tool="vis-view"]').click()
    expect(launcher).to_be_hidden()
    wait_view(page, "vis", "vis-view")
    expect(page.locator("[data-testid=picker]")).to_be_hidden()


def test_the_launcher_from_the_keyboard(start_host, page_for):
    host = start_host(servers={"rec": fixture("rec")})
    page = page_for(host)
    launcher = page.locator("[data-testid=launcher]")
    opener = page.locator("[data-testid=launcher-open]")

    # Open with keys; the search box has focus; Escape closes and gives focus back to the opener.
    opener.focus()
    page.keyboard.press("Enter")
    expect(launcher).to_be_visible()
    assert focused_testid(page) == "launcher-search"
    page.keyboard.press("Escape")
    expect(launcher).to_be_hidden()
    assert focused_testid(page) == "launcher-open"

    # Focus stays inside the open dialog: Tab from its last entry comes round to its first control.
    page.keyboard.press("Enter")
    expect(launcher).to_be_visible()
    for _ in range(12):
        page.keyboard.press("Tab")
        inside = page.evaluate("() => !!document.activeElement.closest('[data-testid=launcher]')")
        assert inside, "Tab left the launcher"

    # Type to filter, arrow down to the entry, Enter opens its form; fill it and submit with Enter.
    page.keyboard.press("Escape")
    opener.focus()
    page.keyboard.press("Enter")
    page.keyboard.type("note")
    expect(launcher.locator("[data-testid=launcher-app]")).to_have_count(1)
    page.keyboard.press("ArrowDown")
    assert page.evaluate("() => document.activeElement.dataset.tool") == "write-note"
    page.keyboard.press("Enter")
    expect(launcher).to_be_hidden()
    form = page.locator("[data-testid=picker-form]")
    expect(form).to_be_visible()
    field = form.locator("[data-field=text] input")
    expect(field).to_be_focused()
    page.keyboard.type("typed, not JSON")
    page.keyboard.press("Enter")
    expect(form).to_be_hidden()
    wait_view(page, "rec", "write-note")
    # The picker gives focus back where the launcher was opened from.
    assert focused_testid(page) == "launcher-open"


# --------------------------------------------------------------------------- a view opens another view


def test_a_view_opens_another_view_of_its_server_with_the_persons_consent(start_host, page_for):
    host = start_host(servers={"rec": fixture("rec")})
    page = page_for(host)

    call_tool(page, "rec", "record", {"action": "open-view", "tool": "write-note", "text": "from a view"})
    asking = view_frame(wait_view(page, "rec", "record"))
    text = answer_consent(page, "open-view", allow=True, expect_text="write-note")
    assert "from a view" in text  # the person sees what the new view is given
    opened = view_frame(wait_view(page, "rec", "write-note"))
    expect(opened.locator('[data-check="result"]')).to_contain_text("noted from a view")
    expect(asking.locator('[data-check="open-view"]')).to_have_text("ok: {}")
    # It is the person's call: a card of its own in the conversation.
    expect(page.locator('[data-testid=call][data-tool="write-note"]')).to_have_count(1)

    # Declined: nothing opens, and the view hears why.
    call_tool(page, "rec", "record", {"action": "open-view", "tool": "write-note", "text": "not wanted"})
    asking = view_frame(wait_view(page, "rec", "record"))
    answer_consent(page, "open-view", allow=False)
    expect(asking.locator('[data-check="open-view"]')).to_contain_text("declined by the person")
    expect(page.locator('[data-testid=view][data-tool="write-note"]')).to_have_count(1)

    # A tool whose view only its app may show is not opened, and the person is not asked.
    call_tool(page, "rec", "record", {"action": "open-view", "tool": "rec-app-only", "text": "x"})
    asking = view_frame(wait_view(page, "rec", "record"))
    expect(asking.locator('[data-check="open-view"]')).to_contain_text("has no view a person may open")
    expect(page.locator("[data-testid=consent][data-kind=open-view]")).to_have_count(0)
