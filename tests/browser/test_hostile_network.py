"""Hostile views, network family: every way a view can send a request, to an origin it did not
declare, is stopped before it leaves the browser (the canary hears nothing); the same code to the
origin the server declared in ``_meta.ui.csp`` gets through, so the test can fail."""

from __future__ import annotations

import hostile_corpus
import pytest
from hostile_corpus import done, hostile

corpus = hostile_corpus.corpus  # the module-scoped fixture

pytestmark = pytest.mark.browser

# The attacks that have no declared origin to compare with: the test names what must not happen.
# (The Chromium these tests run does not preconnect even without a policy, so dns-prefetch stands
# guard for a browser that does; a service worker from a blob:, data: or other origin's URL is
# refused by every browser. webrtc fails without the view guard, host/view_guard.js.)
RAW = {"dns-prefetch": "preconnect", "webrtc": "webrtc"}


@pytest.mark.parametrize("name", hostile.names("network"))
def test_network_attack_is_contained(corpus, name):
    view, frame = corpus.mount(name)
    why = done(frame)
    assert corpus.canary.hits(name) == [], f"{name} reached the canary ({why})"
    if name in RAW:
        assert corpus.canary.raw[RAW[name]].connections == 0, f"{name} opened a connection ({why})"
    if name == "webrtc":
        assert corpus.canary.udp.datagrams == 0, f"webrtc sent STUN datagrams ({why})"
    assert view.get_attribute("data-state") == "ready"


@pytest.mark.parametrize("name", hostile.controls())
def test_network_control_reaches_declared_origin(corpus, name):
    corpus.mount(f"{name}-declared")
    hits = corpus.canary.wait_hit(f"{name}-declared")
    assert all(label == "declared" for label, _, _ in hits), hits
