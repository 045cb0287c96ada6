"""Signing in to servers protected by MCP authorization, in Chromium, against real authorization servers
on loopback (tests/fixtures/oauth_server.py): the authorization page in a window of its own, the call
that waited going on by itself, the sign-in kept across a restart, refused refreshes, declines, a view's
own call meeting a 401 — and no token ever readable in the database, the log or the audit trail."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from harness import Host, HostLauncher, call_tool, view_frame, wait_view
from playwright.sync_api import Frame, Page, expect

from tests.fixtures.oauth import OAuthServer, start_oauth_server, start_url_elicit_server

pytestmark = pytest.mark.browser

SERVER = "crm"
SIGNIN_TIMEOUT = 60_000


@pytest.fixture
def token_key(monkeypatch: pytest.MonkeyPatch) -> str:
    key = Fernet.generate_key().decode()
    monkeypatch.setenv("MCP_APPS_HOST_TOKEN_KEY", key)  # the host processes started here inherit it
    return key


@pytest.fixture
def embedded() -> Iterator[OAuthServer]:
    with start_oauth_server("embedded") as server:
        yield server


@pytest.fixture
def separate() -> Iterator[OAuthServer]:
    with start_oauth_server("separate") as server:
        yield server


def launch(start_host: HostLauncher, server: OAuthServer, db: Path) -> Host:
    return start_host({SERVER: server.resource_url}, extra_args=["--db", f"sqlite:///{db}"])


def server_auth(page: Page, state: str) -> None:
    page.wait_for_function(
        "([name, state]) => document.querySelector(`[data-testid=server][data-server=\"${name}\"]`)"
        "?.dataset.auth === state", arg=[SERVER, state], timeout=SIGNIN_TIMEOUT)


def sign_in(page: Page, user: str, button: str = "[data-testid=signin-start]") -> None:
    """Open the authorization page from ``button``, sign in as ``user`` there, and let its window close."""
    with page.expect_popup() as opened:
        page.locator(button).click()
    popup = opened.value
    popup.locator("#user").fill(user)
    popup.locator("#approve").click()
    popup.wait_for_event("close", timeout=SIGNIN_TIMEOUT)


def prompt(page: Page) -> None:
    page.locator(f"[data-testid=signin][data-server={SERVER}]").wait_for(timeout=SIGNIN_TIMEOUT)


def notice_with(page: Page, text: str) -> str:
    item = page.locator("[data-testid=notice]", has_text=text).last
    item.wait_for(timeout=SIGNIN_TIMEOUT)
    return item.inner_text()


def app_frame(page: Page) -> Frame:
    """The chart view's own document (Playwright reaches into the cross-origin sandbox)."""
    for frame in page.frames:
        if frame.parent_frame is not None and frame.query_selector("#out"):
            return frame
    raise AssertionError("no view document with #out")


def secrets_nowhere(server: OAuthServer, host: Host, page: Page, db: Path) -> None:
    tokens = [t for kind in ("access", "refresh") for t in server.tokens()[kind]]
    assert tokens, "the authorization server issued no token"
    stored = b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))
    audit = page.request.get(f"{host.origin}/api/audit").text()
    for token in tokens:
        assert token.encode() not in stored, "a token is readable in the database"
        assert token not in host.log_text(), "a token is in the host's log"
        assert token not in audit, "a token is in the audit trail"
        assert token not in page.content(), "a token reached the page"


