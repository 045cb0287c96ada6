"""A view keeps its own UI state per view instance (the MCP Apps viewUUID pattern): the demo table's
`browse-table` result carries `_meta.viewUUID`, fresh for each call, and the table keeps the person's
query, sort and page in its sandbox origin's localStorage under that id. The state comes back after a
page reload, after the view is put away out of sight and mounted again, and after the host restarts on
the same ports (same origins, so the same storage); another call's table starts fresh."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import Host, HostLauncher, call_tool, view_frame, wait_servers
from playwright.sync_api import FrameLocator, Locator, Page, expect

import mcp_apps_host
from mcp_apps_host.demo.table import page_of

pytestmark = pytest.mark.browser

# The host starts stdio servers with a minimal environment: name the source tree this test imports, so the
# server runs the same table code as the test expects (a checkout other than the installed one included).
SRC = Path(mcp_apps_host.__file__).resolve().parents[1]
TABLE = shlex.join(["env", f"PYTHONPATH={SRC}", sys.executable, "-m", "mcp_apps_host.demo.table"])
QUERY, SORT, PAGE = "steel", "-price", 2  # what the person sets in the first table
MAX_LIVE = 2


def range_text(data: dict[str, Any]) -> str:
    """The pager's text for a page of `page_of` (as table.html draws it)."""
    first = (data["page"] - 1) * data["pageSize"] + 1
    last = min(data["total"], data["page"] * data["pageSize"])
    return f"{first}–{last} of {data['total']} · page {data['page']} of {data['pages']}"


KEPT = page_of(query=QUERY, sort=SORT, page=PAGE)
FRESH = page_of()
assert KEPT["pages"] >= PAGE and KEPT["rows"][0]["sku"] != FRESH["rows"][0]["sku"], "pick another query"


def nth_table(page: Page, n: int) -> Locator:
    """The view of the n-th browse-table call (1-based), running or a placeholder."""
    return page.locator('[data-testid=view][data-server="table"][data-tool="browse-table"]').nth(n - 1)


def ready_table(page: Page, n: int) -> FrameLocator:
    view = nth_table(page, n)
    expect(view).to_have_attribute("data-state", "ready", timeout=30_000)
    return view_frame(view)


def open_table(page: Page, n: int) -> FrameLocator:
    call_tool(page, "table", "browse-table")
    app = ready_table(page, n)
    expect(app.locator("#range")).to_have_text(range_text(FRESH))
    return app


def set_state(app: FrameLocator) -> None:
    """Search, sort by price (highest first) and go to the next page, as a person would. The buttons are
    pressed from the keyboard: a click aims at a point, and the view's frame may still be moving as the
    conversation settles."""
    app.locator("#q").fill(QUERY)
    expect(app.locator("#range")).to_have_text(range_text(page_of(query=QUERY)))
    app.locator("#head th", has_text="Price").locator("button").press("Enter")
    expect(app.locator("#head th[aria-sort=descending]")).to_have_text("▼Price")
    for page in range(2, PAGE + 1):
        app.locator("#next").press("Enter")
        expect(app.locator("#range")).to_have_text(range_text(page_of(query=QUERY, sort=SORT, page=page)))


def expect_kept(app: FrameLocator, after: str) -> None:
    # The pager, the first row and the search box: the page the person left, not the call's first page.
    expect(app.locator("#range"), f"after {after}").to_have_text(range_text(KEPT))
    expect(app.locator("#rows tr").first.locator("td.sku"), f"after {after}").to_have_text(KEPT["rows"][0]["sku"])
    expect(app.locator("#q"), f"after {after}").to_have_value(QUERY)


def expect_fresh(app: FrameLocator) -> None:
    expect(app.locator("#range")).to_have_text(range_text(FRESH))
    expect(app.locator("#rows tr").first.locator("td.sku")).to_have_text(FRESH["rows"][0]["sku"])
    expect(app.locator("#q")).to_have_value("")


@pytest.fixture
def few_live_views(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("MCP_APPS_HOST_MAX_LIVE_VIEWS", str(MAX_LIVE))
    yield


def test_a_table_keeps_its_state_across_a_reload_and_a_new_call_starts_fresh(
        start_host: HostLauncher, page_for: Callable[..., Page]) -> None:
    host = start_host({"table": TABLE})
    page = page_for(host)
    set_state(open_table(page, 1))

    page.reload()
    expect_kept(ready_table(page, 1), "a reload")

    # Another call is another view instance (another viewUUID): it starts on the call's first page,
    # and the first table keeps its own state.
    wait_servers(page, host)
    call_tool(page, "table", "browse-table")
    expect_fresh(ready_table(page, 2))
    expect_kept(ready_table(page, 1), "a second call")


def test_a_table_keeps_its_state_when_put_away_out_of_sight_and_mounted_again(
        few_live_views: None, start_host: HostLauncher, page_for: Callable[..., Page]) -> None:
    host = start_host({"table": TABLE})
    page = page_for(host)
    page.set_viewport_size({"width": 1000, "height": 500})
    set_state(open_table(page, 1))
    # More tables below push the first far out of sight: beyond max_live_views it is torn down.
    for n in range(2, MAX_LIVE + 3):
        open_table(page, n)
    first = nth_table(page, 1)
    expect(first).to_have_attribute("data-state", "parked")
    expect(first.locator("iframe.proxy")).to_have_count(0)

    first.evaluate("el => el.scrollIntoView({block: 'center'})")
    expect_kept(ready_table(page, 1), "a remount")


def test_a_table_keeps_its_state_across_a_host_restart_on_the_same_ports(
        start_host: HostLauncher, page_for: Callable[..., Page]) -> None:
    host = start_host({"table": TABLE})
    page = page_for(host)
    set_state(open_table(page, 1))

    host.close()
    again: Host = start_host({"table": TABLE}, same_as=host)
    assert (again.port, again.sandbox_port) == (host.port, host.sandbox_port)
    page.goto(again.url)  # the same browser context: the same sandbox origin's localStorage
    # The replayed table may start before its server is connected again (its page request is then refused):
    # open the conversation once the server is ready.
    wait_servers(page, again)
    page.reload()
    expect_kept(ready_table(page, 1), "a host restart")
