"""The demo feedback form keeps its draft in the host (`mcp-apps-host/state`), per view instance: the draft
a person typed is there again after the view is torn down and mounted again, after a reload, and after a
restart of the host in another browser (the state is the host's, not the browser's); another form of the
same server starts empty."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import pytest
from harness import HostLauncher, call_tool, view_frame
from playwright.sync_api import FrameLocator, Locator, Page, expect

pytestmark = pytest.mark.browser

FORMS = f"{sys.executable} -m mcp_apps_host.demo.forms"
DRAFT = "Half-written: the charts load fast, but"


def nth_form(page: Page, n: int) -> Locator:
    return page.locator("[data-testid=view][data-tool=feedback-form]").nth(n - 1)


def ready_form(view: Locator, timeout: float = 30_000) -> FrameLocator:
    expect(view).to_have_attribute("data-state", "ready", timeout=timeout)
    form = view_frame(view)
    expect(form.locator("#name")).to_be_visible()
    return form


def in_sight(view: Locator) -> FrameLocator:
    """Scrolled to until it is mounted and shown. A page still drawing its conversation may scroll to the
    newest item after the test scrolled here, and a view out of sight is put away (at most 2 live views)."""
    deadline = time.monotonic() + 60
    while True:
        view.evaluate("el => el.scrollIntoView({block: 'center'})")
        try:
            return ready_form(view, timeout=10_000)
        except AssertionError:
            if time.monotonic() > deadline:
                raise


def expect_draft(view: Locator, scroll: bool = False) -> None:
    form = in_sight(view) if scroll else ready_form(view)
    expect(form.locator("#comment")).to_have_value(DRAFT)
    expect(form.locator("#name")).to_have_value("Grace")
    expect(form.locator(".star[aria-checked=true]")).to_have_count(1)
    expect(form.locator(".star").nth(3)).to_have_attribute("aria-checked", "true")
    expect(form.get_by_test_id("draft-kept")).to_have_text("Draft restored")


def open_forms(page: Page, count: int) -> None:
    for n in range(1, count + 1):
        call_tool(page, "forms", "feedback-form", {"name": "Ada"})
        ready_form(nth_form(page, n))


def test_a_draft_survives_remount_reload_and_restart_and_stays_with_its_own_form(
        monkeypatch: pytest.MonkeyPatch, start_host: HostLauncher, page_for: Callable[..., Page], tmp_path) -> None:
    monkeypatch.setenv("MCP_APPS_HOST_MAX_LIVE_VIEWS", "2")  # a view out of sight is torn down
    db = f"sqlite:///{tmp_path}/keep.db"
    host = start_host({"forms": FORMS}, extra_args=["--db", db])
    page = page_for(host)
    page.set_viewport_size({"width": 1000, "height": 500})

    open_forms(page, 1)
    form = ready_form(nth_form(page, 1))
    form.locator("#name").fill("Grace")
    form.locator("#comment").fill(DRAFT)
    form.locator(".star").nth(3).click()
    expect(form.get_by_test_id("draft-kept")).to_have_text("Draft kept")

    # More forms below: the first is far out of sight and torn down; scrolled back to, it is mounted again.
    call_tool(page, "forms", "feedback-form", {"name": "Ada"})
    second = ready_form(nth_form(page, 2))
    expect(second.locator("#comment")).to_have_value("")  # another instance: not the first one's draft
    expect(second.locator("#name")).to_have_value("Ada")
    for n in (3, 4):
        call_tool(page, "forms", "feedback-form", {"name": "Ada"})
        ready_form(nth_form(page, n))
    first = nth_form(page, 1)
    expect(first).to_have_attribute("data-state", "parked", timeout=30_000)
    expect_draft(first, scroll=True)

    page.reload()
    first = nth_form(page, 1)
    expect_draft(first, scroll=True)

    host.close()
    again = start_host({"forms": FORMS}, extra_args=["--db", db])
    elsewhere = page_for(again)  # a new browser context: nothing of the first one's storage
    elsewhere.set_viewport_size({"width": 1000, "height": 500})
    first = nth_form(elsewhere, 1)
    expect_draft(first, scroll=True)
    second = nth_form(elsewhere, 2)
    expect(in_sight(second).locator("#comment")).to_have_value("")
