"""Hostile views, navigation family: a view cannot take itself, its proxy frame or the host page
anywhere else, open windows, submit forms, or start a download; the canary hears nothing, the
host page stays where it was and the view is still the HTML the host vetted."""

from __future__ import annotations

import hostile_corpus
import pytest
from hostile_corpus import done, hostile

corpus = hostile_corpus.corpus  # the module-scoped fixture

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("name", hostile.names("navigation"))
def test_navigation_attack_is_contained(corpus, name):
    url, popups, downloads = corpus.page.url, len(corpus.popups), len(corpus.downloads)
    view, frame = corpus.mount(name)
    why = done(frame)  # the view's own script still runs: it was not navigated away
    assert corpus.canary.hits(name) == [], f"{name} reached the canary ({why})"
    assert corpus.page.url == url
    assert len(corpus.popups) == popups, [p.url for p in corpus.popups]
    assert len(corpus.downloads) == downloads, [d.suggested_filename for d in corpus.downloads]
    assert view.get_attribute("data-state") == "ready"
    # The proxy frame is still on the sandbox origin, and the view inside it is the srcdoc.
    proxy = view.locator("iframe.proxy").element_handle().content_frame()
    assert proxy is not None and "/proxy/" in proxy.url
    assert [f.url for f in proxy.child_frames][:1] == ["about:srcdoc"]
