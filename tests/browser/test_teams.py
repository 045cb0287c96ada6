"""The host as a team deploys it: embedded behind its own sign-in, one listener, several workers
on PostgreSQL — in a real browser, with real processes that are killed for real."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from embedded import embed_example, fixture_entry, sign_in, worker_of
from harness import (
    attach_console,
    burst_answered,
    call_tool,
    tail,
    view_frame,
    wait_servers,
    wait_view,
)
from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "servers.py"


def cmd(kind: str) -> str:
    return shlex.join([sys.executable, str(FIXTURES), kind])


def check(frame, name: str, timeout: float = 20_000) -> str:
    item = frame.locator(f'[data-check="{name}"]')
    item.wait_for(timeout=timeout)
    return item.inner_text()


def open_page(browser: Browser, url: str) -> Page:
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    attach_console(page)
    page.goto(url)
    return page


# ---- the embed example: two people, each with their own -------------------------------------------


@pytest.fixture
def example(postgres, tmp_path: Path) -> Iterator[str]:
    with embed_example(postgres, tmp_path, {"rec": fixture_entry("rec")}) as base:
        yield base


def test_the_embed_example_keeps_each_person_to_their_own(chromium: Browser, example: str):
    alice, bob = sign_in(chromium, example, "alice"), sign_in(chromium, example, "bob")
    call_tool(alice, "rec", "record", {"text": "alice's secret"})
    assert "alice's secret" in check(view_frame(wait_view(alice, "rec", "record")), "result")
    call_tool(bob, "rec", "record", {"text": "bob's note"})
    assert "bob's note" in check(view_frame(wait_view(bob, "rec", "record")), "result")
    # Each sees only their own calls, conversations and audit rows.
    assert "bob's note" not in alice.locator("main").inner_text()
    assert "alice's secret" not in bob.locator("main").inner_text()
    alice_ids = alice.locator("[data-testid=conversation-item]").evaluate_all("els => els.map(e => e.dataset.id)")
    bob_ids = bob.locator("[data-testid=conversation-item]").evaluate_all("els => els.map(e => e.dataset.id)")
    assert alice_ids and bob_ids and not set(alice_ids) & set(bob_ids)
    for page, mine, theirs in ((alice, "alice's secret", "bob's note"), (bob, "bob's note", "alice's secret")):
        export = page.request.get(f"{example}/apps/api/audit?format=jsonl&limit=10000").text()
        assert mine in export and theirs not in export
        assert '"user":"' in export and all(('"user":"%s"' % ("alice" if page is alice else "bob")) in line
                                            for line in export.splitlines())
    # A page of the app without a signed-in person opens nothing.
    anonymous = chromium.new_context().new_page()
    assert anonymous.goto(f"{example}/apps/").status == 401


# ---- one listener: the sandbox on the console's own port, under its own host name --------------------


def test_the_sandbox_can_share_the_consoles_port(start_host, page_for):
    host = start_host(servers={"rec": cmd("rec")},
                      extra_args=["--sandbox-origin", "http://{label}.sandbox.localhost:{port}"])
    assert f"per-server sandbox origins under http://*.sandbox.localhost:{host.port}" in host.log_text()
    page = page_for(host)
    call_tool(page, "rec", "record", {"action": "storage", "text": "same port"})
    frame = view_frame(wait_view(page, "rec", "record"))
    assert check(frame, "storage") == '{"owner":"same port"}'
    src = page.locator("[data-testid=view] iframe.proxy").get_attribute("src")
    assert re.match(rf"http://rec-[0-9a-f]{{8}}\.sandbox\.localhost:{host.port}/proxy/", src)
    # The host page is never served on a sandbox name, nor a proxy on the host page's name.
    sandbox_name = src.split("/proxy/")[0].removeprefix("http://")
    path = "/proxy/" + src.split("/proxy/")[1]
    assert status(host.port, sandbox_name, path) == 200
    assert status(host.port, sandbox_name, "/") == 404
    assert status(host.port, f"127.0.0.1:{host.port}", path) == 404


def status(port: int, host_name: str, path: str) -> int:
    """A request to the console's port naming ``host_name`` (as a browser resolving *.localhost would)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Host": host_name})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


# ---- several workers on PostgreSQL, one killed mid-burst -----------------------------------------------


