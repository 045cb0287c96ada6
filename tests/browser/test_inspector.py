"""The inspector beside a view: its messages from the audit trail (filter, expand, copy), its CSP
violations and log, its host context, and the controls that change that context live."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

import pytest
from harness import REPO, HostLauncher, call_tool, open_inspector, view_frame, wait_view
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

CHECKS = f"{sys.executable} {REPO / 'tests' / 'fixtures' / 'servers.py'} checks"


def inspect_call(page: Page, tool: str):
    call_tool(page, "fx", tool, {})
    view = wait_view(page, "fx", tool)
    inspector = open_inspector(view)
    expect(inspector).to_be_visible()
    return view, inspector


def test_the_inspector_lists_filters_expands_and_copies_the_views_messages(
        start_host: HostLauncher, page_for: Callable[..., Page]) -> None:
    host = start_host({"fx": CHECKS})
    page = page_for(host)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=host.origin)
    _view, inspector = inspect_call(page, "good")
    rows = inspector.locator("[data-testid=inspector-record]")
    result = rows.and_(page.locator("[data-method='ui/notifications/tool-result']"))
    expect(result).to_have_count(1)
    expect(result).to_have_attribute("data-direction", "host->view")
    expect(result).to_contain_text(" B")  # its size
    expect(rows.and_(page.locator("[data-method='ui/initialize']"))).to_have_attribute("data-direction", "view->host")
    # The log filter shows the view's notifications/message.
    inspector.locator("[data-testid=inspector-kind]").select_option("log")
    expect(rows.locator("visible=true")).to_have_count(1)
    expect(rows.locator("visible=true")).to_contain_text("notifications/message")
    inspector.locator("[data-testid=inspector-kind]").select_option("all")
    # Filtering by words keeps only the matching rows.
    inspector.locator("[data-testid=inspector-filter]").fill("tool-input")
    expect(rows.locator("visible=true")).to_have_count(1)
    inspector.locator("[data-testid=inspector-filter]").fill("")
    # Expanded, a row shows the whole message; copied, the whole record.
    result.locator(".inspector-row").click()
    expect(result.locator("[data-testid=inspector-json]")).to_contain_text('"ui/notifications/tool-result"')
    result.locator("[data-testid=inspector-copy]").click()
    # The text the wait saw is the one checked: a second read can find the page without focus (an empty text).
    # The predicate is not async (a promise is truthy, so the wait would end at once): each poll starts a read
    # and looks at what the last one read.
    text = page.wait_for_function(
        "() => { navigator.clipboard.readText().then((t) => { window.__copied = t; }, () => {});"
        " const t = window.__copied; return typeof t === 'string' && t.includes('tool-result') && t; }")
    copied = json.loads(text.json_value())
    assert copied["direction"] == "host->view" and copied["payload"]["method"] == "ui/notifications/tool-result"
    # Records keep arriving while the panel is open.
    before = rows.count()
    inspector.locator("[data-testid=inspector-locale]").fill("fr-FR")
    inspector.locator("[data-testid=inspector-apply]").click()
    expect(rows).not_to_have_count(before)


def test_the_host_context_controls_change_the_views_context_live(
        start_host: HostLauncher, page_for: Callable[..., Page]) -> None:
    host = start_host({"fx": CHECKS})
    page = page_for(host)
    view, inspector = inspect_call(page, "good")
    expect(inspector.locator("[data-testid=inspector-context]")).to_contain_text('"platform": "web"')
    inspector.locator("[data-testid=inspector-theme]").select_option("dark")
    inspector.locator("[data-testid=inspector-locale]").fill("fr-FR")
    inspector.locator("[data-testid=inspector-time-zone]").fill("Asia/Tokyo")
    inspector.locator("[data-testid=inspector-platform]").select_option("mobile")
    inspector.locator("[data-testid=inspector-touch]").select_option("true")
    inspector.locator("[data-testid=inspector-width]").fill("420")
    inspector.locator("[data-testid=inspector-height]").fill("260")
    inspector.locator("[data-testid=inspector-apply]").click()
    # The view itself heard it, in one host-context-changed.
    seen = view_frame(view).locator("[data-check=context]").last
    expect(seen).to_contain_text('"locale":"fr-FR"')
    context = json.loads(seen.inner_text())
    assert context["theme"] == "dark" and context["timeZone"] == "Asia/Tokyo" and context["platform"] == "mobile"
    assert context["deviceCapabilities"] == {"touch": True, "hover": True}
    assert context["containerDimensions"] == {"height": 260, "width": 420}
    # The panel shows the context now in effect, and the frame has the fixed size.
    expect(inspector.locator("[data-testid=inspector-context]")).to_contain_text('"timeZone": "Asia/Tokyo"')
    page.wait_for_function("h => h.getBoundingClientRect().height === 260 && h.getBoundingClientRect().width === 420",
                           arg=view.locator("iframe.proxy").element_handle())
    # The page's own theme did not change: only this view's context did.
    assert page.evaluate("document.documentElement.dataset.theme") == "light"
    # A display mode the view never declared is not switched to, and the log says why.
    inspector.locator("[data-testid=inspector-display-mode]").select_option("fullscreen")
    inspector.locator("[data-testid=inspector-apply]").click()
    expect(view.locator("[data-testid=view-log]")).to_contain_text("did not declare it")
    assert view.get_attribute("data-display-mode") == "inline"


def test_the_inspector_shows_a_csp_violation_with_the_entry_that_would_allow_it(
        start_host: HostLauncher, page_for: Callable[..., Page]) -> None:
    host = start_host({"fx": CHECKS})
    page = page_for(host)
    _view, inspector = inspect_call(page, "csp-blocked")
    inspector.locator("[data-testid=inspector-kind]").select_option("csp")
    violation = inspector.locator("[data-testid=inspector-record]").locator("visible=true")
    expect(violation).to_have_count(1, timeout=15_000)
    expect(violation).to_have_attribute("data-decision", "refused")
    expect(violation).to_contain_text("CSP blocked http://127.0.0.1:9/data")
    expect(violation).to_contain_text("_meta.ui.csp.connectDomains")
