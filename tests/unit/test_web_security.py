"""Who may reach the host: token → cookie, Host and Origin checks, and the proxy page's CSP header."""

from __future__ import annotations

import os

import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from mcp_apps_host.host.process.core import Host
from mcp_apps_host.host.process.sandbox import Sandbox
from mcp_apps_host.servers.manager import ServerManager
from mcp_apps_host.settings import Limits
from mcp_apps_host.values.csp import ViewCsp
from mcp_apps_host.values.templates import Template
from mcp_apps_host.web.access import Access
from mcp_apps_host.web.app import host_app
from mcp_apps_host.web.sandbox import sandbox_app

ORIGIN = "http://127.0.0.1:8765"
SANDBOX = "http://localhost:8766"
WS = "ws://127.0.0.1:8765/ws"


@pytest.fixture
def host() -> Host:
    return Host(servers=ServerManager([], Limits()), limits=Limits(), host_origin=ORIGIN,
                sandbox=Sandbox.on_port("http", "localhost", 8766, per_server=False))


@pytest.fixture
def client(host: Host) -> TestClient:
    app = host_app(host, Access(token="secret-token", bind_host="127.0.0.1", port=8765))
    return TestClient(app, base_url=ORIGIN)


def sign_in(client: TestClient) -> None:
    response = client.get("/?token=secret-token", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/"
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie


def test_page_needs_the_token(client: TestClient):
    assert client.get("/").status_code == 401
    assert client.get("/?token=wrong").status_code == 401
    sign_in(client)
    page = client.get("/")
    assert page.status_code == 200
    csp = page.headers["content-security-policy"]
    assert f"frame-src {SANDBOX}" in csp and "frame-ancestors 'none'" in csp


def test_api_needs_the_cookie(client: TestClient):
    assert client.get("/api/servers").status_code == 401
    sign_in(client)
    assert client.get("/api/servers").json() == {"servers": []}


def test_dns_rebinding_host_is_refused(client: TestClient):
    sign_in(client)
    assert client.get("/api/servers", headers={"host": "evil.example:8765"}).status_code == 421
    assert client.get("/", headers={"host": "evil.example:8765"}).status_code == 421


@pytest.mark.parametrize("origin", [SANDBOX, "http://evil.example", "null", "http://127.0.0.1:9999"])
def test_cross_origin_api_is_refused(client: TestClient, origin: str):
    sign_in(client)
    assert client.get("/api/servers", headers={"origin": origin}).status_code == 403


def test_websocket_checks_origin_and_cookie(client: TestClient):
    with pytest.raises(WebSocketDisconnect):
        with client.websocket_connect(WS, headers={"origin": ORIGIN}) as ws:
            ws.receive_text()
    sign_in(client)
    for origin in (SANDBOX, "http://evil.example"):
        with pytest.raises(WebSocketDisconnect):
            with client.websocket_connect(WS, headers={"origin": origin}) as ws:
                ws.receive_text()
    with client.websocket_connect(WS, headers={"origin": ORIGIN}) as ws:
        ws.send_json({"type": "hello", "theme": "dark"})
        welcome, first = ws.receive_json(), ws.receive_json()
        assert welcome["type"] == "welcome" and welcome["worker"] == os.getpid()
        assert first["type"] == "theme" and first["theme"] == "dark"
        ws.send_text("not json")  # dropped, the socket stays open
        ws.send_json({"type": "chat", "text": "/call"})
        seen = [ws.receive_json() for _ in range(2)]
        assert any(m["type"] == "notice" and "Usage" in m["text"] for m in seen)


def test_proxy_page_carries_the_views_csp(host: Host):
    sandbox = TestClient(sandbox_app(host), base_url=SANDBOX)
    assert sandbox.get("/proxy/unknown-handle").status_code == 404
    template = Template(server="s", uri="ui://s/v", html="<p>x</p>", sha256="0" * 64,
                        csp=ViewCsp(connect_domains=("https://api.example.com",)))
    reports: list[dict] = []
    view = host.register_view(template, on_csp_report=reports.append)
    page = sandbox.get(f"/proxy/{view.token}")
    assert page.status_code == 200
    csp = page.headers["content-security-policy"]
    assert "connect-src https://api.example.com" in csp
    assert "frame-src 'none'" in csp and "object-src 'none'" in csp and "form-action 'none'" in csp
    assert f"frame-ancestors {ORIGIN}" in csp
    report_path = csp.split("report-uri ", 1)[1].split(";")[0]
    assert report_path.startswith("/csp-report/")
    assert sandbox.get("/sandbox.js").status_code == 404  # the proxy's script is inline, nowhere else
    # The handle alone opens nothing: only the signed token does, and a tampered one is refused.
    assert sandbox.get(f"/proxy/{view.handle}").status_code == 404
    assert sandbox.get(f"/proxy/{view.token[:-2]}xx").status_code == 404
    body = {"csp-report": {"blocked-uri": "https://evil.example/x", "effective-directive": "connect-src"}}
    assert sandbox.post(report_path, json=body).status_code == 204
    assert reports == [{"blocked-uri": "https://evil.example/x", "effective-directive": "connect-src"}]
    assert sandbox.post(f"/csp-report/{view.handle}", json=body).status_code == 204 and len(reports) == 1


def test_per_server_origins():
    sandbox = Sandbox.on_port("http", "localhost", 8766, per_server=True)
    a, b = sandbox.origin_for("chart"), sandbox.origin_for("forms")
    assert a != b and a.startswith("http://chart-") and a.endswith(".localhost:8766")
    assert sandbox.origin_for("chart") == a  # stable
    assert sandbox.origin_for("chart", "app.example.com") not in (a, b)  # a requested domain gets its own label
    assert sandbox.page_sources == ["http://*.localhost:8766"]
    assert sandbox.host_allowed(a.removeprefix("http://")) and not sandbox.host_allowed("evil.example:8766")
    assert not sandbox.host_allowed("chart.localhost:9999")


def test_proxy_only_on_its_own_servers_origin():
    sandbox = Sandbox.on_port("http", "localhost", 8766, per_server=True)
    host = Host(servers=ServerManager([], Limits()), limits=Limits(), host_origin=ORIGIN, sandbox=sandbox)
    template = Template(server="chart", uri="ui://c/v", html="<p>x</p>", sha256="0" * 64, csp=ViewCsp())
    view = host.register_view(template, on_csp_report=lambda report: None)
    own = view.origin
    other = sandbox.origin_for("forms")
    assert TestClient(sandbox_app(host), base_url=own).get(f"/proxy/{view.token}").status_code == 200
    assert TestClient(sandbox_app(host), base_url=other).get(f"/proxy/{view.token}").status_code == 404


def test_odd_frames_from_the_page_do_not_end_the_socket(client: TestClient):
    sign_in(client)
    with client.websocket_connect(WS, headers={"origin": ORIGIN}) as ws:
        for frame in ([1, 2], {"type": 5}, {"type": "view-message", "view": ["x"], "message": None},
                      {"type": "consent-reply", "id": "nope"}, {"type": "call", "server": 1, "tool": None},
                      {"type": "conversation-rename", "id": 3, "title": None}, {"type": "theme", "theme": {}}):
            ws.send_json(frame)
        ws.send_json({"type": "chat", "text": "/help"})
        for _ in range(10):
            message = ws.receive_json()
            if message["type"] == "notice" and "/call" in message["text"]:
                break
        else:
            raise AssertionError("the socket stopped answering")
