"""The template travels with the mount: the session sends sandbox-resource-ready ahead of the
proxy's ready, and a template the tab's page already holds goes without its HTML."""

from __future__ import annotations

from typing import Any

import mcp_apps_host as vs
from mcp_apps_host.host.tab.pagetemplates import PageTemplates
from mcp_apps_host.settings import Limits
from mcp_apps_host.values.csp import ViewCsp
from mcp_apps_host.values.templates import Template
from mcp_apps_host.values.tools import tool_entry
from mcp_apps_host.views.theme import host_styles

TOOL = tool_entry("srv", {"name": "show", "inputSchema": {"type": "object"},
                          "_meta": {"ui": {"resourceUri": "ui://srv/show.html"}}})


def make() -> vs.ViewSession:
    spec = vs.ViewSpec(server="srv", tool=TOOL, html="<p>hi</p>", call_id=7, csp={}, permissions={}, allow="",
                       app_tools=frozenset({"show"}), all_tools=frozenset({"show"}))
    return vs.ViewSession(spec, vs.HostEnvironment(theme="dark", styles=host_styles()), Limits())


def note(method: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method}


def req(msg_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}


def posts(effects: list[Any]) -> list[dict[str, Any]]:
    return [e.message for e in effects if isinstance(e, vs.PostToView)]

RESOURCE_READY = "ui/notifications/sandbox-resource-ready"


def test_resource_ahead_then_the_proxy_ready_is_taken_once() -> None:
    s = make()
    ahead = s.send_resource_ahead()
    [msg] = posts(ahead)
    assert msg["method"] == RESOURCE_READY and msg["params"]["html"] == "<p>hi</p>"
    assert [e for e in ahead if isinstance(e, vs.StartInitTimer)]
    assert s.state == vs.ViewState.RESOURCE_SENT
    # The page gave the resource on the proxy's ready: the session posts nothing again.
    assert s.receive(note("ui/notifications/sandbox-proxy-ready")) == []
    # A second ready (a proxy reloaded, or a view posing as one) is refused, not answered.
    again = s.receive(note("ui/notifications/sandbox-proxy-ready"))
    assert posts(again) == [] and [e for e in again if isinstance(e, vs.Refused)]
    assert s.send_resource_ahead() == []
    init = s.receive(req(0, "ui/initialize", {"appInfo": {}, "appCapabilities": {}}))
    assert posts(init)[0]["result"]["protocolVersion"]


def test_resource_is_not_sent_ahead_after_the_proxy_asked() -> None:
    s = make()
    [msg] = posts(s.receive(note("ui/notifications/sandbox-proxy-ready")))
    assert msg["method"] == RESOURCE_READY
    assert s.send_resource_ahead() == []


def template(html: str = "<p>v</p>", sha: str = "a" * 64, compat: str | None = None) -> Template:
    return Template(server="srv", uri="ui://srv/v.html", html=html, sha256=sha, csp=ViewCsp(), compat=compat)


def resource(html: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": RESOURCE_READY, "params": {"html": html, "csp": {}, "allow": ""}}


def test_the_page_gets_a_template_once_per_tab() -> None:
    held = PageTemplates()
    first = held.message(template(), resource("<p>v</p>"))
    assert first["params"]["html"] == "<p>v</p>"
    second = held.message(template(), resource("<p>v</p>"))
    assert "html" not in second["params"] and second["params"]["csp"] == {}
    # Another template, and any other message, go as they are.
    other = held.message(template(sha="b" * 64), resource("<p>w</p>"))
    assert other["params"]["html"] == "<p>w</p>"
    plain = {"jsonrpc": "2.0", "method": "ui/notifications/tool-result", "params": {"html": "x"}}
    assert held.message(template(), plain) is plain
    # A new tab's page holds nothing.
    assert PageTemplates().message(template(), resource("<p>v</p>"))["params"]["html"] == "<p>v</p>"


def test_a_shimmed_widget_always_gets_its_document() -> None:
    held = PageTemplates()
    widget = template(compat="openai")
    for _ in range(2):
        assert held.message(widget, resource("<script>shim</script><p>v</p>"))["params"]["html"]
