"""Living views in a real browser: the demo's product table subscribes to its server's catalogue
(`resources/subscribe`), and a restock — a call the person makes, not the view — changes the table
already on screen, with no polling and no new view."""

from __future__ import annotations

import sys

import pytest
from harness import call_tool, view_frame, wait_view
from playwright.sync_api import expect

from mcp_apps_host.demo.table import PRODUCTS

pytestmark = pytest.mark.browser

TABLE = f"{sys.executable} -m mcp_apps_host.demo.table"


def test_an_open_table_shows_a_restock_made_elsewhere(start_host, page_for):
    host = start_host(servers={"table": TABLE})
    page = page_for(host)
    product = next(p for p in PRODUCTS if p["stock"] >= 20)  # shown as a plain number
    call_tool(page, "table", "browse-table", {"query": product["sku"]})
    table = view_frame(wait_view(page, "table", "browse-table"))
    stock = table.locator("#rows tr").first.locator("td.num").nth(1)
    expect(stock).to_have_text(str(product["stock"]), timeout=30_000)

    call_tool(page, "table", "restock", {"sku": product["sku"], "quantity": 7})
    # The view fetches its page again when its server says the catalogue changed: only then is the new
    # stock on screen (the restock's own result goes to its card, not to the table).
    expect(stock).to_have_text(str(product["stock"] + 7), timeout=30_000)
    expect(page.locator('[data-testid=view][data-server="table"]')).to_have_count(1)