def test_sign_in_from_the_page_the_waiting_call_renders_and_the_sign_in_outlives_a_restart(
        start_host, page_for, embedded, token_key, tmp_path):
    db = tmp_path / "signin.db"
    host = launch(start_host, embedded, db)
    page = page_for(host, wait_ready=False)
    server_auth(page, "needed")

    call_tool(page, SERVER, "secret_chart")  # its tools are unknown until the person signs in: it waits
    prompt(page)
    sign_in(page, "dana")
    server_auth(page, "signed-in")
    view = wait_view(page, SERVER, "secret_chart", timeout=SIGNIN_TIMEOUT)
    # The view writes its result once its call is answered: wait for the text, not for the element.
    expect(view_frame(view).locator("#out")).to_have_text("chart for dana", timeout=SIGNIN_TIMEOUT)
    assert page.locator("[data-testid=signin]").count() == 0
    authorized = embedded.events("authorize")
    assert [e["user"] for e in authorized] == ["dana"] and authorized[0]["resource"] == embedded.resource_url

    audit = [json.loads(line) for line in page.request.get(f"{host.origin}/api/audit").text().splitlines()]
    signins = [(e["method"], e["decision"]) for e in audit if e["method"] == "oauth/sign-in"]
    assert signins == [("oauth/sign-in", "asked"), ("oauth/sign-in", "consented")]
    secrets_nowhere(embedded, host, page, db)

    # A restart: the access token ran out meanwhile, so the stored refresh token gets a new one.
    host.close()
    embedded.admin("expire-all")
    host = launch(start_host, embedded, db)
    page = page_for(host, wait_ready=False)
    server_auth(page, "signed-in")
    call_tool(page, SERVER, "whoami")
    notice_or_card = page.locator("[data-testid=call-result], [data-testid=notice]", has_text="subject: dana")
    notice_or_card.first.wait_for(timeout=SIGNIN_TIMEOUT)
    assert [e["user"] for e in embedded.events("authorize")] == ["dana"], "the person was asked again"
    assert embedded.events("refresh"), "the expired token was not refreshed"
    secrets_nowhere(embedded, host, page, db)


def test_a_declined_sign_in_ends_the_call_and_a_refused_refresh_asks_again(
        start_host, page_for, separate, token_key, tmp_path):
    # issuer != resource: the authorization server is a process of its own
    assert not separate.resource_url.startswith(separate.issuer)
    host = launch(start_host, separate, tmp_path / "signin.db")
    page = page_for(host, wait_ready=False)
    server_auth(page, "needed")

    call_tool(page, SERVER, "whoami")
    prompt(page)
    page.locator("[data-testid=signin-decline]").click()
    assert "declined" in notice_with(page, "declined")
    server_auth(page, "needed")

    sign_in(page, "erin", "[data-testid=server-signin]")  # from the server list, no call waiting
    server_auth(page, "signed-in")
    call_tool(page, SERVER, "whoami")
    page.locator("[data-testid=call-result], [data-testid=notice]", has_text="subject: erin").first.wait_for(
        timeout=SIGNIN_TIMEOUT)

    separate.admin("refuse-refresh")
    separate.admin("expire-all")
    call_tool(page, SERVER, "whoami")
    prompt(page)  # the refresh was refused: only now is the person asked again
    assert separate.events("refresh-refused")
    sign_in(page, "erin2")
    page.locator("[data-testid=call-result], [data-testid=notice]", has_text="subject: erin2").first.wait_for(
        timeout=SIGNIN_TIMEOUT)


