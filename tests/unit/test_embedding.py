"""`create_app` embedded with the embedding app's own sign-in: people see only their own,
views are off unless enabled and opted in, a view's handle works only for the person who has it."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.requests import HTTPConnection
from starlette.testclient import TestClient

from mcp_apps_host import Identity, create_app
from mcp_apps_host.errors import ConfigError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "servers.py"
ORIGIN = "http://console.test"


async def who(conn: HTTPConnection) -> Identity | None:
    """A toy sign-in: the user is named in a header (the embedding app's own concern)."""
    user = conn.headers.get("x-user")
    return Identity(user, "acme", admin=user == "root") if user else None


def config(tmp_path: Path, **extra: Any) -> dict[str, Any]:
    server = {"command": sys.executable, "args": [str(FIXTURES), "rec"]}
    return {"origin": ORIGIN, "sandboxOrigin": "http://{label}.sandbox.test", "database": f"sqlite:///{tmp_path}/h.db",
            "apps": {"enabled": True}, "mcpServers": {"rec": {**server, "apps": True}, "plain": server},
            "allowedServerHosts": ["127.0.0.1"], **extra}  # the fixture HTTP servers listen on loopback


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(config(tmp_path), identity=who), base_url=ORIGIN) as client:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            states = client.get("/api/health", headers={"x-user": "alice"}).json()["servers"]
            if set(states.values()) == {"ready"}:
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"servers did not connect: {states}")
        yield client


class Tab:
    """The page's side of one WebSocket, for a test to drive."""

    def __init__(self, client: TestClient, user: str, origin: str = ORIGIN, groups: tuple[str, ...] = ()) -> None:
        ws = origin.replace("http", "ws", 1)
        headers = {"x-user": user, "origin": origin, **({"x-groups": ",".join(groups)} if groups else {})}
        self._cm = client.websocket_connect(f"{ws}/ws", headers=headers)
        self.ws = self._cm.__enter__()
        self.seen: list[dict[str, Any]] = []

    def send(self, frame: dict[str, Any]) -> None:
        self.ws.send_json(frame)

    def until(self, match: Callable[[dict[str, Any]], bool], limit: int = 200) -> dict[str, Any]:
        for _ in range(limit):
            frame = self.ws.receive_json()
            self.seen.append(frame)
            if match(frame):
                return frame
        raise AssertionError(f"no such frame among {[f['type'] for f in self.seen[-limit:]]}")

    def close(self) -> None:
        self._cm.__exit__(None, None, None)


def of(kind: str, **fields: Any) -> Callable[[dict[str, Any]], bool]:
    return lambda f: f["type"] == kind and all(f.get(k) == v for k, v in fields.items())


def test_create_app_needs_the_page_origin(tmp_path: Path):
    with pytest.raises(ConfigError, match="origin is required"):
        create_app({"database": f"sqlite:///{tmp_path}/h.db"})


def test_nobody_signed_in_is_refused(client: TestClient):
    assert client.get("/").status_code == 401
    assert client.get("/api/servers").status_code == 401
    assert client.get("/", headers={"x-user": "alice"}).status_code == 200


def test_each_person_sees_only_their_own_conversations_and_audit(client: TestClient):
    alice, bob = Tab(client, "alice"), Tab(client, "bob")
    try:
        alice.send({"type": "hello"})
        mine = alice.until(of("conversation-reset"))["id"]
        alice.send({"type": "call", "server": "rec", "tool": "record", "arguments": {"text": "alice was here"}})
        alice.until(of("call-finished"))
        bob.send({"type": "hello"})
        bobs = bob.until(of("conversation-reset"))["id"]
        assert bobs != mine
        bob.send({"type": "conversation-open", "id": mine})  # a known id opens nothing of Alice's
        reopened = bob.until(of("conversation-reset"))
        assert reopened["id"] == bobs
        listing = bob.until(of("conversations"))
        assert [i["id"] for i in listing["items"]] == [bobs]
        assert not any(f["type"] == "call-started" for f in bob.seen)
    finally:
        alice.close()
        bob.close()
    lines = client.get("/api/audit?format=json", headers={"x-user": "bob"}).json()["events"]
    assert lines == [] or all(e["user"] == "bob" for e in lines)
    alice_rows = client.get("/api/audit?format=json&limit=10000", headers={"x-user": "alice"}).json()["events"]
    assert any(e["method"] == "tools/call" for e in alice_rows) and all(e["user"] == "alice" for e in alice_rows)
    secret = next(e["payload_sha256"] for e in alice_rows if e["method"] == "tools/call" and e["payload_sha256"]
                  and "alice was here" in (e["payload"] or ""))
    assert client.get(f"/api/audit/payload/{secret}", headers={"x-user": "alice"}).status_code == 200
    assert client.get(f"/api/audit/payload/{secret}", headers={"x-user": "bob"}).status_code == 404
    everyone = client.get("/api/audit?format=json&limit=10000", headers={"x-user": "root"}).json()["events"]
    assert {e["user"] for e in everyone} >= {"alice"} and len(everyone) >= len(alice_rows)


