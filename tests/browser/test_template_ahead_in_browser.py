"""A template ahead of its call, in a real browser: typing `/call SERVER TOOL` in the chat box tells the
host which tool the person is about to call; the host sends its template to the page (`template-ahead`)
before Enter, the view's mount then comes without the HTML, and the view renders from the page's copy and
shows its result. The view itself boots before Enter too, and Enter gives it the call."""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import attach_console, view_frame, wait_servers, wait_view
from playwright.sync_api import Page

pytestmark = pytest.mark.browser

REC = shlex.join([sys.executable, str(Path(__file__).resolve().parent.parent / "fixtures" / "servers.py"), "rec"])
RESOURCE_READY = "ui/notifications/sandbox-resource-ready"


def until(page: Page, condition: Any, what: str, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        page.wait_for_timeout(50)  # Playwright hands over the page's events (its frames) while it waits
    return found


@contextlib.contextmanager
def console(start_host: Any, chromium: Any) -> Iterator[tuple[Page, list[dict[str, Any]]]]:
    """The console of a host with the `rec` server, ready; and the host's frames as the page gets them."""
    host = start_host(servers={"rec": REC})
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        attach_console(page)
        received: list[dict[str, Any]] = []
        page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: received.append(
            json.loads(payload if isinstance(payload, str) else payload.decode()))))
        page.goto(host.url)
        wait_servers(page, host, ["rec"])
        yield page, received
    finally:
        context.close()


def test_a_call_typed_in_the_chat_box_has_its_template_on_the_page_before_enter(start_host, chromium):
    with console(start_host, chromium) as (page, received):
        box = page.locator("[data-testid=chat-input]")
        box.fill('/call rec record {"action": "ahead"}')
        ahead = until(page, lambda: [f for f in received if f["type"] == "template-ahead"], "the template ahead")
        box.press("Enter")
        frame = view_frame(wait_view(page, "rec", "record"))
        until(page, lambda: any(line.startswith("tool-result") for line in frame.locator("li.seen").all_inner_texts()),
              "the view to show its result")
        mount = next(f for f in received if f["type"] == "view-mount")
        assert mount["templateSha256"] == ahead[0]["sha256"]
        ready = [f for f in received if f["type"] == "view-post" and f["message"].get("method") == RESOURCE_READY]
        assert ready and "html" not in ready[0]["message"]["params"], "the mount carried the template again"
        assert received.index(ahead[0]) < received.index(mount)


def test_a_call_typed_in_the_chat_box_boots_its_never_seen_view_before_enter_and_enter_shows_that_view(
        start_host, chromium):
    """The template is new to the host (a fresh database): a call of it would render it without asking, so
    it boots hidden while the person finishes typing, and Enter gives it the call."""
    with console(start_host, chromium) as (page, received):
        box = page.locator("[data-testid=chat-input]")
        box.fill('/call rec record {"action": "booted"}')
        booted = until(page, lambda: [f for f in received if f["type"] == "view-mount" and f["prebooted"]],
                       "a view booted ahead")[0]
        until(page, lambda: page.locator("[data-testid=view-preboot]").count() == 1, "the booted view on the page")
        box.press("Enter")
        frame = view_frame(wait_view(page, "rec", "record"))
        until(page, lambda: any(line.startswith("tool-result") for line in frame.locator("li.seen").all_inner_texts()),
              "the view to show its result")
        adopted = [f for f in received if f["type"] == "view-adopt"]
        assert [f["view"] for f in adopted] == [booted["view"]], "Enter did not give the call the booted view"
        assert [f for f in received if f["type"] == "view-mount" and not f["prebooted"]] == []
