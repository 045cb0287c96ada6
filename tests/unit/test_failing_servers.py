"""Servers that fail, each in its own way (tests/fixtures/failing.py and servers.py), driven through a
tab as the page drives it: each failure ends in a message saying what happened where it happened,
and the other server (`fine`) and its views keep working."""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from mcp_apps_host.settings import Limits
from tests.unit.healthchecks import HealthChecks, generous_health_checks
from tests.unit.tabdriver import Socket, app_for, open_tab, reply_to, servers_ready, view_handshake
from tests.unit.test_server_eras import serving_over_http

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FAST = Limits(server_health_interval=0.5, reconnect_initial_delay=0.2, reconnect_max_delay=1.0)


@pytest.fixture(autouse=True)
def health_checks(monkeypatch: pytest.MonkeyPatch) -> HealthChecks:
    """The servers that fail here fail by exiting or breaking their stream; the working ones answer
    their frequent checks in their own time."""
    return generous_health_checks(monkeypatch)


def failing(kind: str, **env: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(FIXTURES / "failing.py"), kind], "env": env, "apps": True}


def classic(kind: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(FIXTURES / "servers.py"), kind], "apps": True}


def status_of(frame: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in frame["servers"] if s["name"] == name)


def server_in(name: str, *statuses: str):
    return lambda f: f["type"] == "servers" and any(s["name"] == name and s["status"] in statuses
                                                    for s in f["servers"])


async def ready_again(tab: Socket, name: str, timeout: float = 60) -> None:
    """Wait for a servers frame, after the latest one showing ``name`` failed, with ``name`` ready."""
    failed_at = max(i for i, (f, _) in enumerate(tab.sent) if server_in(name, "error", "retrying")(f))
    await tab.until(lambda f: server_in(name, "ready")(f) and any(
        g is f for g, _ in tab.sent[failed_at + 1:]), timeout)


async def call(tab: Socket, server: str, tool: str, arguments: dict[str, Any] | None = None) -> int:
    """Start a call from the page and return its id (from its call-started frame)."""
    known = {f["callId"] for f in tab.frames(lambda f: f["type"] == "call-started")}
    tab.put({"type": "call", "server": server, "tool": tool, "arguments": arguments or {}})
    started = await tab.until(lambda f: f["type"] == "call-started" and f["server"] == server
                              and f["tool"] == tool and f["callId"] not in known)
    return int(started["callId"])


async def ready_view(tab: Socket, server: str, tool: str) -> str:
    """Call ``tool`` from the page and bring its view to ready (as its SDK would); the view's handle."""
    call_id = await call(tab, server, tool)
    view = (await tab.until(lambda f: f["type"] in ("view-mount", "view-adopt") and f["callId"] == call_id))["view"]
    view_handshake(tab, view)
    await tab.until(reply_to(view, 1))
    tab.put({"type": "view-message", "view": view,
             "message": {"jsonrpc": "2.0", "method": "ui/notifications/initialized"}})
    return str(view)


async def ended(tab: Socket, call_id: int) -> dict[str, Any]:
    return await tab.until(lambda f: f["type"] in ("call-finished", "call-failed") and f["callId"] == call_id)


async def view_state(tab: Socket, call_id: int, state: str) -> dict[str, Any]:
    mount = await tab.until(lambda f: f["type"] == "view-mount" and f["callId"] == call_id)
    return await tab.until(lambda f: f["type"] == "view-state" and f["view"] == mount["view"] and f["state"] == state)


