"""Hostile views, reaching the host: the host page's DOM, cookie and storage, another server's
storage, messages posted past the proxy, forged proxy and response messages, and ids used twice.
Each test names what the view tried and what must not have happened."""

from __future__ import annotations

import secrets

import hostile_corpus
import pytest
from harness import click_in_page
from hostile_corpus import VICTIM, check, checks, done, hostile

pytestmark = pytest.mark.browser

corpus = hostile_corpus.corpus  # the module-scoped fixture


def test_reaching_attack_is_contained_top_dom(corpus):
    _, frame = corpus.mount("top-dom")
    done(frame)
    for name in ("top", "proxy-parent", "write"):
        assert check(frame, name).startswith("blocked"), (name, check(frame, name))
    assert corpus.page.locator("#hostile-marker").count() == 0


def test_reaching_attack_is_contained_host_cookies(corpus):
    session = {c["name"]: c["value"] for c in corpus.page.context.cookies()}
    assert session, "the host page has a session cookie to protect"
    _, frame = corpus.mount("host-cookies")
    why = done(frame)
    seen = " ".join([check(frame, "cookie"), check(frame, "top-cookie"), why])
    for value in session.values():
        assert value not in seen
    assert check(frame, "top-cookie").startswith("blocked")
    assert why.startswith("host api error"), why  # connect-src: the host's API is out of reach


def test_reaching_attack_is_contained_host_storage(corpus):
    secret = secrets.token_hex(8)
    corpus.page.evaluate("s => { localStorage.setItem('host-secret', s); sessionStorage.setItem('host-secret', s); }",
                         secret)
    _, frame = corpus.mount("host-storage")
    done(frame)
    seen = check(frame, "seen")
    assert secret not in seen and "host-secret" not in seen, seen
    assert '"top":"blocked' in seen, seen


def test_reaching_attack_is_contained_other_server_storage(corpus):
    # The victim, a view of another server in the same browser, keeps a secret in its storage.
    _, victim = corpus.mount("victim-store", server=VICTIM)
    assert check(victim, "stored") == hostile.VICTIM_SECRET  # the control: its storage works
    _, frame = corpus.mount("other-server-storage", new_conversation=False)
    done(frame)
    seen = check(frame, "seen")
    assert hostile.VICTIM_SECRET not in seen and "victim" not in seen, seen


def test_reaching_attack_is_contained_post_to_top(corpus):
    _, frame = corpus.mount("post-to-top")
    assert done(frame) == "proper call done"
    corpus.canary.wait_hit("post-to-top-proper")  # the same call through the proxy reached the tool
    assert corpus.canary.hits("post-to-top") == []  # posted straight to the page: never relayed


def test_reaching_attack_is_contained_spoofed_sandbox(corpus):
    view, frame = corpus.mount("spoofed-sandbox")
    assert done(frame) == "intact"
    assert frame.locator("#pwned").count() == 0
    assert view.get_attribute("data-state") == "ready"
    refused = [e for e in corpus.audit(server="evil", method="ui/notifications/sandbox-proxy-ready")
               if e["view"] == view.get_attribute("data-view") and e["decision"] == "refused"]
    assert refused, "the forged sandbox-proxy-ready from the proxy's realm was not refused"


def test_reaching_attack_is_contained_forged_response(corpus):
    view, frame = corpus.mount("forged-response")
    assert done(frame) == "after forged"
    handle = view.get_attribute("data-view")
    refusals = [e["reason"] for e in corpus.audit(server="evil") if e["view"] == handle and e["decision"] == "refused"]
    assert any("unknown request id" in (r or "") for r in refusals), refusals
    # The forged answers did not end anything: the view is ready, and closing it still asks it first.
    assert view.get_attribute("data-state") == "ready"
    click_in_page(view.locator("[data-testid=view-close]"))
    corpus.page.wait_for_function(
        "h => document.querySelector(`[data-view='${h}']`).dataset.state === 'closed'", arg=handle, timeout=15_000)


def test_reaching_attack_is_contained_duplicate_id(corpus):
    _, frame = corpus.mount("duplicate-id")
    answers = done(frame, timeout=30_000).split(" | ")
    assert sorted(a.startswith("ok") for a in answers) == [False, False, True], answers
    assert all("already in use" in a for a in answers if not a.startswith("ok")), answers
    corpus.canary.wait_hit("duplicate-id")
    assert len(corpus.canary.hits("duplicate-id")) == 1  # the tool ran once
    assert checks(frame, "violation") == []
