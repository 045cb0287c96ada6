"""`mcp-apps-host/later-results`: a later call of a tool goes to the view of it already open, when that
view's app declared the capability, instead of a new view being mounted; driven as the page drives a tab.

The `rec` fixture server runs twice (as `rec` and `rec2`): its `record` tool echoes its arguments, and
`write-note` is a second tool with the same view."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_apps_host.errors import IllegalTransition
from mcp_apps_host.views import events as ev
from mcp_apps_host.web.embed import HostApp
from tests.modelfakes import args, openai_fake, text, tool_call
from tests.unit.tabdriver import Socket, app_for, open_tab, reply_to
from tests.unit.test_failing_servers import call, ended
from tests.unit.test_open_view import ready

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LATER = "mcp-apps-host/later-results"
REC = {"command": sys.executable, "args": [str(FIXTURES / "servers.py"), "rec"], "apps": True}


def rec_app(tmp_path: Path, **extra: Any) -> HostApp:
    return app_for({"rec": REC, "rec2": REC}, f"sqlite:///{tmp_path}/h.db", **extra)


def mounted_for(call_id: int):
    """The frame that gives call ``call_id`` a view of its own (mounted now, or booted ahead and taken)."""
    return lambda f: (f["type"] in ("view-mount", "view-adopt") and f.get("callId") == call_id
                      and f.get("prebooted") is not True)


def posted(view: str, method: str):
    return lambda f: f["type"] == "view-post" and f["view"] == view and f["message"].get("method") == method


def delivered(call_id: int):
    return lambda f: f["type"] == "call-delivered" and f["callId"] == call_id


async def bring_up(tab: Socket, view: str, opt_in: bool) -> None:
    """The view's handshake as its SDK does it, declaring the capability or not; until it is ready."""
    caps: dict[str, Any] = {"experimental": {LATER: {}}} if opt_in else {}
    tab.put({"type": "view-message", "view": view, "message": {
        "jsonrpc": "2.0", "method": "ui/notifications/sandbox-proxy-ready", "params": {}}})
    tab.put({"type": "view-message", "view": view, "message": {
        "jsonrpc": "2.0", "id": 1, "method": "ui/initialize",
        "params": {"appInfo": {"name": "t", "version": "1"}, "appCapabilities": caps,
                   "protocolVersion": "2026-01-26"}}})
    init = (await tab.until(reply_to(view, 1)))["message"]
    assert init["result"]["hostCapabilities"]["experimental"][LATER] == {}  # advertised to every view
    tab.put({"type": "view-message", "view": view,
             "message": {"jsonrpc": "2.0", "method": "ui/notifications/initialized"}})


async def open_view(tab: Socket, server: str, tool: str, arguments: dict[str, Any], opt_in: bool = True) -> str:
    """Call ``tool`` from the page and bring its view up; once it has its result, its handle."""
    call_id = await call(tab, server, tool, arguments)
    view = str((await tab.until(mounted_for(call_id)))["view"])
    await bring_up(tab, view, opt_in)
    await tab.until(posted(view, "ui/notifications/tool-result"))
    return view


def posts(tab: Socket, view: str, method: str) -> list[dict[str, Any]]:
    return [f["message"] for f in tab.frames(posted(view, method))]


async def test_a_later_call_goes_to_the_open_view_that_declared_it_and_nothing_new_mounts(tmp_path: Path):
    app = rec_app(tmp_path)
    async with open_tab(app) as tab:
        view = await open_view(tab, "rec", "record", {"text": "one"})
        second = await call(tab, "rec", "record", {"text": "two"})
        assert (await ended(tab, second))["type"] == "call-finished"
        card = await tab.until(delivered(second))
        assert card["view"] == view  # the card names the view it went to
        assert not tab.frames(mounted_for(second)), "a view was mounted for a call given to the open view"
        await tab.until(lambda f: posted(view, "ui/notifications/tool-result")(f)
                        and f["message"]["params"]["structuredContent"]["text"] == "two")
        inputs = posts(tab, view, "ui/notifications/tool-input")
        assert [m["params"]["arguments"] for m in inputs] == [{"text": "one"}, {"text": "two"}]
        # The pair, in the spec's order: tool-input, then tool-result, after what the view had before.
        order = [f["message"]["method"] for f in tab.frames(lambda f: f["type"] == "view-post" and f["view"] == view)
                 if f["message"].get("method", "").startswith("ui/notifications/tool-")]
        assert order[-2:] == ["ui/notifications/tool-input", "ui/notifications/tool-result"]
        # Both are on record as the view's traffic, like any message the host sends a view.
        audit = app.host.audit
        assert audit is not None
        audit.flush(30)
        for method in ("ui/notifications/tool-input", "ui/notifications/tool-result"):
            rows = audit.query(view=view, direction="host->view", method=method)
            assert len(rows) == 2, (method, rows)
            assert '"two"' in rows[-1]["payload"], rows[-1]


async def test_a_view_that_did_not_declare_it_stays_as_it_was_and_a_new_view_mounts(tmp_path: Path):
    async with open_tab(rec_app(tmp_path)) as tab:
        view = await open_view(tab, "rec", "record", {"text": "one"}, opt_in=False)
        second = await call(tab, "rec", "record", {"text": "two"})
        await tab.until(mounted_for(second))
        await ended(tab, second)
        assert not tab.frames(delivered(second))
        assert len(posts(tab, view, "ui/notifications/tool-input")) == 1


@pytest.mark.parametrize(("server", "tool"), [("rec", "write-note"), ("rec2", "record")],
                         ids=["another tool", "another server"])
