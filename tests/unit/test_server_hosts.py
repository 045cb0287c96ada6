"""Where HTTP servers may live (``allowedServerHosts``): checked on the address a name resolves to when the
host connects, before any byte is sent. The resolver is stubbed; no traffic leaves this machine."""

from __future__ import annotations

import ipaddress
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_apps_host.config.serverhosts import ServerHosts
from mcp_apps_host.errors import ConfigError
from mcp_apps_host.servers import guard
from mcp_apps_host.servers.guard import CheckedBackend, RefusedHost
from tests.unit.tabdriver import app_for, open_tab
from tests.unit.test_embedding import free_port, wait_listening

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ip = ipaddress.ip_address


@pytest.mark.parametrize(("address", "kind"), [
    ("127.0.0.1", "a loopback address"), ("::1", "a loopback address"), ("0.0.0.0", "a loopback address"),
    ("::ffff:127.0.0.1", "a loopback address"), ("10.0.0.5", "a private address"),
    ("192.168.1.4", "a private address"), ("172.16.0.1", "a private address"), ("fd12::1", "a private address"),
    ("100.64.0.1", "a private address"), ("169.254.10.10", "a link-local address"),
    ("fe80::1", "a link-local address"), ("169.254.169.254", "a cloud metadata address"),
    ("fd00:ec2::254", "a cloud metadata address"),
])
def test_an_embedding_refuses_internal_addresses_unless_listed(address: str, kind: str):
    refusal = ServerHosts().refusal("crm.internal", ip(address))
    assert refusal == f"policy: allowedServerHosts: crm.internal resolves to {ip(address)}, {kind}, not allowed"
    assert ServerHosts().refusal("crm.example", ip("93.184.216.34")) is None  # a public address


def test_serve_allows_this_machine_and_what_is_listed():
    serve = ServerHosts(loopback=True)
    assert serve.refusal("localhost", ip("127.0.0.1")) is None
    assert "a private address" in (serve.refusal("crm.internal", ip("10.0.0.5")) or "")
    listed = ServerHosts.parse(["crm.internal", "10.1.2.0/24", "*.corp.example"], "allowedServerHosts")
    assert listed.refusal("crm.internal", ip("10.0.0.5")) is None  # the name is listed: wherever it lives
    assert listed.refusal("CRM.internal.", ip("10.0.0.5")) is None
    assert listed.refusal("db.corp.example", ip("10.9.9.9")) is None
    assert listed.refusal("other", ip("10.1.2.7")) is None  # the address is listed
    assert "not in the list" in (listed.refusal("other", ip("10.1.3.7")) or "")
    assert "not in the list" in (listed.refusal("public.example", ip("93.184.216.34")) or "")
    # A metadata address only when the address itself is listed, never through a name.
    assert "cloud metadata" in (listed.refusal("crm.internal", ip("169.254.169.254")) or "")
    assert ServerHosts.parse(["169.254.169.254"], "x").refusal("md", ip("169.254.169.254")) is None
    with pytest.raises(ConfigError, match="allowedServerHosts: 'bad host!' is not a host name"):
        ServerHosts.parse(["bad host!"], "allowedServerHosts")
    with pytest.raises(ConfigError, match="expected a list"):
        ServerHosts.parse("crm.internal", "allowedServerHosts")


class _Recorder:
    """Stands in for the real network backend: records where it was asked to connect, connects nowhere."""

    def __init__(self) -> None:
        self.connects: list[tuple[str, int]] = []

    async def connect_tcp(self, host: str, port: int, **_kw: Any) -> Any:
        self.connects.append((host, port))
        return object()


@pytest.mark.anyio
async def test_each_connection_checks_the_address_the_name_resolves_to_then(monkeypatch: pytest.MonkeyPatch):
    answers = {"crm.example": [ip("93.184.216.34")]}

    async def resolve(host: str, port: int) -> list[Any]:
        return answers[host]

    monkeypatch.setattr(guard, "resolve", resolve)
    backend = CheckedBackend(ServerHosts())
    recorder = _Recorder()
    backend._inner = recorder  # type: ignore[assignment]
    await backend.connect_tcp("crm.example", 443)
    assert recorder.connects == [("93.184.216.34", 443)]  # the checked address, not the name again
    # Later the name resolves to an internal address (DNS rebinding): caught on the next connection.
    answers["crm.example"] = [ip("10.0.0.5")]
    with pytest.raises(RefusedHost, match=r"crm\.example resolves to 10\.0\.0\.5, a private address"):
        await backend.connect_tcp("crm.example", 443)
    # One internal address among public ones is enough to refuse.
    answers["crm.example"] = [ip("93.184.216.34"), ip("169.254.169.254")]
    with pytest.raises(RefusedHost, match="cloud metadata"):
        await backend.connect_tcp("crm.example", 443)
    assert recorder.connects == [("93.184.216.34", 443)]


class _CountingListener:
    """A loopback TCP listener that counts the connections it accepts (and closes them)."""

    def __init__(self) -> None:
        self.count = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.count += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.sock.close()


def _status(frame: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in frame["servers"] if s["name"] == name)


@pytest.mark.anyio
async def test_an_embedding_refuses_a_server_whose_name_resolves_to_loopback_before_connecting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    listener = _CountingListener()
    resolved: list[str] = []

    async def resolve(host: str, port: int) -> list[Any]:
        resolved.append(host)
        return [ip("127.0.0.1")] if host == "crm.internal" else []

    monkeypatch.setattr(guard, "resolve", resolve)
    fine = {"command": sys.executable, "args": [str(FIXTURES / "servers.py"), "rec"]}
    try:
        app = app_for({"crm": {"url": f"http://crm.internal:{listener.port}/mcp"}, "fine": fine},
                      f"sqlite:///{tmp_path}/h.db")
        async with open_tab(app, ready={"fine"}) as tab:
            frame = await tab.until(lambda f: f["type"] == "servers" and "allowedServerHosts" in
                                    str(_status(f, "crm").get("error")))
            assert ("policy: allowedServerHosts: crm.internal resolves to 127.0.0.1, a loopback address, not allowed"
                    in _status(frame, "crm")["error"])
        assert "crm.internal" in resolved
        assert listener.count == 0  # refused before any connection was opened
    finally:
        listener.close()


@pytest.mark.anyio
async def test_a_listed_name_is_reached_at_its_checked_address(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    port = free_port()
    server = subprocess.Popen([sys.executable, str(FIXTURES / "whoami.py"), str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    resolved: list[str] = []

    async def resolve(host: str, port: int) -> list[Any]:
        resolved.append(host)
        return [ip("127.0.0.1")]

    monkeypatch.setattr(guard, "resolve", resolve)
    try:
        wait_listening(port, server)
        # The fixture server takes only a Host header of its own machine's names (DNS rebinding protection):
        # the request still names the host it was given, while the connection goes to the checked address.
        app = app_for({"who": {"url": f"http://localhost:{port}/mcp"}}, f"sqlite:///{tmp_path}/h.db",
                      allowedServerHosts=["localhost"])
        async with open_tab(app, ready={"who"}) as tab:
            tab.put({"type": "call", "server": "who", "tool": "whoami", "arguments": {}})
            done = await tab.until(lambda f: f["type"] == "call-finished")
            assert "authorization: none" in str(done["result"])
        assert set(resolved) == {"localhost"}
    finally:
        server.terminate()
        with anyio.move_on_after(30):
            server.wait(30)
