"""The host's rules, proven in a real browser with fixture servers (tests/fixtures/servers.py):
visibility, CSP from declared domains, no self-navigation, invalid templates, broken servers."""

from __future__ import annotations

import json
import shlex
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from harness import call_tool, server_list, view_frame, wait_servers, wait_view

pytestmark = pytest.mark.browser

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "servers.py"


def fixture_cmd(kind: str) -> str:
    return shlex.join([sys.executable, str(FIXTURES), kind])


def fixture_config(tmp_path: Path, kinds: dict[str, str], env: dict[str, str] | None = None) -> Path:
    """A --config file: the stdio server's env only reaches it through the config."""
    path = tmp_path / "servers.json"
    servers = {name: {"command": sys.executable, "args": [str(FIXTURES), kind], "env": env or {}}
               for name, kind in kinds.items()}
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


class Origin:
    """A loopback HTTP origin that counts the requests it gets and allows CORS."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        hits = self.hits

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                body = b"payload"
                self.send_response(200)
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


@pytest.fixture
def origins():
    made: list[Origin] = []

    def make() -> Origin:
        made.append(Origin())
        return made[-1]

    yield make
    for o in made:
        o.close()


def check(frame, name: str, timeout: float = 15_000) -> str:
    item = frame.locator(f'[data-check="{name}"]')
    item.wait_for(timeout=timeout)
    return item.inner_text()


def test_visibility_rules(start_host, page_for):
    host = start_host(servers={"vis": fixture_cmd("vis"), "other": fixture_cmd("other")})
    page = page_for(host)
    tools = {s["name"]: {t["name"] for t in s["tools"]} for s in server_list(page, host)}
    # Only tools a model may see are offered to a person: app-only and nobody's tools are not.
    assert tools["vis"] == {"vis-view", "model-only-tool"}
    assert "app-only-tool" not in page.locator("body").inner_text()

    call_tool(page, "vis", "app-only-tool", {})
    page.get_by_text("only callable by its app").wait_for(timeout=10_000)

    call_tool(page, "vis", "vis-view", {})
    frame = view_frame(wait_view(page, "vis", "vis-view"))
    assert check(frame, "app-only").startswith("ok:") and "app-only ran" in check(frame, "app-only")
    assert check(frame, "model-only").startswith("error:") and "visibility" in check(frame, "model-only")
    assert "not a tool of server 'vis'" in check(frame, "other-server")
    assert check(frame, "nobody").startswith("error:")


def test_declared_connect_domain_allowed_undeclared_blocked(start_host, page_for, origins, tmp_path):
    allowed, blocked = origins(), origins()
    config = fixture_config(tmp_path, {"csp": "csp"}, {"ALLOWED_ORIGIN": allowed.url, "BLOCKED_ORIGIN": blocked.url})
    host = start_host(config=config)
    page = page_for(host)
    call_tool(page, "csp", "csp-view", {})
    frame = view_frame(wait_view(page, "csp", "csp-view"))
    assert check(frame, "allowed") == 'ok: "payload"'
    assert check(frame, "blocked").startswith("error:")
    assert allowed.hits == ["/data"]
    assert blocked.hits == []  # the browser never sent it: blocked by the CSP header, not by the network


def test_view_cannot_navigate_away(start_host, page_for, origins, tmp_path):
    target = origins()
    host = start_host(config=fixture_config(tmp_path, {"nav": "navigate"}, {"BLOCKED_ORIGIN": target.url}))
    page = page_for(host)
    call_tool(page, "nav", "nav-view", {})
    view = wait_view(page, "nav", "nav-view")
    frame = view_frame(view)
    assert check(frame, "after", timeout=20_000) == "still here: about:srcdoc"
    assert check(frame, "popup") != "opened"
    assert target.hits == []
    assert page.url.startswith(host.origin)  # the host page itself was not navigated either


def test_invalid_templates_show_clear_errors(start_host, page_for, tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_APPS_HOST_MAX_TEMPLATE_BYTES", "100000")
    host = start_host(config=fixture_config(tmp_path, {"bad": "invalid"}, {"BIG_TEMPLATE_BYTES": "200000"}))
    page = page_for(host)
    expected = {
        "wrong-mime": "expected 'text/html;profile=mcp-app'",
        "too-large": "max_template_bytes (100000 bytes)",
        "not-ui-scheme": "must start with ui://",
        "missing": "resources/read failed",
    }
    for tool, needle in expected.items():
        call_tool(page, "bad", tool, {})
        view = wait_view(page, "bad", tool, state="error")
        assert needle in view.inner_text(), (tool, view.inner_text())
        assert view.locator("iframe").count() == 0
    # The tools themselves still ran and their results are in the conversation.
    page.get_by_text("the tool itself works").nth(3).wait_for(timeout=15_000)


def test_server_that_cannot_start_is_reported_and_the_host_stays_up(start_host, page_for):
    host = start_host(servers={"ghost": "/nonexistent/mcp-server --stdio", "vis": fixture_cmd("vis")})
    page = page_for(host, wait_ready=False)
    wait_servers(page, host, ["vis"])
    deadline = time.monotonic() + 20
    while True:
        ghost = {s["name"]: s for s in server_list(page, host)}["ghost"]
        if ghost["status"] in ("error", "retrying") and ghost["error"]:
            break
        assert time.monotonic() < deadline, ghost
        time.sleep(0.2)
    assert "/nonexistent/mcp-server" in ghost["error"]
    page.get_by_text("/nonexistent/mcp-server", exact=False).first.wait_for(timeout=10_000)
    assert "ghost" in host.log_text() and "/nonexistent/mcp-server" in host.log_text()
    # The other server works as usual.
    call_tool(page, "vis", "vis-view", {})
    wait_view(page, "vis", "vis-view")


def test_server_crash_is_reported_and_reconnected(start_host, page_for):
    host = start_host(servers={"crash": fixture_cmd("crash")})
    page = page_for(host)
    call_tool(page, "crash", "crash-now", {})
    page.get_by_text("server 'crash' went away during tools/call crash-now", exact=False).first.wait_for(timeout=30_000)
    # After the crash the server is started again (backoff starts at 1 s).
    deadline = time.monotonic() + 40
    seen = set()
    while True:
        status = server_list(page, host)[0]["status"]
        seen.add(status)
        if status == "ready" and seen & {"error", "retrying", "connecting"}:
            break
        assert time.monotonic() < deadline, seen
        time.sleep(0.2)


def test_long_call_shows_progress_and_cancels(start_host, page_for):
    host = start_host(servers={"rec": fixture_cmd("rec")})
    page = page_for(host)
    call_tool(page, "rec", "record-slow", {"seconds": 30})
    frame = view_frame(wait_view(page, "rec", "record-slow"))
    card = page.locator('[data-testid=call][data-state="running"]').last
    progress = card.locator("[data-testid=call-progress]")
    progress.wait_for(timeout=15_000)
    page.wait_for_function("el => /step \\d+ of 300/.test(el.textContent)", arg=progress.element_handle(),
                           timeout=15_000)
    card.locator("[data-testid=call-cancel]").click()
    page.locator('[data-testid=call][data-state="cancelled"]').wait_for(timeout=15_000)
    cancelled = frame.locator("li.seen", has_text="tool-cancelled")
    # The view heard it (its line is in its document); whether the line is laid out yet is not this test's:
    # once in about fifty runs on a loaded machine Chromium reported it without a box for 15 s.
    cancelled.wait_for(state="attached", timeout=15_000)
    assert frame.locator("li.seen", has_text="tool-result").count() == 0
    assert "cancelled by the person" in (cancelled.text_content() or "")


def test_server_that_hangs_times_out_and_is_retried(start_host, page_for, monkeypatch):
    # The limits are the working server's too: long enough for it to start and read its template on a busy
    # machine; the sleeper is given up after both (20 s).
    monkeypatch.setenv("MCP_APPS_HOST_SERVER_CONNECT_TIMEOUT", "10")
    monkeypatch.setenv("MCP_APPS_HOST_TEMPLATE_READ_TIMEOUT", "10")
    sleeper = shlex.join([sys.executable, "-c", "import time; time.sleep(600)"])
    host = start_host(servers={"stuck": sleeper, "vis": fixture_cmd("vis")})
    page = page_for(host, wait_ready=False)
    deadline = time.monotonic() + 120
    while True:
        stuck = {s["name"]: s for s in server_list(page, host)}["stuck"]
        if stuck["status"] in ("error", "retrying") and stuck["error"]:
            break
        assert time.monotonic() < deadline, stuck
        time.sleep(0.2)
    assert "in time" in stuck["error"]
    wait_servers(page, host, ["vis"])  # the rest of the host is unaffected


def test_hostile_view_stays_in_its_box(start_host, page_for):
    host = start_host(servers={"evil": fixture_cmd("evil")})
    page = page_for(host)
    # A cookie of the host's site that scripts may read (the session cookie is HttpOnly besides): the
    # host page reads it, so only the sandbox being another site keeps it from the view.
    page.context.add_cookies([{"name": "mah_canary", "value": "1", "url": host.origin}])
    assert "mah_canary=1" in page.evaluate("() => document.cookie")
    session = [c for c in page.context.cookies(host.origin) if c["name"] == "mah_session"]
    assert session and session[0]["httpOnly"] and session[0]["sameSite"] == "Strict"
    call_tool(page, "evil", "evil-view", {})
    view = wait_view(page, "evil", "evil-view")
    frame = view_frame(view)
    assert check(frame, "still-here", timeout=20_000) == "yes"  # forged resource-ready messages were dropped
    assert check(frame, "cookie") == "hidden"
    # A no-cors request would get an opaque answer: only connect-src 'none' makes it fail.
    assert check(frame, "host-api").startswith("error:"), check(frame, "host-api")
    assert check(frame, "huge").startswith("error:") and "max_view_message_bytes" in check(frame, "huge")
    assert check(frame, "after-huge").startswith("ok:")  # and the view (and socket) kept working
    assert page.url.startswith(host.origin + "/") and "stolen" not in page.url
    assert view.get_attribute("data-state") == "ready"
    view.locator(".view-log summary, [data-testid=view-log] summary").first.click()
    assert "max_view_message_bytes" in view.inner_text()  # the refusal is in the view's log too