def test_a_server_that_has_not_opted_in_shows_text_and_no_view(client: TestClient):
    tab = Tab(client, "alice")
    try:
        tab.send({"type": "hello"})
        servers = tab.until(of("servers"))["servers"]
        views = {s["name"]: {t["name"]: t["hasView"] for t in s["tools"]} for s in servers}
        assert views["rec"]["record"] and not views["plain"]["record"]
        tab.send({"type": "call", "server": "plain", "tool": "record", "arguments": {"text": "plain"}})
        done = tab.until(of("call-finished"))
        assert "plain" in str(done["result"]) and not any(f["type"] == "view-mount" for f in tab.seen)
        tab.send({"type": "call", "server": "rec", "tool": "record", "arguments": {"text": "app"}})
        tab.until(of("view-mount", server="rec"))
    finally:
        tab.close()
    host = client.app.host  # type: ignore[attr-defined]
    assert host.servers.connections["plain"].templates == {}  # its templates were never fetched
    assert host.servers.connections["rec"].templates != {}


def test_a_views_handle_works_only_for_the_person_who_has_it(client: TestClient):
    alice, bob = Tab(client, "alice"), Tab(client, "bob")
    try:
        for tab in (alice, bob):
            tab.send({"type": "hello"})
            tab.until(of("conversation-reset"))
        alice.send({"type": "call", "server": "rec", "tool": "record", "arguments": {}})
        mount = alice.until(of("view-mount", server="rec"))
        ready = {"jsonrpc": "2.0", "method": "ui/notifications/sandbox-proxy-ready", "params": {}}
        # Bob names Alice's view: nothing happens, for him or for her.
        bob.send({"type": "view-message", "view": mount["view"], "message": ready})
        bob.send({"type": "chat", "text": "/help"})
        bob.until(of("notice"))
        assert not any(f["type"] == "view-post" for f in bob.seen)
        alice.send({"type": "view-message", "view": mount["view"], "message": ready})
        post = alice.until(of("view-post", view=mount["view"]))
        records = client.app.host.stores.views  # type: ignore[attr-defined]
        deadline = time.monotonic() + 10
        while (record := records.get(mount["view"])) is None and time.monotonic() < deadline:
            time.sleep(0.05)  # written off the event loop, just after the mount
        assert record is not None and record.identity.key == ("acme", "alice") and record.tool == "record"
        assert post["message"]["method"] == "ui/notifications/sandbox-resource-ready"
        # The proxy page is served by the signed handle on its own origin only; the bare handle opens nothing.
        proxy = mount["proxyUrl"]
        sandbox_base = mount["sandboxOrigin"]
        assert proxy.startswith(sandbox_base + "/proxy/") and mount["view"] not in proxy
        assert client.get(proxy).status_code == 200
        assert client.get(f"{sandbox_base}/proxy/{mount['view']}").status_code == 404
        other_origin = "http://other-0000.sandbox.test"
        assert client.get(proxy.replace(sandbox_base, other_origin)).status_code == 404
        # The sandbox never serves the host page, and the page's origin never serves a proxy.
        assert client.get(f"{sandbox_base}/").status_code == 404
        assert client.get(proxy.replace(sandbox_base, ORIGIN), headers={"x-user": "alice"}).status_code == 404
    finally:
        alice.close()
        bob.close()


def test_an_http_server_can_run_as_the_signed_in_person(tmp_path: Path):
    """`server_headers` gives each person their own connection, carrying their credentials."""
    port = free_port()
    server = subprocess.Popen([sys.executable, str(FIXTURES.parent / "whoami.py"), str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tokens = {"alice": "Bearer alice-token", "bob": "Bearer bob-token"}
    try:
        wait_listening(port, server)
        cfg = {**config(tmp_path), "mcpServers": {"who": {"url": f"http://127.0.0.1:{port}/mcp"},
                                                  "shared": {"url": f"http://127.0.0.1:{port}/mcp"}}}
        app = create_app(cfg, identity=who, server_headers=lambda person, name: (
            {"Authorization": tokens[person.user]} if name == "who" else None))
        with TestClient(app, base_url=ORIGIN) as client:
            answers = {}
            for user in ("alice", "bob"):
                tab = Tab(client, user)
                try:
                    tab.send({"type": "hello"})
                    tab.until(lambda f: f["type"] == "servers" and all(s["status"] == "ready" for s in f["servers"]))
                    for name in ("who", "shared"):
                        tab.send({"type": "call", "server": name, "tool": "whoami", "arguments": {}})
                        answers[user, name] = str(tab.until(of("call-finished"))["result"])
                finally:
                    tab.close()
        assert "alice-token" in answers["alice", "who"] and "bob-token" in answers["bob", "who"]
        assert "authorization: none" in answers["alice", "shared"] and "authorization: none" in answers["bob", "shared"]
    finally:
        server.kill()
        server.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        assert proc.poll() is None, "the server exited"
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}")