async def fine_view_still_works(tab: Socket) -> None:
    """The working server's view: mounted, its handshake answered, its own tool call answered."""
    call_id = await call(tab, "fine", "fine-view")
    done = await ended(tab, call_id)
    assert done["type"] == "call-finished", done
    view = (await tab.until(lambda f: f["type"] == "view-mount" and f["callId"] == call_id))["view"]
    view_handshake(tab, view, request_id=1)
    assert "result" in (await tab.until(reply_to(view, 1)))["message"]
    tab.put({"type": "view-message", "view": view,
             "message": {"jsonrpc": "2.0", "method": "ui/notifications/initialized"}})
    tab.put({"type": "view-message", "view": view, "message": {
        "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}}})
    answer = (await tab.until(reply_to(view, 2)))["message"]
    assert answer["result"]["content"][0]["text"] == "echo: hi", answer


@pytest.mark.anyio
async def test_crash_at_start_says_what_the_server_said(tmp_path: Path):
    app = app_for({"broken": failing("start-crash"), "fine": failing("fine")}, f"sqlite:///{tmp_path}/h.db", FAST)
    async with open_tab(app, ready={"fine"}) as tab:
        frame = await tab.until(server_in("broken", "error", "retrying"))
        error = status_of(frame, "broken")["error"]
        assert "fatal: cannot open /nonexistent/state.db" in error and "closed the connection" in error, error
        await fine_view_still_works(tab)


@pytest.mark.anyio
async def test_crash_mid_call_fails_that_call_and_the_server_comes_back(tmp_path: Path):
    app = app_for({"crash": classic("crash"), "fine": failing("fine")}, f"sqlite:///{tmp_path}/h.db", FAST)
    async with open_tab(app) as tab:
        call_id = await call(tab, "crash", "crash-now")
        failed = await ended(tab, call_id)
        assert failed["type"] == "call-failed" and "went away during tools/call crash-now" in failed["error"], failed
        await tab.until(server_in("crash", "error", "retrying"))
        await fine_view_still_works(tab)
        # Started again by the host: ready once more, and its tools answer.
        await ready_again(tab, "crash")
        assert (await ended(tab, await call(tab, "crash", "crash-now")))["type"] == "call-failed"


@pytest.mark.anyio
async def test_a_hung_server_is_given_up_with_a_timeout_message(tmp_path: Path):
    sleeper = {"command": sys.executable, "args": ["-c", "import time; time.sleep(600)"]}
    # Long enough for the working server to start and read its template on a busy machine; the sleeper never will.
    limits = Limits(server_connect_timeout=10.0, template_read_timeout=10.0, reconnect_initial_delay=0.2)
    app = app_for({"stuck": sleeper, "fine": failing("fine")}, f"sqlite:///{tmp_path}/h.db", limits)
    async with open_tab(app, ready={"fine"}) as tab:
        frame = await tab.until(server_in("stuck", "error", "retrying"))
        assert "did not finish connecting in time (server_connect_timeout 10 s" in status_of(frame, "stuck")["error"]
        tab.put({"type": "call", "server": "stuck", "tool": "anything", "arguments": {}})
        notice = await tab.until(lambda f: f["type"] == "notice" and "'stuck'" in f["text"])
        assert "is not connected" in notice["text"] and "did not finish connecting in time" in notice["text"], notice
        await fine_view_still_works(tab)


@pytest.mark.anyio
async def test_a_slow_call_shows_its_progress_before_it_ends(tmp_path: Path):
    app = app_for({"slow": classic("slow"), "fine": failing("fine")}, f"sqlite:///{tmp_path}/h.db", FAST)
    async with open_tab(app) as tab:
        call_id = await call(tab, "slow", "slow-tool", {"seconds": 1})
        progress = await tab.until(lambda f: f["type"] == "call-progress" and f["callId"] == call_id)
        assert progress["total"] == 10 and progress["message"].startswith("step ")
        await fine_view_still_works(tab)  # while the slow call runs
        assert (await ended(tab, call_id))["type"] == "call-finished"


@pytest.mark.anyio
async def test_malformed_ui_meta_is_named_and_the_tool_still_runs(tmp_path: Path):
    app = app_for({"bad": failing("bad-meta"), "fine": failing("fine")}, f"sqlite:///{tmp_path}/h.db", FAST)
    async with open_tab(app) as tab:
        listed = {t["name"]: t for t in status_of(tab.frames(servers_ready())[-1], "bad")["tools"]}
        assert "visibility-not-list" not in listed  # malformed visibility means nobody: never widened
        assert not listed["ui-not-object"]["hasView"] and not listed["uri-not-string"]["hasView"]
        expected = {"ui-not-object": "_meta.ui is str, not an object",
                    "uri-not-string": "resourceUri 42 is not a string"}
        for name, needle in expected.items():
            call_id = await call(tab, "bad", name)
            notice = await tab.until(lambda f, name=name: f["type"] == "notice" and f"tool {name!r}" in f["text"])
            assert "malformed _meta.ui" in notice["text"] and needle in notice["text"], notice
            assert (await ended(tab, call_id))["result"]["content"][0]["text"] == "the tool itself works"

        tab.put({"type": "call", "server": "bad", "tool": "visibility-not-list", "arguments": {}})
        refused = await tab.until(lambda f: f["type"] == "notice" and "'visibility-not-list'" in f["text"])
        assert "malformed _meta.ui: visibility 'everyone' is not a list" in refused["text"], refused

        error = (await view_state(tab, await call(tab, "bad", "csp-not-object"), "error"))["error"]
        assert "_meta.ui.csp" in error, error
        await fine_view_still_works(tab)


@pytest.mark.anyio
@pytest.mark.parametrize(("kind", "tool", "needle"), [
    ("wrong-mime", "wrong-mime", "expected 'text/html;profile=mcp-app'"),
    ("blob", "blob-view", "blob is not valid base64"),
])
async def test_a_bad_template_is_refused_in_its_view(tmp_path: Path, kind: str, tool: str, needle: str):
    server = classic("invalid") if kind == "wrong-mime" else failing(kind)
    app = app_for({"bad": server, "fine": failing("fine")}, f"sqlite:///{tmp_path}/h.db", FAST)
    async with open_tab(app) as tab:
        call_id = await call(tab, "bad", tool)
        assert (await ended(tab, call_id))["type"] == "call-finished"  # the tool itself ran
        mount = await tab.until(lambda f: f["type"] == "view-mount" and f["callId"] == call_id)
        assert mount["proxyUrl"] is None
        state = await tab.until(lambda f: f["type"] == "view-state" and f["view"] == mount["view"])
        assert state["state"] == "error" and needle in state["error"], state
        await fine_view_still_works(tab)


@pytest.fixture
def http_failing():
    """`failing.py KIND --http PORT`, stopped after the test; returns its MCP URL and process."""
    yield from serving_over_http(FIXTURES / "failing.py")


@pytest.mark.anyio
async def test_a_50_mb_template_is_refused_by_size_and_the_server_stays_up(tmp_path: Path, http_failing):
    url, _ = http_failing("huge", TEMPLATE_BYTES=str(50 * 1024 * 1024))
    app = app_for({"huge": {"url": url, "apps": True}, "fine": failing("fine")}, f"sqlite:///{tmp_path}/h.db", FAST,
                  allowedServerHosts=["127.0.0.1"])
    async with open_tab(app) as tab:
        call_id = await call(tab, "huge", "huge-view")
        assert (await ended(tab, call_id))["type"] == "call-finished"  # the tool itself ran
        error = (await view_state(tab, call_id, "error"))["error"]
        assert "52428815 bytes is larger than max_template_bytes (8388608 bytes)" in error, error
        await fine_view_still_works(tab)
        assert status_of(tab.frames(lambda f: f["type"] == "servers")[-1], "huge")["status"] == "ready"


@pytest.mark.anyio
async def test_a_template_that_changes_on_every_read_is_read_once_per_connection(tmp_path: Path):
    app = app_for({"chg": failing("changing"), "fine": failing("fine")}, f"sqlite:///{tmp_path}/h.db", FAST)
    async with open_tab(app) as tab:
        mounts = []
        for _ in range(3):
            call_id = await call(tab, "chg", "changing-view")
            mounts.append(await tab.until(lambda f, c=call_id: f["type"] == "view-mount" and f["callId"] == c))
        # Every view of this connection gets the one template read when it connected: no re-read per
        # view, no "changed" prompt each time, and nothing held back.
        assert len({m["templateSha256"] for m in mounts}) == 1
        assert [m["trust"] for m in mounts] == ["new", "trusted", "trusted"]
        assert all(m["proxyUrl"] for m in mounts)
        await fine_view_still_works(tab)


@pytest.mark.anyio
async def test_a_flood_of_progress_and_log_messages_is_thinned(tmp_path: Path, caplog):
    caplog.set_level(logging.INFO, logger="mcp_apps_host")
    flood = 3000
    # The flooding server is healthy: its health checks get a busy machine's time, not FAST's half second.
    limits = replace(FAST, max_server_log_lines_per_minute=100, server_health_interval=10.0)
    app = app_for({"flood": failing("flood", FLOOD=str(flood)), "fine": failing("fine")},
                  f"sqlite:///{tmp_path}/h.db", limits)
    async with open_tab(app) as tab:
        started = time.monotonic()
        call_id = await call(tab, "flood", "flood")
        await fine_view_still_works(tab)  # while the flood runs
        done = await ended(tab, call_id)
        minutes = (time.monotonic() - started) / 60
        assert done["type"] == "call-finished", done
        assert done["result"]["content"][0]["text"] == f"sent {flood}"
        shown = tab.frames(lambda f: f["type"] == "call-progress" and f["callId"] == call_id)
        assert 0 < len(shown) < flood // 10, len(shown)
    logged = [r.getMessage() for r in caplog.records if "flood line" in r.getMessage()]
    # The bucket, plus what refilled while it ran (a busy machine takes longer over the flood).
    assert 0 < len(logged) <= 100 + 100 * minutes + 10, (len(logged), minutes)
    assert len(logged) < flood // 10, len(logged)
    assert any("log messages dropped (over max_server_log_lines_per_minute = 100)" in r.getMessage()
               for r in caplog.records)


@pytest.mark.anyio
async def test_a_server_lost_while_its_view_calls_it_answers_the_view_and_comes_back(tmp_path: Path):
    app = app_for({"drop": failing("drop"), "fine": failing("fine")}, f"sqlite:///{tmp_path}/h.db", FAST)
    async with open_tab(app) as tab:
        call_id = await call(tab, "drop", "drop-view")
        view = (await tab.until(lambda f: f["type"] == "view-mount" and f["callId"] == call_id))["view"]
        view_handshake(tab, view, request_id=1)
        await tab.until(reply_to(view, 1))
        tab.put({"type": "view-message", "view": view,
                 "message": {"jsonrpc": "2.0", "method": "ui/notifications/initialized"}})
        tab.put({"type": "view-message", "view": view, "message": {
            "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "drop-now", "arguments": {}}}})
        answer = (await tab.until(reply_to(view, 2)))["message"]
        assert "error" in answer and "'drop' went away during tools/call drop-now" in answer["error"]["message"], answer
        await fine_view_still_works(tab)
        # The host starts it again; the same view's next call is answered.
        await ready_again(tab, "drop")
        tab.put({"type": "view-message", "view": view, "message": {
            "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "drop-view", "arguments": {}}}})
        answer = (await tab.until(reply_to(view, 3)))["message"]
        assert "result" in answer, answer
        assert answer["result"]["structuredContent"]["text"] == "a view that will lose its server"


@pytest.mark.anyio
async def test_an_http_server_that_comes_back_on_its_port_is_reconnected(tmp_path: Path, http_failing):
    url, proc = http_failing("fine")
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    app = app_for({"web": {"url": url, "apps": True}}, f"sqlite:///{tmp_path}/h.db", FAST,
                  allowedServerHosts=["127.0.0.1"])
    async with open_tab(app) as tab:
        proc.kill()
        proc.wait(timeout=10)
        frame = await tab.until(server_in("web", "error", "retrying"))
        assert status_of(frame, "web")["error"], frame
        http_failing("fine", port)
        await ready_again(tab, "web")
        done = await ended(tab, await call(tab, "web", "fine-view"))
        assert done["type"] == "call-finished", done

