"""Hostile views, abusing the protocol: tools and resources the view may not reach, requests the
person turns down, modes and sizes it did not declare or cannot have, messages too large or too
deep, and a flood of messages. The host refuses each, keeps working, and says why."""

from __future__ import annotations

import hostile_corpus
import pytest
from harness import answer_consent
from hostile_corpus import VICTIM, check, done, hostile

pytestmark = pytest.mark.browser

corpus = hostile_corpus.corpus  # the module-scoped fixture


def _refused(why: str) -> bool:
    """An error reply, or a CallToolResult marked isError (how a refused tools/call may come back)."""
    return why.startswith("error") or '"isError":true' in why


def test_protocol_attack_is_refused_model_only_tool(corpus):
    _, frame = corpus.mount("model-only-tool")
    why = done(frame)
    assert _refused(why) and "visibility" in why, why
    assert corpus.canary.hits("model-only-tool") == []  # the tool never ran


def test_protocol_attack_is_refused_other_server_tool(corpus):
    _, frame = corpus.mount("other-server-tool")
    why = done(frame)
    assert _refused(why), why
    assert corpus.canary.hits("other-server-tool") == []


def test_protocol_attack_is_refused_other_server_resource(corpus):
    _, frame = corpus.mount("other-server-resource")
    why = done(frame)
    assert _refused(why) and hostile.VICTIM_SECRET not in why, why


def test_protocol_attack_is_refused_message_denied(corpus):
    _, frame = corpus.mount("message-denied")
    answer_consent(corpus.page, "message", allow=False, expect_text="hostile message")
    why = done(frame)
    assert why.startswith("error"), why
    assert corpus.page.locator("[data-testid=chat-message]", has_text="hostile message").count() == 0


def test_protocol_attack_is_refused_open_link_denied(corpus):
    popups = len(corpus.popups)
    _, frame = corpus.mount("open-link-denied")
    answer_consent(corpus.page, "open-link", allow=False, expect_text="/t/open-link-denied/link")
    assert done(frame).startswith("error")
    assert corpus.canary.hits("open-link-denied") == [] and len(corpus.popups) == popups


def test_protocol_attack_is_refused_download_denied(corpus):
    downloads = len(corpus.downloads)
    _, frame = corpus.mount("download-denied")
    answer_consent(corpus.page, "download", allow=False, expect_text="x.txt")
    assert done(frame).startswith("error")
    assert len(corpus.downloads) == downloads


def test_protocol_attack_is_refused_sampling_denied(corpus):
    _, frame = corpus.mount("sampling-denied")
    why = done(frame)
    assert why.startswith("error") and "refused" in why, why  # no model: refused without asking
    assert corpus.page.locator("[data-testid=consent]").count() == 0


def test_protocol_attack_is_refused_undeclared_display_mode(corpus):
    view, frame = corpus.mount("undeclared-display-mode")
    assert done(frame) == 'answered {"mode":"inline"}'
    assert view.get_attribute("data-display-mode") == "inline"
    assert corpus.page.locator("html.has-fullscreen-view").count() == 0


def test_protocol_attack_is_refused_absurd_size(corpus):
    view, frame = corpus.mount("absurd-size")
    done(frame)
    box = view.locator("iframe.proxy").bounding_box()
    assert box is not None and 0 <= box["height"] <= 6000 and 0 <= box["width"] <= 4000, box
    corpus.responsive()


def test_protocol_attack_is_refused_huge_model_context(corpus):
    view, frame = corpus.mount("huge-model-context")
    why = done(frame)
    assert why.startswith("error") and "max_view_message_bytes" in why, why
    assert check(frame, "after") == "ping ok"
    assert len(view.locator("[data-testid=view-context]").inner_text()) < 1000


def test_protocol_attack_is_refused_huge_message(corpus):
    _, frame = corpus.mount("huge-message")
    why = done(frame)
    assert why.startswith("error") and "max_view_message_bytes" in why, why
    assert check(frame, "after") == "ping ok"
    assert corpus.page.locator("[data-testid=consent]").count() == 0


def test_protocol_attack_is_refused_deep_json(corpus):
    view, frame = corpus.mount("deep-json")
    assert done(frame, timeout=60_000) == "ping ok"
    for kind in ("object", "array"):
        # The browser will not carry 10,000 levels; 2,000 reach the host, which refuses them and goes on.
        assert check(frame, f"{kind}-10000").startswith("not sent"), check(frame, f"{kind}-10000")
        said = check(frame, f"{kind}-2000")
        assert said.startswith("error") and "max_view_message_depth" in said, (kind, said)
    assert "max_view_message_depth" in check(frame, "object-300")
    assert view.get_attribute("data-state") == "ready"  # the tab, and its views, are still there
    assert corpus.host.proc.poll() is None


def test_protocol_attack_is_refused_flood(corpus):
    # Another server's view is open beside the flooding one; it must stay served.
    _, victim = corpus.mount("victim-ping", server=VICTIM)
    done(victim)
    view, frame = corpus.mount("flood", new_conversation=False)
    victim.locator("#ping").click()  # while the flood is on
    assert check(victim, "pong", timeout=10_000) == "1"
    corpus.responsive()
    counts = check(frame, "counts", timeout=60_000)
    assert '"refused":0' not in counts and "max_view_messages_per_second" in counts, counts
    assert done(frame, timeout=30_000) == "served again"
    handle = view.get_attribute("data-view")
    limited = [e for e in corpus.audit(server="evil") if e["view"] == handle
               and "max_view_messages_per_second" in (e["reason"] or "")]
    assert 1 <= len(limited) <= 5, len(limited)  # audited once per burst, not once per message