async def test_a_view_of_another_tool_or_server_is_not_used(tmp_path: Path, server: str, tool: str):
    async with open_tab(rec_app(tmp_path)) as tab:
        view = await open_view(tab, "rec", "record", {"text": "one"})
        second = await call(tab, server, tool, {"text": "two"})
        await tab.until(mounted_for(second))
        await ended(tab, second)
        assert not tab.frames(delivered(second))
        assert len(posts(tab, view, "ui/notifications/tool-input")) == 1


async def test_the_newest_of_two_open_views_that_declared_it_is_the_one_given_the_call(tmp_path: Path):
    async with open_tab(rec_app(tmp_path)) as tab:
        # The second call starts before the first view is up: it gets a view of its own.
        first = await call(tab, "rec", "record", {"text": "one"})
        older = str((await tab.until(mounted_for(first)))["view"])
        second = await call(tab, "rec", "record", {"text": "two"})
        newer = str((await tab.until(mounted_for(second)))["view"])
        for view in (older, newer):
            await bring_up(tab, view, opt_in=True)
            await tab.until(posted(view, "ui/notifications/tool-result"))
        third = await call(tab, "rec", "record", {"text": "three"})
        assert (await tab.until(delivered(third)))["view"] == newer
        assert len(posts(tab, older, "ui/notifications/tool-input")) == 1


async def test_a_models_later_call_goes_to_the_open_view_too(tmp_path: Path):
    script = [[tool_call("rec__record"), args(json.dumps({"text": "from the model"}))], [text("done")]]
    with openai_fake.serve_script(script) as fake:
        app = rec_app(tmp_path, model={"spec": "openai:fake", "baseUrl": fake.base_url})
        async with open_tab(app) as tab:
            view = await open_view(tab, "rec", "record", {"text": "one"})
            tab.put({"type": "chat", "text": "record something"})
            started = await tab.until(lambda f: f["type"] == "call-started" and f["source"] == "model")
            model_call = int(started["callId"])
            assert (await tab.until(delivered(model_call)))["view"] == view
            assert not tab.frames(mounted_for(model_call))
            inputs = posts(tab, view, "ui/notifications/tool-input")
            assert inputs[-1]["params"]["arguments"] == {"text": "from the model"}


async def test_a_reload_shows_the_view_once_with_the_latest_result_and_the_card_names_it(tmp_path: Path):
    app = rec_app(tmp_path)
    async with app.lifespan():
        async with open_tab(app, started=True) as tab:
            await open_view(tab, "rec", "record", {"text": "one"})
            second = await call(tab, "rec", "record", {"text": "two"})
            await tab.until(delivered(second))
        async with open_tab(app, started=True) as again:
            await again.until(lambda f: len(again.frames(lambda g: g["type"] == "call-finished")) >= 2)
            finished = again.frames(lambda f: f["type"] == "call-finished")
            first_id, second_id = (int(f["callId"]) for f in finished[:2])
            view = str((await again.until(mounted_for(first_id)))["view"])
            card = await again.until(delivered(second_id))
            assert card["view"] == view
            assert not again.frames(mounted_for(second_id)), "the delivered call mounted a view of its own"
            await bring_up(again, view, opt_in=True)
            result = await again.until(posted(view, "ui/notifications/tool-result"))
            assert result["message"]["params"]["structuredContent"]["text"] == "two"
            inputs = posts(again, view, "ui/notifications/tool-input")
            assert [m["params"]["arguments"] for m in inputs] == [{"text": "two"}]


async def test_another_tab_of_the_conversation_gives_the_call_to_its_own_copy_of_the_view(tmp_path: Path):
    app = rec_app(tmp_path)
    async with open_tab(app) as here, open_tab(app, started=True) as there:
        await open_view(here, "rec", "record", {"text": "one"})
        copy = str((await there.until(lambda f: f["type"] == "view-mount" and f.get("tool") == "record"
                                      and f.get("prebooted") is not True))["view"])
        await bring_up(there, copy, opt_in=True)
        await there.until(posted(copy, "ui/notifications/tool-result"))
        second = await call(here, "rec", "record", {"text": "two"})
        await here.until(delivered(second))
        card = await there.until(lambda f: f["type"] == "call-delivered")
        assert card["view"] == copy
        await there.until(lambda f: posted(copy, "ui/notifications/tool-result")(f)
                          and f["message"]["params"]["structuredContent"]["text"] == "two")
        assert not there.frames(lambda f: f["type"] == "view-mount" and f.get("callId") == card["callId"])


def test_a_session_gives_a_later_result_only_once_it_declared_it_is_up_and_its_call_ended() -> None:
    running = ready()
    running.app_capabilities = {"experimental": {LATER: {}}}
    running.handle(ev.ToolInput({"text": "one"}))
    assert not running.takes_later_results()  # its own call's result is still to come
    running.handle(ev.ToolResult({"content": []}))
    assert running.takes_later_results()

    s = ready()  # declared nothing
    s.handle(ev.ToolInput({"text": "one"}))
    s.handle(ev.ToolResult({"content": []}))
    assert not s.takes_later_results()
    with pytest.raises(IllegalTransition):
        s.handle(ev.LaterResult({"text": "two"}, {"content": []}))
    s.app_capabilities = {"experimental": {LATER: {}}}
    assert s.takes_later_results()
    effects = s.handle(ev.LaterResult({"text": "two"}, {"content": [], "structuredContent": {"text": "two"}}))
    assert [e.message["method"] for e in effects] == ["ui/notifications/tool-input", "ui/notifications/tool-result"]
    assert (s.last_input, s.last_result) == ({"text": "two"}, {"content": [], "structuredContent": {"text": "two"}})
