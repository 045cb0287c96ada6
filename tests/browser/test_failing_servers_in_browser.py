"""What a person sees when a server fails (tests/fixtures/failing.py): the message in the view where
it happened, the other server's view working next to it, and the server back after it was lost."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import pytest
from harness import call_tool, server_list, view_frame, wait_view

pytestmark = pytest.mark.browser

FAILING = Path(__file__).resolve().parent.parent / "fixtures" / "failing.py"


def failing(kind: str) -> str:
    return shlex.join([sys.executable, str(FAILING), kind])


def check(frame, name: str, timeout: float = 20_000) -> str:
    item = frame.locator(f'[data-check="{name}"]')
    item.wait_for(timeout=timeout)
    return item.inner_text()


def test_a_bad_template_is_told_in_its_view_and_the_other_view_works(start_host, page_for):
    host = start_host(servers={"blob": failing("blob"), "fine": failing("fine")})
    page = page_for(host)
    call_tool(page, "blob", "blob-view", {})
    broken = wait_view(page, "blob", "blob-view", state="error")
    assert "blob is not valid base64" in broken.inner_text()
    assert broken.locator("iframe").count() == 0

    call_tool(page, "fine", "fine-view", {})
    echoed = check(view_frame(wait_view(page, "fine", "fine-view")), "echo")
    assert echoed.startswith("ok:") and echoed.count("echo: still here") == 2  # its text and structured result


def test_a_server_lost_under_its_view_is_told_to_the_view_and_comes_back(start_host, page_for):
    host = start_host(servers={"drop": failing("drop"), "fine": failing("fine")})
    page = page_for(host)
    call_tool(page, "drop", "drop-view", {})
    frame = view_frame(wait_view(page, "drop", "drop-view"))
    said = check(frame, "drop")
    assert said.startswith("error:") and "'drop' went away during tools/call drop-now" in said, said

    call_tool(page, "fine", "fine-view", {})
    echoed = check(view_frame(wait_view(page, "fine", "fine-view")), "echo")
    assert echoed.startswith("ok:") and echoed.count("echo: still here") == 2  # its text and structured result

    # The host starts the server again (backoff starts at 1 s); its next view renders.
    deadline = time.monotonic() + 60
    while {s["name"]: s["status"] for s in server_list(page, host)}["drop"] != "ready":
        assert time.monotonic() < deadline, server_list(page, host)
        time.sleep(0.2)
    before = page.locator('[data-testid=view][data-server="drop"]').count()
    call_tool(page, "drop", "drop-view", {"drop": False})
    page.wait_for_function("n => document.querySelectorAll('[data-testid=view][data-server=\"drop\"]').length > n",
                           arg=before, timeout=30_000)
    assert check(view_frame(wait_view(page, "drop", "drop-view")), "drop") == "not asked to"
