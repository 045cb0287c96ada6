"""Signing in, as a team runs the host: embedded behind the team's own sign-in, each person signing in to
the same server and each call running as its own subject; on PostgreSQL with two workers, the
authorization server's redirect landing on the worker that does not hold the sign-in."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest
from cryptography.fernet import Fernet
from starlette.testclient import TestClient

from mcp_apps_host import create_app
from tests.fixtures.oauth import OAuthServer, start_oauth_server
from tests.unit.test_embedding import ORIGIN, Tab, of, who


@pytest.fixture(scope="module")
def crm() -> Iterator[OAuthServer]:
    with start_oauth_server("embedded") as server:
        yield server


def _config(server: OAuthServer, database: str, key: str) -> dict[str, Any]:
    return {"origin": ORIGIN, "sandboxOrigin": "http://{label}.sandbox.test", "database": database,
            "tokenKey": key, "mcpServers": {"crm": {"url": server.resource_url}}, "allowedServerHosts": ["127.0.0.1"]}


def _crm(frame: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in frame["servers"] if s["name"] == "crm")


def _approve(tab: Tab, user: str) -> str:
    """The sign-in the page offers, approved at the authorization server as ``user``: the redirect it sends
    back (the browser's part, without a browser)."""
    frame = tab.until(lambda f: f["type"] == "servers" and _crm(f)["signin"] is not None)
    assert _crm(frame)["auth"] == "needed"
    answer = httpx.get(_crm(frame)["signin"]["url"] + f"&approve_as={user}", follow_redirects=False, timeout=60)
    assert answer.status_code == 302, answer.text
    location = urlsplit(answer.headers["location"])
    assert f"{location.scheme}://{location.netloc}" == ORIGIN and location.path == "/oauth/callback"
    return f"{location.path}?{location.query}"


def _whoami(tab: Tab) -> str:
    tab.until(lambda f: f["type"] == "servers" and _crm(f)["auth"] == "signed-in")
    tab.send({"type": "call", "server": "crm", "tool": "whoami", "arguments": {}})
    return str(tab.until(of("call-finished"))["result"])


@contextmanager
def signed_in(client: TestClient, user: str, redirect_to: TestClient | None = None) -> Iterator[Tab]:
    """A tab of ``user``'s, signed in to crm (the redirect taken by ``redirect_to``, else by the same worker)
    and seen to call as them."""
    tab = Tab(client, user)
    try:
        tab.send({"type": "hello"})
        # No session comes with the redirect (another site sent it): its state says whose it is.
        assert (redirect_to or client).get(_approve(tab, user)).status_code == 200
        assert f"subject: {user}" in _whoami(tab)
        yield tab
    finally:
        tab.close()


def test_each_person_signs_in_for_themselves_and_calls_as_themselves(crm: OAuthServer, tmp_path: Path):
    app = create_app(_config(crm, f"sqlite:///{tmp_path}/h.db", Fernet.generate_key().decode()), identity=who)
    with TestClient(app, base_url=ORIGIN) as client:
        for user in ("alice", "bob"):
            with signed_in(client, user):
                pass
        # A redirect whose sign-in is unknown (or already used) changes nothing and says so.
        stale = client.get("/oauth/callback?code=x&state=never-begun")
        assert stale.status_code == 400 and "unknown or has expired" in stale.text
    tokens = [t for kind in ("access", "refresh") for t in crm.tokens()[kind]]
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("h.db*"))
    assert tokens and not any(t.encode() in raw for t in tokens)


def test_the_redirect_may_land_on_another_worker(crm: OAuthServer, postgres, caplog: pytest.LogCaptureFixture):
    database = postgres.database()
    config = _config(crm, database, Fernet.generate_key().decode())
    with ExitStack() as stack:
        # Two workers of one deployment: one database, one bus (LISTEN/NOTIFY), one key.
        first = stack.enter_context(TestClient(create_app(config, identity=who), base_url=ORIGIN))
        second = stack.enter_context(TestClient(create_app(config, identity=who), base_url=ORIGIN))
        with signed_in(first, "carol", redirect_to=second):  # the worker that does not hold the flow
            pass
    with psycopg.connect(database.replace("postgresql+psycopg", "postgresql")) as conn:
        rows = conn.execute("SELECT tenant, user_id, server, tokens FROM server_credentials").fetchall()
    assert [(r[0], r[1], r[2]) for r in rows] == [("acme", "carol", "crm")]
    assert not any(t in rows[0][3] for t in crm.tokens()["access"])
    # Both workers stopped whole (a stop once waited for ever here, on a step that never ended).
    assert not [r.getMessage() for r in caplog.records if "did not end within" in r.getMessage()]


def test_more_scope_is_asked_for_when_a_tool_needs_it_and_signing_out_revokes(crm: OAuthServer, tmp_path: Path):
    app = create_app(_config(crm, f"sqlite:///{tmp_path}/h.db", Fernet.generate_key().decode()), identity=who)
    with TestClient(app, base_url=ORIGIN) as client, signed_in(client, "dave") as tab:
        # 403 insufficient_scope: the person is asked again, for the scopes held plus the one wanted.
        tab.send({"type": "call", "server": "crm", "tool": "needs_admin", "arguments": {}})
        assert client.get(_approve(tab, "dave")).status_code == 200
        assert "admin work done for dave" in str(tab.until(of("call-finished"))["result"])
        assert "admin" in crm.events("authorize")[-1]["scope"].split()

        revoked_before = len(crm.events("revoke"))
        tab.send({"type": "signout", "server": "crm"})
        frame = tab.until(lambda f: f["type"] == "servers" and _crm(f)["auth"] == "needed"
                          and _crm(f)["signin"] is not None)
        assert _crm(frame)["status"] != "ready"
    assert len(crm.events("revoke")) > revoked_before
    with sqlite3.connect(tmp_path / "h.db") as db:
        assert db.execute("SELECT tokens FROM server_credentials WHERE user_id = 'dave'").fetchone() == (None,)


def test_a_token_refused_before_its_time_is_refreshed_without_asking_the_person(crm: OAuthServer, tmp_path: Path):
    app = create_app(_config(crm, f"sqlite:///{tmp_path}/h.db", Fernet.generate_key().decode()), identity=who)
    with TestClient(app, base_url=ORIGIN) as client, signed_in(client, "fay") as tab:
        asked, refreshed = len(crm.events("authorize")), len(crm.events("refresh"))
        crm.admin("expire-all")  # the access token is refused although its own expiry is an hour away
        tab.send({"type": "call", "server": "crm", "tool": "whoami", "arguments": {}})
        assert "subject: fay" in str(tab.until(of("call-finished"))["result"])
        assert len(crm.events("refresh")) > refreshed and len(crm.events("authorize")) == asked
