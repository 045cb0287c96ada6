"""What the hostile-view tests share: one canary, one host serving the hostile server (and its
victim, a second server), one browser and one page per test module. Each test opens a fresh
conversation, runs one attack's tool, and reads what the view reported and what reached the
canary. The corpus itself is tests/fixtures/hostile.py."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from harness import (
    CHROMIUM,
    CHROMIUM_ARGS,
    LIVE_PAGES,
    Host,
    HostLauncher,
    attach_console,
    call_tool,
    start_new_conversation,
    view_frame,
    wait_servers,
    wait_view,
)
from playwright.sync_api import Download, FrameLocator, Locator, Page, sync_playwright

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
sys.path.insert(0, str(FIXTURES))
import hostile  # noqa: E402
from canary import Canary  # noqa: E402

SERVER = "evil"
VICTIM = "victim"
# A view allocating without end must hit a wall long before the machine does.
BROWSER_ARGS = [*CHROMIUM_ARGS, "--js-flags=--max-old-space-size=256", "--site-per-process"]


@dataclass
class Corpus:
    host: Host
    page: Page
    canary: Canary
    downloads: list[Download] = field(default_factory=list)
    popups: list[Page] = field(default_factory=list)

    def mount(self, tool: str, server: str = SERVER, new_conversation: bool = True,
              page: Page | None = None) -> tuple[Locator, FrameLocator]:
        """Run TOOL of SERVER in a fresh conversation and wait until its view is ready."""
        page = page or self.page
        if new_conversation:
            start_new_conversation(page)
        call_tool(page, server, tool, {})
        view = wait_view(page, server, tool, timeout=60_000)
        return view, view_frame(view)

    def fresh_page(self) -> Page:
        """Another tab of the host, for an attack that may take the page object down with it:
        Playwright marks a page crashed when any of its frames' renderers dies."""
        page = self.page.context.new_page()
        attach_console(page)
        LIVE_PAGES.append(page)
        page.goto(self.host.url)
        page.locator("[data-testid=chat-input]").wait_for(state="visible", timeout=30_000)
        return page

    def audit(self, **filters: str) -> list[dict[str, Any]]:
        query = "&".join(f"{k}={v}" for k, v in {"format": "jsonl", **filters}.items())
        response = self.page.request.get(f"{self.host.origin}/api/audit?{query}")
        assert response.ok, response.text()
        return [json.loads(line) for line in response.text().splitlines() if line.strip()]

    def responsive(self, within: float = 30.0) -> float:
        """Seconds the host page takes to run a script and answer; fails past ``within``. A page the attack
        took down (a renderer shared with a spinning view, a layout it cannot finish) does not answer at all;
        one relaying a flood's thousands of refusals and log lines answered in up to 10 s on two cores the
        test suite and two busy loops shared, so the bound is not closer than that."""
        start = time.monotonic()
        self.page.evaluate("() => new Promise((r) => requestAnimationFrame(() => r(document.title)))")
        took = time.monotonic() - start
        assert took < within, f"the host page took {took:.1f} s to answer"
        return took


def check(frame: FrameLocator, name: str, timeout: float = 20_000) -> str:
    item = frame.locator(f'[data-check="{name}"]').first
    item.wait_for(state="attached", timeout=timeout)
    return item.inner_text()


def checks(frame: FrameLocator, name: str) -> list[str]:
    return frame.locator(f'[data-check="{name}"]').all_inner_texts()


def done(frame: FrameLocator, timeout: float = 20_000) -> str:
    """Wait until the view says it has finished trying."""
    return check(frame, "done", timeout)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Corpus]:
    canary = Canary(hostile.RAW_NAMES)
    base = tmp_path_factory.mktemp("hostile")
    cmd = [sys.executable, str(FIXTURES / "hostile.py")]
    config = base / "servers.json"
    config.write_text(json.dumps({"mcpServers": {
        SERVER: {"command": cmd[0], "args": cmd[1:], "env": canary.env()},
        VICTIM: {"command": cmd[0], "args": cmd[1:], "env": {**canary.env(), "ROLE": "victim"}},
    }}))
    launcher = HostLauncher(base)
    try:
        host = launcher(config=config)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS, headless=True)
            context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
            page = context.new_page()
            attach_console(page)
            LIVE_PAGES.append(page)
            found = Corpus(host, page, canary)
            page.on("download", lambda d: found.downloads.append(d))
            context.on("page", lambda p: found.popups.append(p) if p is not page else None)
            page.goto(host.url)
            page.locator("[data-testid=chat-input]").wait_for(state="visible", timeout=30_000)
            wait_servers(page, host, timeout=90)
            try:
                yield found
            finally:
                LIVE_PAGES.remove(page)
                browser.close()
    finally:
        launcher.close()
        canary.close()
