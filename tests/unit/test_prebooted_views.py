"""Views booted ahead: held at ui/initialize until a call takes them, told their call's toolInfo only
then; a fresh tab boots ahead the templates the person has accepted."""

from __future__ import annotations

from typing import Any

import pytest

import mcp_apps_host as vs
from mcp_apps_host.settings import Limits
from mcp_apps_host.values.tools import tool_entry
from mcp_apps_host.views.theme import host_styles
from tests.unit.tabdriver import app_for, open_tab
from tests.unit.test_failing_servers import call, failing


def entry(name: str) -> Any:
    return tool_entry("srv", {"name": name, "inputSchema": {"type": "object"},
                              "_meta": {"ui": {"resourceUri": "ui://srv/show.html"}}})


def spec(name: str, call_id: int | None) -> vs.ViewSpec:
    return vs.ViewSpec(server="srv", tool=entry(name), html="<p>hi</p>", call_id=call_id, csp={}, permissions={},
                       allow="", app_tools=frozenset(), all_tools=frozenset())


def msg(method: str, msg_id: int | None = None, params: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if msg_id is not None:
        out["id"] = msg_id
    if params is not None:
        out["params"] = params
    return out


def posts(effects: list[Any]) -> list[dict[str, Any]]:
    return [e.message for e in effects if isinstance(e, vs.PostToView)]


INIT = msg("ui/initialize", 0, {"appInfo": {"name": "t", "version": "1"}, "appCapabilities": {},
                                "protocolVersion": "2026-01-26"})


def booted() -> vs.ViewSession:
    s = vs.ViewSession(spec("first", None), vs.HostEnvironment(theme="dark", styles=host_styles()), Limits())
    s.held_back = True
    s.send_resource_ahead()
    s.receive(msg("ui/notifications/sandbox-proxy-ready"))
    return s


def test_a_booted_view_waits_at_initialize_until_a_call_takes_it() -> None:
    s = booted()
    assert s.receive(INIT) == []  # held: no answer, no tool data
    assert s.init_timed_out() == []  # the host lets it lapse; it does not fail while it waits
    assert s.tool_input({"x": 1}) == []  # anything for the view waits for its handshake
    [answer] = posts(s.take(spec("second", 42)))
    assert answer["id"] == 0
    assert answer["result"]["hostContext"]["toolInfo"]["tool"]["name"] == "second"
    ready = s.receive(msg("ui/notifications/initialized"))
    assert [m["method"] for m in posts(ready)][:1] == ["ui/notifications/tool-input"]


def test_a_booted_view_taken_before_it_asked_is_answered_when_it_asks() -> None:
    s = booted()
    assert s.take(spec("second", 42)) == []
    [answer] = posts(s.receive(INIT))
    assert answer["result"]["hostContext"]["toolInfo"]["tool"]["name"] == "second"


def test_a_second_initialize_while_held_is_refused() -> None:
    s = booted()
    s.receive(INIT)
    again = s.receive(INIT)
    assert [e for e in again if isinstance(e, vs.Refused)]
    assert posts(again)[0]["error"]


def test_an_unbooted_view_still_answers_at_once_and_times_out() -> None:
    s = vs.ViewSession(spec("first", 1), vs.HostEnvironment(theme="dark", styles=host_styles()), Limits())
    s.send_resource_ahead()
    assert s.init_timed_out()  # never asked: it fails
    s2 = vs.ViewSession(spec("first", 1), vs.HostEnvironment(theme="dark", styles=host_styles()), Limits())
    s2.send_resource_ahead()
    assert posts(s2.receive(INIT))[0]["result"]


async def shown_once(app: Any) -> None:
    """The person is shown the fine server's view once, in a tab of its own: its template is accepted."""
    async with open_tab(app, started=True) as first:
        call_id = await call(first, "fine", "fine-view")
        await first.until(lambda f: f["type"] in ("view-mount", "view-adopt") and f["callId"] == call_id)


@pytest.mark.anyio
async def test_a_fresh_tab_boots_ahead_the_templates_the_person_has_accepted_and_a_call_takes_it(tmp_path) -> None:
    app = app_for({"fine": failing("fine")}, f"sqlite:///{tmp_path}/h.db")
    async with app.lifespan():
        await shown_once(app)
        async with open_tab(app, started=True) as second:
            ahead = await second.until(lambda f: f["type"] == "view-mount" and f["prebooted"], timeout=30)
            assert ahead["tool"] == "fine-view" and ahead["callId"] is None
            call_id = await call(second, "fine", "fine-view")
            adopted = await second.until(lambda f: f["type"] == "view-adopt" and f["callId"] == call_id, timeout=30)
            assert adopted["view"] == ahead["view"]
            assert not second.frames(lambda f: f["type"] == "view-mount" and f["callId"] == call_id)


@pytest.mark.anyio
async def test_a_view_booted_ahead_that_never_asks_is_removed_from_the_page(tmp_path) -> None:
    """Nobody sees it, and its frame would keep its origin's renderer in use (one the app keeps busy would
    then take in every later view of its server in the tab)."""
    app = app_for({"fine": failing("fine")}, f"sqlite:///{tmp_path}/h.db", limits=Limits(view_init_timeout=1))
    async with app.lifespan():
        async with open_tab(app, started=True) as first:
            call_id = await call(first, "fine", "fine-view")
            await first.until(lambda f: f["type"] in ("view-mount", "view-adopt") and f["callId"] == call_id)
        async with open_tab(app, started=True) as second:
            ahead = await second.until(lambda f: f["type"] == "view-mount" and f["prebooted"], timeout=30)
            failed = await second.until(lambda f: f["type"] == "view-state" and f["view"] == ahead["view"], timeout=30)
            assert failed["state"] == "error" and "ui/initialize" in failed["error"]
            await second.until(lambda f: f["type"] == "view-remove" and f["view"] == ahead["view"], timeout=30)
            # A call then starts a view of its own.
            call_id = await call(second, "fine", "fine-view")
            mount = await second.until(lambda f: f["type"] in ("view-mount", "view-adopt") and f["callId"] == call_id)
            assert mount["type"] == "view-mount" and mount["view"] != ahead["view"]


@pytest.mark.anyio
async def test_a_view_booted_ahead_lapses_unused_and_boots_again_only_on_the_persons_intent(tmp_path) -> None:
    """An open page left alone costs nothing: a booted view nobody took is ended, not started again, until
    the person is about to call a tool."""
    limits = Limits(prebooted_view_max_age=1, view_init_timeout=120)
    app = app_for({"fine": failing("fine")}, f"sqlite:///{tmp_path}/h.db", limits=limits)
    async with app.lifespan():
        await shown_once(app)
        async with open_tab(app, started=True) as second:
            ahead = await second.until(lambda f: f["type"] == "view-mount" and f["prebooted"], timeout=30)
            await second.until(lambda f: f["type"] == "view-remove" and f["view"] == ahead["view"], timeout=30)
            # A round trip after the removal: a view booted again with it would have been sent before the answer.
            second.put({"type": "chat", "text": "/servers"})
            await second.until(lambda f: f["type"] == "notice" and "fine" in f["text"])
            booted = second.frames(lambda f: f["type"] == "view-mount" and f["prebooted"])
            assert [f["view"] for f in booted] == [ahead["view"]]
            second.put({"type": "intent"})
            again = await second.until(lambda f: f["type"] == "view-mount" and f["prebooted"]
                                       and f["view"] != ahead["view"], timeout=30)
            assert again["tool"] == "fine-view"
            # Taken by the next call as the first one would have been.
            call_id = await call(second, "fine", "fine-view")
            adopted = await second.until(lambda f: f["type"] == "view-adopt" and f["callId"] == call_id, timeout=30)
            assert adopted["view"] == again["view"]
