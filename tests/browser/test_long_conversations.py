"""Long conversations in a real browser: beyond max_live_views, views far out of sight are torn down
(the view is asked with ui/resource-teardown) and leave a placeholder of the same size; scrolled back
to, they are mounted again and given their input and result once more. A reload and a restart of the
host bring the conversation back the same way: only the views near the end run at first."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import pytest
from harness import REPO, HostLauncher, call_tool, view_frame
from playwright.sync_api import Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

pytestmark = pytest.mark.browser

DISPLAY = f"{sys.executable} {REPO / 'tests' / 'fixtures' / 'display_server.py'}"
MAX_LIVE = 3
VIEWS = 10


def nth_view(page: Page, n: int) -> Locator:
    """The view of the n-th call (1-based), whether running or a placeholder."""
    return page.locator("[data-testid=view][data-tool=modes-view]").nth(n - 1)


def running(page: Page) -> int:
    return page.locator("[data-testid=view] iframe.proxy").count()


def scroll_to(page: Page, view: Locator) -> None:
    view.evaluate("el => el.scrollIntoView({block: 'center'})")


# Each view in the conversation: state, whether its frame runs, and where it is in the scrolled column.
VIEWS_NOW = """() => {
  const top = document.querySelector('[data-testid=conversation]').getBoundingClientRect().top;
  return [...document.querySelectorAll('[data-testid=view]')].map((v, i) => {
    const box = v.getBoundingClientRect();
    return `${i + 1}:${v.dataset.state}${v.querySelector('iframe.proxy') ? '+frame' : ''}@${Math.round(box.top - top)}`;
  }).join(' ');
}"""


# The height each view's frame last had on the page, by view handle, kept as the frames come and go.
FRAME_HEIGHTS = """() => {
  window.lastFrameHeight = new Map();
  const sizes = new ResizeObserver((entries) => {
    for (const entry of entries) {
      const view = entry.target.closest('[data-testid=view]');
      const height = entry.target.getBoundingClientRect().height;
      if (view && height > 0) window.lastFrameHeight.set(view.dataset.view, height);  // 0: being removed
    }
  });
  const watch = () => document.querySelectorAll('iframe.proxy').forEach((f) => sizes.observe(f));
  new MutationObserver(watch).observe(document.body, {subtree: true, childList: true});
  watch();
}"""


def wait_running_at_most(page: Page, most: int, timeout: float = 30_000) -> None:
    try:
        page.wait_for_function("max => document.querySelectorAll('[data-testid=view] iframe.proxy').length <= max",
                               arg=most, timeout=timeout)
    except PlaywrightTimeoutError:
        raise AssertionError(f"more than {most} views still run after {timeout / 1000:g} s: "
                             f"{page.evaluate(VIEWS_NOW)}") from None


def expect_replayed(view: Locator, n: int) -> None:
    expect(view).to_have_attribute("data-state", "ready", timeout=30_000)
    app = view_frame(view)
    expect(app.locator("#input")).to_have_text(f'{{"n":{n}}}')
    expect(app.locator("#result")).to_contain_text(f'"n":{n}')


@pytest.fixture
def few_live_views(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_APPS_HOST_MAX_LIVE_VIEWS", str(MAX_LIVE))


# The height each view's first placeholder was drawn with, by view handle, as the page draws it.
PLACEHOLDERS_DRAWN = """
window.placeholderDrawn = {};
new MutationObserver((records) => {
  for (const record of records) {
    for (const node of record.addedNodes) {
      if (!(node instanceof Element)) continue;
      const found = node.matches('[data-testid=view-placeholder]') ? [node]
        : [...node.querySelectorAll('[data-testid=view-placeholder]')];
      for (const box of found) {
        const view = box.closest('[data-testid=view]')?.dataset.view;
        const drawn = window.placeholderDrawn;
        if (view && !(view in drawn)) drawn[view] = box.getBoundingClientRect().height;
      }
    }
  }
}).observe(document, {subtree: true, childList: true});
"""


def parked_mounts(page: Page) -> list[dict[str, Any]]:
    """The placeholders' `view-mount` frames the page receives from now on, in the order they come; the
    page, once loaded again, keeps the height each placeholder was first drawn with (``placeholderDrawn``)."""
    page.add_init_script(PLACEHOLDERS_DRAWN)
    got: list[dict[str, Any]] = []

    def keep(payload: str | bytes) -> None:
        frame = json.loads(payload)
        if isinstance(frame, dict) and frame.get("type") == "view-mount" and frame.get("parked"):
            got.append(frame)

    page.on("websocket", lambda ws: ws.on("framereceived", keep))
    return got


def fill_conversation(page: Page) -> None:
    for n in range(1, VIEWS + 1):
        call_tool(page, "display", "modes-view", {"n": n})
        expect(nth_view(page, n)).to_have_attribute("data-state", "ready", timeout=30_000)
        expect(view_frame(nth_view(page, n)).locator("#result")).to_contain_text(f'"n":{n}')


def test_views_out_of_sight_are_torn_down_and_mounted_again_with_their_input_and_result(
        few_live_views: None, start_host: HostLauncher, page_for: Callable[..., Page]) -> None:
    host = start_host({"display": DISPLAY})
    page = page_for(host)
    page.set_viewport_size({"width": 1000, "height": 500})
    page.evaluate(FRAME_HEIGHTS)
    fill_conversation(page)

    first = nth_view(page, 1)
    # The first views are far above: torn down after their teardown request, a placeholder left.
    expect(first).to_have_attribute("data-state", "parked")
    expect(first.locator("[data-testid=view-placeholder]")).to_be_visible()
    assert running(page) < VIEWS
    audit = page.request.get(f"{host.origin}/api/audit?format=json&server=display&method=ui/resource-teardown")
    asked = [e for e in audit.json()["events"] if e["direction"] == "host->view"]
    assert asked and all("out of sight" in str(e["payload"]) for e in asked), asked

    # The placeholder keeps the size the view's frame last had, so nothing below moves.
    held = first.locator("[data-testid=view-placeholder]").evaluate("p => p.getBoundingClientRect().height")
    had = page.evaluate("v => window.lastFrameHeight.get(v)", first.get_attribute("data-view"))
    assert had and abs(held - had) <= 1, f"the placeholder is {held} px tall, its view's frame was {had} px"

    # Scrolled back to, it runs again, given the same input and result.
    scroll_to(page, first)
    expect_replayed(first, 1)
    # ... and views now far below make room for it: no more than max_live_views run.
    wait_running_at_most(page, MAX_LIVE)
    expect(nth_view(page, VIEWS - 1)).to_have_attribute("data-state", "parked")


def test_reload_and_restart_mount_only_the_views_near_the_end(
        few_live_views: None, start_host: HostLauncher, page_for: Callable[..., Page], tmp_path) -> None:
    db = f"sqlite:///{tmp_path}/keep.db"
    host = start_host({"display": DISPLAY}, extra_args=["--db", db])
    page = page_for(host)
    mounts = parked_mounts(page)
    page.set_viewport_size({"width": 1000, "height": 500})
    fill_conversation(page)

    for opened in ("reload", "restart"):
        if opened == "reload":
            mounts.clear()
            page.reload()
        else:
            host.close()
            host = start_host({"display": DISPLAY}, extra_args=["--db", db])
            page = page_for(host)
            mounts = parked_mounts(page)
            page.set_viewport_size({"width": 1000, "height": 500})
            page.reload()  # page_for has opened it: open it again with its frames heard
        views = page.locator("[data-testid=view][data-tool=modes-view]")
        expect(views).to_have_count(VIEWS)
        last = nth_view(page, VIEWS)
        expect_replayed(last, VIEWS)
        # Only the last max_live_views were mounted; the first waits as a placeholder until scrolled to.
        first = nth_view(page, 1)
        expect(first).to_have_attribute("data-state", "parked")
        # Each placeholder comes with the height its view last had, kept by the host (a view whose height the
        # host did not keep comes without one, and the page draws its default), and is drawn that tall, so
        # nothing moves when it runs. (Which height that is depends on how each view drew when it last ran:
        # one mounted for an instant while the page scrolled to the end, or measured while its frame still had
        # the page's initial height, may have reported another height than in the first run, even the
        # frame's initial 120 px: so the test does not guess the number, it checks one is kept and drawn.)
        heights = [m["height"] for m in sorted(mounts, key=lambda m: m["callId"])]
        assert len(heights) == VIEWS - MAX_LIVE and all(isinstance(h, int) and h > 0 for h in heights), \
            (opened, heights)
        # Each placeholder is drawn that tall the moment its view-mount comes (one the page then scrolled past
        # may have run since, and been put away again at the height it had then: the first drawing is checked).
        drawn = page.evaluate("window.placeholderDrawn")
        for n, mount in enumerate(sorted(mounts, key=lambda m: m["callId"]), start=1):
            held = drawn.get(mount["view"])
            assert held is not None and abs(held - mount["height"]) <= 1, \
                f"after the {opened}: placeholder {n} was drawn {held} px tall, sent {mount['height']} px"
        # (a placeholder seen for an instant while the page scrolls to the end may start, and go again)
        wait_running_at_most(page, MAX_LIVE)
        scroll_to(page, first)
        expect_replayed(first, 1)
