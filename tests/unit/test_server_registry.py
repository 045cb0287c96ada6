"""The server registry and its grants, through `create_app` with the embedding's own sign-in: admins add,
change and remove servers while the host runs; a server granted to one group is invisible and refused
to everyone else; every change is in the audit trail, without its secrets."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.requests import HTTPConnection
from starlette.testclient import TestClient

from mcp_apps_host import Identity, create_app
from mcp_apps_host.errors import NotGranted
from tests.unit.test_embedding import Tab

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "servers.py"
ORIGIN = "http://console.test"
KEY = "k" * 32
REC = {"command": sys.executable, "args": [str(FIXTURES), "rec"], "apps": True}


async def who(conn: HTTPConnection) -> Identity | None:
    """A toy sign-in: the user and their groups are named in headers (the embedding app's own concern)."""
    user = conn.headers.get("x-user")
    groups = tuple(g for g in conn.headers.get("x-groups", "").split(",") if g)
    return Identity(user, "acme", admin=user == "root", groups=groups) if user else None


def as_(user: str, groups: str = "") -> dict[str, str]:
    return {"x-user": user, "x-groups": groups}


ALICE, BOB, ROOT = as_("alice", "sales"), as_("bob", "ops"), as_("root")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    config = {"origin": ORIGIN, "sandboxOrigin": "http://{label}.sandbox.test", "database": f"sqlite:///{tmp_path}/h.db",
              "apps": {"enabled": True}, "mcpServers": {"fixed": REC}}
    with TestClient(create_app(config, identity=who, admin_key=KEY), base_url=ORIGIN) as client:
        yield client


def wait_for(check: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def names(client: TestClient, headers: dict[str, str]) -> dict[str, str]:
    return {s["name"]: s["status"] for s in client.get("/api/servers", headers=headers).json()["servers"]}


def test_only_admins_manage_servers(client: TestClient):
    assert client.get("/api/admin/servers").status_code == 401
    refused = client.get("/api/admin/servers", headers=ALICE)
    assert refused.status_code == 403 and "admin only" in refused.text
    assert client.put("/api/admin/servers/crm", headers=ALICE, json=REC).status_code == 403
    assert client.delete("/api/admin/servers/fixed", headers=ALICE).status_code == 403
    assert client.get("/api/admin/servers", headers={"authorization": "Bearer wrong"}).status_code == 401
    listing = client.get("/api/admin/servers", headers=ROOT).json()["servers"]
    assert [(s["name"], s["source"], s["readOnly"]) for s in listing] == [("fixed", "config", True)]
    # A server of the command line or the config file is read-only here.
    for response in (client.put("/api/admin/servers/fixed", headers=ROOT, json=REC),
                     client.delete("/api/admin/servers/fixed", headers=ROOT)):
        assert response.status_code == 409 and "read-only" in response.text
    assert client.delete("/api/admin/servers/nothing", headers=ROOT).status_code == 404


@pytest.mark.parametrize(("body", "named"), [
    ({**REC, "colour": "red"}, "'colour'"),
    ({**REC, "grants": {"users": "alice"}}, "grants.users"),
    ({**REC, "grants": {"teams": ["x"]}}, "grants"),
    ({**REC, "enabled": "yes"}, "enabled"),
    ({"url": "ftp://x"}, "is not an http(s) URL"),
    ({"command": "x", "url": "http://x"}, 'exactly one of "command"'),
    ([1, 2], "JSON object"),
])
def test_a_bad_entry_is_refused_naming_the_key(client: TestClient, body: Any, named: str):
    response = client.put("/api/admin/servers/crm", headers=ROOT, json=body)
    assert response.status_code == 400 and named in response.text, response.text
    assert client.put("/api/admin/servers/crm", headers=ROOT, content=b"{nope").status_code == 400
    assert [s["name"] for s in client.get("/api/admin/servers", headers=ROOT).json()["servers"]] == ["fixed"]


def test_a_granted_server_is_invisible_and_refused_to_everyone_else(client: TestClient):
    put = client.put("/api/admin/servers/crm", headers=ROOT, json={**REC, "grants": {"groups": ["sales"]}})
    assert put.status_code == 201, put.text
    wait_for(lambda: names(client, ALICE).get("crm") == "ready", "crm to connect for alice")
    assert "crm" not in names(client, BOB) and "fixed" in names(client, BOB)
    host = client.app.host  # type: ignore[attr-defined]
    bob = host.for_person(Identity("bob", "acme", groups=("ops",))).servers
    alice = host.for_person(Identity("alice", "acme", groups=("sales",))).servers
    # The model's tools come from the same list; a call by name, from any caller, is refused with the rule.
    assert "crm" not in bob.connections and bob.tool("crm", "record") is None
    assert alice.tool("crm", "record") is not None
    with pytest.raises(NotGranted, match="policy: server crm is granted to groups sales"):
        bob.get("crm")
    # Another tenant does not learn the name exists.
    other = host.for_person(Identity("eve", "globex", groups=("sales",))).servers
    with pytest.raises(Exception, match="no server named 'crm'") as refused:
        other.get("crm")
    assert not isinstance(refused.value, NotGranted)
    # A stale page's call (Bob's page typed the name) is refused, naming the rule.
    tab = Tab(client, "bob", groups=("ops",))
    try:
        tab.ws.send_json({"type": "hello"})
        tab.until(lambda f: f["type"] == "servers")
        tab.ws.send_json({"type": "call", "server": "crm", "tool": "record", "arguments": {"text": "hi"}})
        failed = tab.until(lambda f: f["type"] in ("call-failed", "notice") and "policy" in json.dumps(f))
        assert "policy: server crm is granted to groups sales" in json.dumps(failed)
    finally:
        tab.close()
    # Granted by name, Bob sees it too; the grant changed without a reconnect of the server.
    before = host.servers.connections["crm"]
    client.put("/api/admin/servers/crm", headers=ROOT, json={**REC, "grants": {"groups": ["sales"], "users": ["bob"]}})
    assert "crm" in names(client, BOB) and host.servers.connections["crm"] is before


def test_a_tab_sees_servers_come_and_go(client: TestClient):
    tab = Tab(client, "alice", groups=("sales",))
    try:
        tab.ws.send_json({"type": "hello"})
        tab.until(lambda f: f["type"] == "servers")
        client.put("/api/admin/servers/crm", headers=ROOT, json=REC)
        tab.until(lambda f: f["type"] == "servers" and any(s["name"] == "crm" and s["status"] == "ready"
                                                           for s in f["servers"]))
        tab.ws.send_json({"type": "call", "server": "crm", "tool": "record", "arguments": {"text": "on crm"}})
        tab.until(lambda f: f["type"] == "call-finished")
        client.put("/api/admin/servers/crm", headers=ROOT, json={**REC, "enabled": False})
        tab.until(lambda f: f["type"] == "servers" and "crm" not in {s["name"] for s in f["servers"]})
        client.put("/api/admin/servers/crm", headers=ROOT, json=REC)
        tab.until(lambda f: f["type"] == "servers" and "crm" in {s["name"] for s in f["servers"]})
        assert client.delete("/api/admin/servers/crm", headers=ROOT).status_code == 200
        tab.until(lambda f: f["type"] == "servers" and "crm" not in {s["name"] for s in f["servers"]})
    finally:
        tab.close()
    assert [s["name"] for s in client.get("/api/admin/servers", headers=ROOT).json()["servers"]] == ["fixed"]


def test_every_change_is_audited_without_its_secrets(client: TestClient):
    secret = "Bearer s3cr3t-token"
    body = {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": secret}, "grants": {"groups": ["sales"]}}
    assert client.put("/api/admin/servers/remote", headers=ROOT, json=body).status_code == 201
    listing = client.get("/api/admin/servers", headers=ROOT)
    assert secret not in listing.text
    (remote,) = [s for s in listing.json()["servers"] if s["name"] == "remote"]
    assert remote["entry"]["headers"] == {"Authorization": "<redacted>"} and remote["grants"]["groups"] == ["sales"]
    # Sent back as shown (the admin page does), the stored secret is kept; the grants change.
    edited = {**remote["entry"], "grants": {"groups": ["sales", "ops"]}}
    assert client.put("/api/admin/servers/remote", headers=ROOT, json=edited).status_code == 200
    host = client.app.host  # type: ignore[attr-defined]
    wait_for(lambda: "remote" in host.servers.connections, "the server to be put")
    assert host.servers.connections["remote"].spec.headers == {"Authorization": secret}
    assert client.delete("/api/admin/servers/remote", headers=ROOT).status_code == 200
    stream = client.get("/api/admin/audit", headers={"authorization": f"Bearer {KEY}", "x-user": "root"},
                        params={"tenant": "acme"})
    assert stream.status_code == 200 and secret not in stream.text
    changes = [json.loads(line) for line in stream.text.splitlines() if '"admin->host"' in line]
    assert [(c["method"], c["user"], c["server"]) for c in changes] == [
        ("admin/servers/add", "root", "remote"), ("admin/servers/change", "root", "remote"),
        ("admin/servers/remove", "root", "remote")]
    payload = client.get(f"/api/audit/payload/{changes[1]['payload_sha256']}", headers=ROOT).json()["payload"]
    assert payload["before"]["grants"] == {"groups": ["sales"]}
    assert payload["after"]["grants"] == {"groups": ["sales", "ops"]}
    assert payload["after"]["headers"] == {"Authorization": "<redacted>"}
