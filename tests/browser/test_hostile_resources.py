"""Hostile views, resource abuse: a view that spins the CPU forever, allocates memory without end,
or makes thousands of frames. The host page keeps answering, and the person can close the view.

The view runs in a renderer of its own (its sandbox origin is another site), so the page is
judged through the DevTools protocol once the attack has started: Playwright gives up on a page
as soon as any of its frames' renderers dies, which is what a view out of memory does."""

from __future__ import annotations

import time
from typing import Any

import hostile_corpus
import pytest
from hostile_corpus import LIVE_PAGES, hostile

pytestmark = pytest.mark.browser

corpus = hostile_corpus.corpus  # the module-scoped fixture


class PageProbe:
    """Scripts run in the host page over a DevTools session, timed."""

    def __init__(self, page: Any) -> None:
        self.cdp = page.context.new_cdp_session(page)

    def run(self, expression: str, within: float = 30.0) -> Any:
        start = time.monotonic()
        reply = self.cdp.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                   "awaitPromise": True})
        took = time.monotonic() - start
        assert took < within, f"the host page took {took:.1f} s to run {expression[:60]!r}"
        assert "exceptionDetails" not in reply, reply
        return reply["result"].get("value")

    def wait(self, expression: str, timeout: float = 20.0) -> Any:
        deadline = time.monotonic() + timeout
        while not (value := self.run(expression)):
            assert time.monotonic() < deadline, f"not true within {timeout:.0f} s: {expression}"
            time.sleep(0.1)
        return value


@pytest.mark.parametrize("name", hostile.names("resources"))
def test_resource_attack_leaves_the_host_usable(corpus, name):
    page = corpus.fresh_page()
    try:
        view, _ = corpus.mount(name, page=page)
        handle = view.get_attribute("data-view")
        probe = PageProbe(page)
        here = f"document.querySelector(`[data-view='{handle}']`)"
        # The view says so through the host before it starts; its log in the page shows it.
        probe.wait(f"{here}.querySelector('[data-testid=view-log]').textContent.includes('started: {name}')")
        # For a few seconds of the attack the page answers each time (a page sharing the view's renderer
        # would not answer at all), and what the person types shows. 30 s allows for two cores shared with
        # other work and for the browser's own process, which every frame shares: under thousands of frames
        # the page's next frame took 12 s beside a loaded suite.
        until = time.monotonic() + 3.0
        while time.monotonic() < until:
            probe.run("new Promise((r) => requestAnimationFrame(() => r(1)))")
        typed = probe.run("(() => { const box = document.querySelector('[data-testid=chat-input]');"
                          "box.value = 'still typing'; box.dispatchEvent(new Event('input'));"
                          "const v = box.value; box.value = ''; return v; })()")
        assert typed == "still typing"
        # The person closes the view: its frame, and what runs in it, is gone.
        probe.run(f"{here}.querySelector('[data-testid=view-close]').click()")
        probe.wait(f"{here}.dataset.state === 'closed' && !{here}.querySelector('iframe')")
        probe.run("document.title")
    finally:
        if page in LIVE_PAGES:
            LIVE_PAGES.remove(page)
        page.close()