def wait_ready(host, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    request = urllib.request.Request(f"{host.origin}/api/health", headers={"Cookie": f"mah_session={host.token}"})
    while True:
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                if set(json.load(response)["servers"].values()) == {"ready"}:
                    return
        except OSError:
            pass
        assert time.monotonic() < deadline, f"the workers did not get ready:\n{tail(host.log_text())}"
        time.sleep(0.5)


def views_of(page: Page) -> list[dict[str, str | bool | None]]:
    """Each view's tool and state as the page shows them, and whether it is hidden: said when a test fails."""
    return page.eval_on_selector_all("[data-testid=view]", """views => views.map(v => ({
      tool: v.dataset.tool || null, state: v.dataset.state || null, hidden: v.hidden}))""")


def test_two_workers_share_a_conversation_and_survive_a_killed_worker(start_host, chromium: Browser, postgres,
                                                                    monkeypatch):
    # Its burst answers ping after ping faster than max_view_messages_per_second, which it is not about.
    monkeypatch.setenv("MCP_APPS_HOST_MAX_VIEW_MESSAGES_PER_SECOND", "100000")
    database = postgres.database()
    host = start_host(servers={"rec": cmd("rec")}, extra_args=["--db", database, "--workers", "2"])
    assert "workers: 2" in host.log_text()
    wait_ready(host)  # the workers are still starting: the port takes connections, they wait in its backlog
    # Tabs of the same conversation until two of them talk to different workers.
    pages = [open_page(chromium, host.url)]
    first = pages[0]
    wait_servers(first, host)
    by_worker = {worker_of(first): first}
    for _ in range(24):
        if len(by_worker) == 2:
            break
        page = open_page(chromium, host.url)
        pages.append(page)
        by_worker.setdefault(worker_of(page), page)
    assert len(by_worker) == 2, "every tab landed on one worker"
    (worker_a, tab_a), (worker_b, tab_b) = by_worker.items()
    # The others were opened only to find a second worker. Left open, each would show the conversation's views
    # and run the burst below too, all of them in the one renderer process of the rec views' origin.
    for page in pages:
        if page not in (tab_a, tab_b):
            page.context.close()
    pages = [tab_a, tab_b]
    conversation = tab_a.locator("[data-testid=conversation-item].current").get_attribute("data-id")
    assert tab_b.locator("[data-testid=conversation-item].current").get_attribute("data-id") == conversation

    # What one tab does, the other (on the other worker) sees at once: through PostgreSQL's LISTEN/NOTIFY.
    call_tool(tab_a, "rec", "record", {"text": "seen on both workers"})
    assert "seen on both workers" in check(view_frame(wait_view(tab_a, "rec", "record", timeout=60_000)), "result")
    assert "seen on both workers" in check(view_frame(wait_view(tab_b, "rec", "record", timeout=60_000)), "result")

    # A burst of pings from a view on worker A; worker A is killed outright part-way.
    call_tool(tab_a, "rec", "record", {"action": "burst", "n": 3000})
    deadline, acked = time.monotonic() + 60, 0
    while time.monotonic() < deadline and acked < 300:
        acked = burst_answered(tab_a)
        time.sleep(0.02)
    assert acked >= 300, (f"only {acked} pings were answered; {len(pages)} tabs of the conversation; tab A's views: "
                          f"{views_of(tab_a)}; its frames' titles: {[frame.title() for frame in tab_a.frames]}")
    # The banner may be up for less than a poll of Playwright's (the other worker takes the tab at once):
    # the page itself notes that it was shown.
    tab_a.evaluate("""() => {
      const banner = document.querySelector("[data-testid=banner]");
      window.__bannerShown = false;
      new MutationObserver(() => { if (!banner.hidden) window.__bannerShown = true; })
        .observe(banner, {attributes: true, attributeFilter: ["hidden"]});
    }""")
    os.kill(worker_a, signal.SIGKILL)
    acked_at_kill = burst_answered(tab_a, acked)

    # The tab reconnects (to the other worker or the one the supervisor starts again) and gets its
    # conversation back, views included, rendered from the stored templates.
    tab_a.wait_for_function("() => window.__bannerShown === true", timeout=30_000)
    tab_a.locator("[data-testid=banner]").wait_for(state="hidden", timeout=60_000)
    assert tab_a.locator("[data-testid=conversation-item].current").get_attribute("data-id") == conversation
    # The views closed with the lost connection go when the conversation comes back (the socket may
    # open, and the banner go, a moment before it does).
    tab_a.locator("[data-testid=view][data-state=closed]").first.wait_for(state="detached", timeout=60_000)
    wait_view(tab_a, "rec", "record", timeout=60_000)
    assert tab_a.locator("[data-testid=view]").count() >= 2
    # Every ping the view saw answered is on record: replies leave only after the commit.
    with psycopg.connect(database.replace("postgresql+psycopg", "postgresql")) as db:
        pings = db.execute("SELECT COUNT(*) FROM audit_events WHERE direction='view->host' AND method='ping'"
                           ).fetchone()[0]
    assert pings >= acked_at_kill, (pings, acked_at_kill)
    # The other worker's tab never lost its connection.
    assert tab_b.locator("[data-testid=banner]").is_hidden() and worker_of(tab_b) == worker_b
    for page in pages:
        page.context.close()
