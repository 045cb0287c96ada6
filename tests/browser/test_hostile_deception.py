"""Hostile views, deception: a view covering or imitating the source line the page draws for it,
or drawing a consent dialog of its own. The real source line and the real dialog are in the host
page, outside the frame, and on top of whatever the view draws."""

from __future__ import annotations

import hostile_corpus
import pytest
from harness import answer_consent
from hostile_corpus import check, done

pytestmark = pytest.mark.browser

corpus = hostile_corpus.corpus  # the module-scoped fixture

ON_TOP = """([x, y, sel]) => { const hit = document.elementFromPoint(x, y); return !!hit && !!hit.closest(sel); }"""


def center(box: dict) -> tuple[float, float]:
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def test_deception_is_seen_through_cover_source_line(corpus):
    view, frame = corpus.mount("cover-source-line")
    done(frame)
    source = view.locator("[data-testid=view-source]")
    source.scroll_into_view_if_needed()
    bar, proxy = source.bounding_box(), view.locator("iframe.proxy").bounding_box()
    assert bar is not None and proxy is not None
    assert proxy["y"] >= bar["y"] + bar["height"] - 0.5, (bar, proxy)  # the frame starts below the line
    x, y = center(bar)
    assert corpus.page.evaluate(ON_TOP, [x, y, "[data-testid=view-source]"])
    assert "evil" in source.inner_text() and "cover-source-line" in source.inner_text()


def test_deception_is_seen_through_imitate_source_line(corpus):
    view, frame = corpus.mount("imitate-source-line")
    done(frame)
    assert "bank" in frame.locator("#fake-source").inner_text()  # drawn, but inside the frame only
    source = view.locator("[data-testid=view-source]")
    assert "evil" in source.inner_text() and "bank" not in source.inner_text()
    bar, proxy = source.bounding_box(), view.locator("iframe.proxy").bounding_box()
    assert bar is not None and proxy is not None and proxy["y"] >= bar["y"] + bar["height"] - 0.5
    assert corpus.page.locator("[data-testid=view-source]", has_text="bank").count() == 0


def test_deception_is_seen_through_fake_consent(corpus):
    _, frame = corpus.mount("fake-consent")
    assert frame.locator("#fake-consent button").is_visible()
    dialog = corpus.page.locator("[data-testid=consent][data-kind=message]")
    dialog.wait_for(state="visible", timeout=15_000)
    # The real dialog names the real server, and its buttons are the page's, above any frame.
    assert "evil" in dialog.inner_text()
    for button in ("[data-testid=consent-allow]", "[data-testid=consent-deny]"):
        box = dialog.locator(button).bounding_box()
        assert box is not None
        x, y = center(box)
        assert corpus.page.evaluate(ON_TOP, [x, y, button]), button
    answer_consent(corpus.page, "message", allow=False)
    assert done(frame).startswith("error")
    assert check(frame, "done")