def test_a_views_own_call_meeting_a_401_asks_and_answers_the_same_request(
        start_host, page_for, embedded, token_key, tmp_path):
    host = launch(start_host, embedded, tmp_path / "signin.db")
    page = page_for(host, wait_ready=False)
    sign_in(page, "gus", "[data-testid=server-signin]")
    server_auth(page, "signed-in")
    call_tool(page, SERVER, "secret_chart")
    view = wait_view(page, SERVER, "secret_chart")
    # The view writes its result once its call is answered: wait for the text, not for the element.
    expect(view_frame(view).locator("#out")).to_have_text("chart for gus", timeout=SIGNIN_TIMEOUT)

    embedded.admin("refuse-refresh")
    embedded.admin("expire-all")
    frame = app_frame(page)
    ask = """() => { window.__answer = null;
      mcpApp.callTool("whoami", {}).then((r) => { window.__answer = JSON.stringify(r); },
                                          (e) => { window.__answer = "error: " + e.message; }); }"""
    frame.evaluate(ask)
    page.locator("[data-testid=consent-allow]").click()  # whoami is not read-only: the person allows it
    prompt(page)
    sign_in(page, "hal")
    frame.wait_for_function("() => window.__answer !== null", timeout=SIGNIN_TIMEOUT)
    assert "subject: hal" in frame.evaluate("() => window.__answer")

    embedded.admin("expire-all")
    frame.evaluate(ask)
    page.locator("[data-testid=consent-allow]").click()
    prompt(page)
    page.locator("[data-testid=signin-decline]").click()
    frame.wait_for_function("() => window.__answer !== null", timeout=SIGNIN_TIMEOUT)
    answer = frame.evaluate("() => window.__answer")
    assert answer.startswith("error:") and "declined" in answer


def test_a_wrong_issuer_and_metadata_for_another_resource_are_refused_with_the_reason(
        start_host, page_for, token_key, tmp_path):
    with start_oauth_server("embedded") as server:
        server.admin("wrong-iss")
        host = launch(start_host, server, tmp_path / "a.db")
        page = page_for(host, wait_ready=False)
        call_tool(page, SERVER, "whoami")
        prompt(page)
        sign_in(page, "ivy")
        assert "iss" in notice_with(page, "sign-in failed").lower()
        assert not server.events("token"), "a code from the wrong issuer was exchanged"

    with start_oauth_server("embedded", prm_resource="http://127.0.0.1:9/elsewhere") as server:
        host = launch(start_host, server, tmp_path / "b.db")
        page = page_for(host, wait_ready=False)
        error = page.locator(f"[data-testid=server][data-server={SERVER}] [data-testid=server-error]")
        error.wait_for(timeout=SIGNIN_TIMEOUT)
        assert "does not match" in error.inner_text()
        assert not server.events("register"), "the host registered with a server for another resource"


def test_a_url_elicitation_names_its_domain_opens_on_click_and_the_call_is_made_again(start_host, page_for):
    with start_url_elicit_server() as url:
        host = start_host({"accounts": url})
        page = page_for(host)
        call_tool(page, "accounts", "connect_account")
        dialog = page.locator('[data-testid=consent][data-kind="elicit"]')
        dialog.wait_for(timeout=SIGNIN_TIMEOUT)
        domain = dialog.locator("[data-testid=elicit-url]")
        assert domain.get_attribute("data-domain") == "127.0.0.1" and "127.0.0.1" in domain.inner_text()
        assert len(page.context.pages) == 1  # nothing opened before the person's click
        with page.expect_popup() as opened:
            dialog.locator("[data-testid=elicit-url-open]").click()
        opened.value.locator("#done").click()
        # A 2026-07-28 server has no stream to say it is done on: the person says so, and the call goes on.
        follow_up = page.locator('[data-testid=consent][data-kind="elicit"]', has_text="Finished on 127.0.0.1")
        follow_up.locator("[data-testid=elicit-accept]").click(timeout=SIGNIN_TIMEOUT)
        result = page.locator('[data-testid=call][data-tool="connect_account"] [data-testid=call-result]')
        result.wait_for(timeout=SIGNIN_TIMEOUT)
        assert "connected" in result.inner_text()


def test_a_declined_url_elicitation_ends_the_call(start_host, page_for):
    with start_url_elicit_server() as url:
        host = start_host({"accounts": url})
        page = page_for(host)
        call_tool(page, "accounts", "connect_account")
        page.locator("[data-testid=elicit-decline]").click()
        error = page.locator('[data-testid=call][data-tool="connect_account"] [data-testid=call-error]')
        error.wait_for(timeout=SIGNIN_TIMEOUT)
        assert "did not open the page" in error.inner_text()
