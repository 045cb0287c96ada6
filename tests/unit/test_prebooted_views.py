"""Views booted ahead: held at ui/initialize until a call takes them, told their call's toolInfo only
then."""

from __future__ import annotations

from typing import Any

import mcp_apps_host as vs
from mcp_apps_host.settings import Limits
from mcp_apps_host.values.tools import tool_entry
from mcp_apps_host.views.theme import host_styles


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
    assert s.init_timed_out() == []  # the host recycles it; it does not fail while it waits
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
