"""Servers a deployment calls as itself: the client_credentials grant with the secret from the environment
(no person is asked), and a client registered beforehand used for people's sign-ins (no registration)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from starlette.testclient import TestClient

from mcp_apps_host import create_app
from tests.fixtures.oauth import start_oauth_server
from tests.unit.test_embedding import ORIGIN, Tab, of, who
from tests.unit.test_signin_people import signed_in


def _config(url: str, tmp_path: Path, auth: dict[str, object]) -> dict[str, object]:
    return {"origin": ORIGIN, "sandboxOrigin": "http://{label}.sandbox.test", "database": f"sqlite:///{tmp_path}/h.db",
            "tokenKey": Fernet.generate_key().decode(), "mcpServers": {"crm": {"url": url, "auth": auth}},
            "allowedServerHosts": ["127.0.0.1"]}


def test_client_credentials_call_as_the_deployment_and_nobody_is_asked(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CRM_SECRET", "svc-secret-value")
    with start_oauth_server("separate", client_id="svc", client_secret="svc-secret-value") as server:
        app = create_app(_config(server.resource_url, tmp_path, {"clientId": "svc", "clientSecretEnv": "CRM_SECRET",
                                                                 "grant": "client_credentials",
                                                                 "issuer": server.issuer}), identity=who)
        with TestClient(app, base_url=ORIGIN) as client:
            deadline = time.monotonic() + 60
            while client.get("/api/health", headers={"x-user": "alice"}).json()["servers"]["crm"] != "ready":
                assert time.monotonic() < deadline, "the server did not connect with the deployment's credentials"
                time.sleep(0.1)
            tab = Tab(client, "alice")
            try:
                tab.send({"type": "hello"})
                tab.until(lambda f: f["type"] == "servers" and f["servers"][0]["auth"] == "none")
                tab.send({"type": "call", "server": "crm", "tool": "whoami", "arguments": {}})
                assert "subject: service:svc" in str(tab.until(of("call-finished"))["result"])
            finally:
                tab.close()
        assert not server.events("authorize") and not server.events("register")
        assert "svc-secret-value" not in (tmp_path / "h.db").read_bytes().decode(errors="replace")


def test_a_client_registered_beforehand_signs_people_in_without_registering(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CRM_SECRET", "pre-secret")
    with start_oauth_server("embedded", client_id="pre", client_secret="pre-secret", registration=False) as server:
        app = create_app(_config(server.resource_url, tmp_path, {"clientId": "pre", "clientSecretEnv": "CRM_SECRET"}),
                         identity=who)
        with TestClient(app, base_url=ORIGIN) as client, signed_in(client, "dora"):
            pass
        assert [e["client_id"] for e in server.events("authorize")] == ["pre"] and not server.events("register")


def test_on_https_the_host_is_its_own_client_id_where_the_server_supports_that(tmp_path: Path):
    with start_oauth_server("embedded", cimd=True) as server:
        config = {**_config(server.resource_url, tmp_path, {}), "origin": "https://console.test"}
        config["mcpServers"] = {"crm": {"url": server.resource_url}}
        app = create_app(config, identity=who)
        with TestClient(app, base_url="https://console.test") as client:
            document = client.get("/oauth/client.json").json()
            assert document["client_id"] == "https://console.test/oauth/client.json"
            assert document["redirect_uris"] == ["https://console.test/oauth/callback"]
            tab = Tab(client, "erin", "https://console.test")
            try:
                tab.send({"type": "hello"})
                frame = tab.until(lambda f: f["type"] == "servers" and f["servers"][0]["signin"] is not None)
                url = frame["servers"][0]["signin"]["url"]
                assert "client_id=https%3A%2F%2Fconsole.test%2Foauth%2Fclient.json" in url
            finally:
                tab.close()
        assert not server.events("register"), "the host registered although it could name its own document"
