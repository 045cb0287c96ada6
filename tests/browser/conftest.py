"""Fixtures for the browser tests (helpers and process launchers are in harness.py).

- ``chromium``: one headless Debian Chromium per test module.
- ``start_host(servers=None, config=None, extra_args=())`` -> ``Host`` with ``url``,
  ``origin``, ``port``, ``sandbox_port``, ``token``, ``log_text()``; killed at teardown.
  ``start_host_shared``: the same, kept for the whole module.
- ``page_for(host, wait_ready=True, new_conversation=False)``: a new context and page at
  ``host.url``, with ``page.console_lines``; waits until every server is connected unless
  told not to; ``new_conversation=True`` leaves the replayed last conversation for an
  empty one (for tests sharing a host).
- ``npm_peer_http(bin, *args)`` -> ``http://127.0.0.1:PORT/mcp``; ``npm_peer_http_shared``
  per module; ``npm_peer_stdio(bin, *args)`` -> a command line for ``--server NAME=...``.
- ``sample_pdf``: path of a small 3-page PDF.

When a test fails, the log tail of every live host and the console of every open page are
added to its report.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from harness import (
    CHROMIUM,
    CHROMIUM_ARGS,
    LIVE_HOSTS,
    LIVE_PAGES,
    Host,
    HostLauncher,
    PeerLauncher,
    attach_console,
    peer_stdio_command,
    start_new_conversation,
    tail,
    wait_servers,
    write_sample_pdf,
)
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

# Playwright's expect() gives up after 5 s, which a busy two-core machine can spend on one view's start:
# every expectation waits on its condition for longer (a passing one returns as soon as it holds).
expect.set_options(timeout=20_000)


# One browser per module, not per session: sync Playwright keeps an asyncio loop running in
# the main thread while it is open, and tests elsewhere that call asyncio.run() would fail.
@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: run scripts/test, which installs Debian's chromium")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def start_host(tmp_path: Path) -> Iterator[HostLauncher]:
    launcher = HostLauncher(tmp_path)
    yield launcher
    launcher.close()


@pytest.fixture(scope="module")
def start_host_shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostLauncher]:
    launcher = HostLauncher(tmp_path_factory.mktemp("hosts"))
    yield launcher
    launcher.close()


@pytest.fixture
def page_for(chromium: Browser) -> Iterator[Callable[..., Page]]:
    contexts: list[BrowserContext] = []

    def open_page(host: Host, *, wait_ready: bool = True, new_conversation: bool = False,
                  timeout: float = 60.0) -> Page:
        context = chromium.new_context(viewport={"width": 1280, "height": 900})
        contexts.append(context)
        page = context.new_page()
        attach_console(page)
        LIVE_PAGES.append(page)
        page.goto(host.url)
        page.locator("[data-testid=chat-input]").wait_for(state="visible", timeout=30_000)
        if new_conversation:
            start_new_conversation(page)
        if wait_ready:
            # A /call typed before the servers are up would be raced against start-up.
            wait_servers(page, host, timeout=timeout)
        return page

    yield open_page
    # A page the test closed itself is no longer among its context's pages: forget it by its context, or a
    # later failure would print its console as if it were that test's.
    LIVE_PAGES[:] = [page for page in LIVE_PAGES if page.context not in contexts]
    for context in contexts:
        context.close()


@pytest.fixture
def npm_peer_http(tmp_path: Path) -> Iterator[PeerLauncher]:
    launcher = PeerLauncher(tmp_path)
    yield launcher
    launcher.close()


@pytest.fixture(scope="module")
def npm_peer_http_shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PeerLauncher]:
    launcher = PeerLauncher(tmp_path_factory.mktemp("peers"))
    yield launcher
    launcher.close()


@pytest.fixture
def npm_peer_stdio() -> Callable[..., str]:
    return peer_stdio_command


@pytest.fixture
def sample_pdf(tmp_path: Path) -> Path:
    return write_sample_pdf(tmp_path / "sample.pdf")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    for host in LIVE_HOSTS:
        report.sections.append((f"host log tail (port {host.port})", tail(host.log_text(), 120)))
    for i, page in enumerate(LIVE_PAGES):
        lines = getattr(page, "console_lines", [])
        if lines:
            report.sections.append((f"page {i} console", "\n".join(lines[-80:])))
