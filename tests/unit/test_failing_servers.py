"""Servers that fail, each in its own way (tests/fixtures/failing.py and servers.py), driven through a
tab as the page drives it: each failure ends in a message saying what happened where it happened,
and the other server (`fine`) and its views keep working."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_apps_host.settings import Limits
from tests.unit.tabdriver import Socket, app_for, open_tab, reply_to, servers_ready, view_handshake

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FAST = Limits(server_health_interval=0.5, reconnect_initial_delay=0.2, reconnect_max_delay=1.0)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def failing(kind: str, **env: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(FIXTURES / "failing.py"), kind], "env": env, "apps": True}


def classic(kind: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(FIXTURES / "servers.py"), kind], "apps": True}


def status_of(frame: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in frame["servers"] if s["name"] == name)


def server_in(name: str, *statuses: str):
    return lambda f: f["type"] == "servers" and any(s["name"] == name and s["status"] in statuses
                                                    for s in f["servers"])


def call(tab: Socket, server: str, tool: str, arguments: dict[str, Any] | None = None) -> int:
    """Start a call from the page; returns how many calls were started before it (its call id)."""
    started = len(tab.frames(lambda f: f["type"] == "call-started"))
    tab.put({"type": "call", "server": server, "tool": tool, "arguments": arguments or {}})
    return started


async def ended(tab: Socket, call_id: int) -> dict[str, Any]:
    return await tab.until(lambda f: f["type"] in ("call-finished", "call-failed") and f["callId"] == call_id)


async def view_state(tab: Socket, call_id: int, state: str) -> dict[str, Any]:
    mount = await tab.until(lambda f: f["type"] == "view-mount" and f["callId"] == call_id)
    return await tab.until(lambda f: f["type"] == "view-state" and f["view"] == mount["view"] and f["state"] == state)


async def fine_view_still_works(tab: Socket) -> None:
    """The working server's view: mounted, its handshake answered, its own tool call answered."""
    call_id = call(tab, "fine", "fine-view")
    assert (await ended(tab, call_id))["type"] == "call-finished"
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
        call_id = call(tab, "crash", "crash-now")
        failed = await ended(tab, call_id)
        assert failed["type"] == "call-failed" and "went away during tools/call crash-now" in failed["error"], failed
        await tab.until(server_in("crash", "error", "retrying"))
        await fine_view_still_works(tab)
        # Started again by the host: ready once more, and its tools answer.
        await tab.until(lambda f: f["type"] == "servers" and status_of(f, "crash")["status"] == "ready"
                        and tab.frames(server_in("crash", "error", "retrying")) != [])
        assert (await ended(tab, call(tab, "crash", "crash-now")))["type"] == "call-failed"


@pytest.mark.anyio
async def test_a_hung_server_is_given_up_with_a_timeout_message(tmp_path: Path):
    sleeper = {"command": sys.executable, "args": ["-c", "import time; time.sleep(600)"]}
    limits = Limits(server_connect_timeout=1.0, template_read_timeout=0.5, reconnect_initial_delay=0.2)
    app = app_for({"stuck": sleeper, "fine": failing("fine")}, f"sqlite:///{tmp_path}/h.db", limits)
    async with open_tab(app, ready={"fine"}) as tab:
        frame = await tab.until(server_in("stuck", "error", "retrying"))
        assert "did not finish connecting in time (server_connect_timeout 1 s" in status_of(frame, "stuck")["error"]
        tab.put({"type": "call", "server": "stuck", "tool": "anything", "arguments": {}})
        notice = await tab.until(lambda f: f["type"] == "notice" and "'stuck'" in f["text"])
        assert "is not connected" in notice["text"] and "did not finish connecting in time" in notice["text"], notice
        await fine_view_still_works(tab)


@pytest.mark.anyio
async def test_a_slow_call_shows_its_progress_before_it_ends(tmp_path: Path):
    app = app_for({"slow": classic("slow"), "fine": failing("fine")}, f"sqlite:///{tmp_path}/h.db", FAST)
    async with open_tab(app) as tab:
        call_id = call(tab, "slow", "slow-tool", {"seconds": 1})
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
            call_id = call(tab, "bad", name)
            notice = await tab.until(lambda f, name=name: f["type"] == "notice" and f"tool {name!r}" in f["text"])
            assert "malformed _meta.ui" in notice["text"] and needle in notice["text"], notice
            assert (await ended(tab, call_id))["result"]["content"][0]["text"] == "the tool itself works"

        tab.put({"type": "call", "server": "bad", "tool": "visibility-not-list", "arguments": {}})
        refused = await tab.until(lambda f: f["type"] == "notice" and "'visibility-not-list'" in f["text"])
        assert "malformed _meta.ui: visibility 'everyone' is not a list" in refused["text"], refused

        error = (await view_state(tab, call(tab, "bad", "csp-not-object"), "error"))["error"]
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
        call_id = call(tab, "bad", tool)
        assert (await ended(tab, call_id))["type"] == "call-finished"  # the tool itself ran
        mount = await tab.until(lambda f: f["type"] == "view-mount" and f["callId"] == call_id)
        assert mount["proxyUrl"] is None
        state = await tab.until(lambda f: f["type"] == "view-state" and f["view"] == mount["view"])
        assert state["state"] == "error" and needle in state["error"], state
        await fine_view_still_works(tab)
