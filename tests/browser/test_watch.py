"""`serve --watch`: editing a server's template restarts the server and the open view shows the new
version, with its last input and result, without restarting the host or calling the tool again."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from harness import REPO, HostLauncher, call_tool, view_frame, wait_view
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def test_an_edited_template_re_renders_the_open_view(start_host: HostLauncher, page_for: Callable[..., Page],
                                                     tmp_path: Path) -> None:
    app_dir = tmp_path / "app"
    app_dir.mkdir()
    script = app_dir / "view.js"
    script.write_text('report("version", "one");')
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"file": {
        "command": sys.executable, "args": [str(REPO / "tests" / "fixtures" / "servers.py"), "file", str(script)],
        "watch": [str(app_dir)]}}}))
    host = start_host(config=config, extra_args=["--watch"])
    assert f"watching file: {app_dir}" in host.log_text()
    page = page_for(host)
    call_tool(page, "file", "file-view", {"topic": "cheese"})
    view = wait_view(page, "file", "file-view")
    app = view_frame(view)
    expect(app.locator("[data-check=version]")).to_have_text("one")
    old_handle = view.get_attribute("data-view")

    script.write_text('report("version", "two");')
    # The server restarts and the same call's view is rendered again from the new template, with the
    # call's input and result, and no question about the changed template (the author is editing it).
    new_view = page.locator("[data-testid=view][data-server=file]")
    expect(new_view).not_to_have_attribute("data-view", old_handle or "", timeout=30_000)
    expect(new_view).to_have_count(1)
    app = view_frame(new_view)
    expect(app.locator("[data-check=version]")).to_have_text("two", timeout=30_000)
    expect(app.locator("[data-check=result]")).to_contain_text("about cheese")
    expect(page.locator("[data-testid=trust-notice]")).to_have_count(0)
    assert new_view.get_attribute("data-state") == "ready"
    # A new call gets the new template too.
    call_tool(page, "file", "file-view", {"topic": "ham"})
    expect(page.locator("[data-testid=view][data-server=file]")).to_have_count(2)
    latest = wait_view(page, "file", "file-view")
    expect(view_frame(latest).locator("[data-check=version]")).to_have_text("two")
    assert "view.js changed, restarting it" in host.log_text()
    # A reload replays the conversation: both views with the template as it is now.
    page.reload()
    replayed = page.locator("[data-testid=view][data-server=file]")
    expect(replayed).to_have_count(2)
    for i in range(2):
        wait_view(page, "file", "file-view")
        expect(view_frame(replayed.nth(i)).locator("[data-check=version]")).to_have_text("two")
