"""`mcp-apps-host/open-view`: a view asks to open another view of its own server, and the person decides."""

from __future__ import annotations

import mcp_apps_host as vs
from mcp_apps_host.config.serverpolicy import ViewRules
from mcp_apps_host.settings import Limits
from mcp_apps_host.values.tools import tool_entry
from mcp_apps_host.views.effects import OpenView
from mcp_apps_host.views.theme import host_styles

OPEN_VIEW = "mcp-apps-host/open-view"
LATER_RESULTS = "mcp-apps-host/later-results"
TOOL = tool_entry("srv", {"name": "show", "inputSchema": {"type": "object"},
                          "_meta": {"ui": {"resourceUri": "ui://srv/show.html"}}})


def ready(**fields) -> vs.ViewSession:
    spec = vs.ViewSpec(**{
        "server": "srv", "tool": TOOL, "html": "<p>hi</p>", "call_id": 7, "csp": {}, "permissions": {}, "allow": "",
        "app_tools": frozenset({"show"}), "all_tools": frozenset({"show", "chart", "plain", "app-only"}),
        "view_tools": frozenset({"show", "chart"}), **fields})
    s = vs.ViewSession(spec, vs.HostEnvironment(styles=host_styles()), Limits())
    s.receive({"jsonrpc": "2.0", "method": "ui/notifications/sandbox-proxy-ready"})
    [init] = [e.message for e in s.receive({"jsonrpc": "2.0", "id": 0, "method": "ui/initialize", "params": {
        "appInfo": {"name": "t", "version": "1"}, "appCapabilities": {}, "protocolVersion": "2026-01-26"}})
        if isinstance(e, vs.PostToView)]
    assert init["result"]["hostCapabilities"]["experimental"] == {OPEN_VIEW: {}, LATER_RESULTS: {}}  # advertised
    s.receive({"jsonrpc": "2.0", "method": "ui/notifications/initialized"})
    return s


def ask(s: vs.ViewSession, msg_id: int, params: object) -> list:
    return s.receive({"jsonrpc": "2.0", "id": msg_id, "method": OPEN_VIEW, "params": params})


def errors(effects) -> list[dict]:
    return [e.message["error"] for e in effects if isinstance(e, vs.PostToView) and "error" in e.message]


def test_the_person_is_asked_and_allowing_opens_the_view_then_answers() -> None:
    s = ready()
    effects = ask(s, 1, {"name": "chart", "arguments": {"city": "Oslo"}})
    [question] = [e for e in effects if isinstance(e, vs.AskConsent)]
    assert question.kind == "open-view" and question.subject == "chart"
    assert "chart" in question.title and '"city": "Oslo"' in question.detail
    assert not [e for e in effects if isinstance(e, (OpenView, vs.PostToView))]  # nothing before the answer
    allowed = s.answer_consent(question.token, True)
    assert [e for e in allowed if isinstance(e, OpenView)] == [OpenView(1, "chart", {"city": "Oslo"})]
    assert not [e for e in allowed if isinstance(e, vs.PostToView)]  # answered once the view is opening
    [reply] = [e.message for e in s.complete_request(1, {}) if isinstance(e, vs.PostToView)]
    assert reply == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_declined_opens_nothing_and_says_so() -> None:
    s = ready()
    [question] = [e for e in ask(s, 2, {"name": "show"}) if isinstance(e, vs.AskConsent)]
    declined = s.answer_consent(question.token, False)
    assert not [e for e in declined if isinstance(e, OpenView)]
    [error] = errors(declined)
    assert "declined by the person" in error["message"]


def test_only_views_of_its_own_server_that_a_person_may_open() -> None:
    s = ready()
    for msg_id, params, words in (
        (3, {"name": "elsewhere"}, "not a tool of server 'srv'"),
        (4, {"name": "plain"}, "has no view a person may open"),  # no view
        (5, {"name": "app-only"}, "has no view a person may open"),  # its view is its app's only
        (6, {"name": "chart", "arguments": [1]}, 'needs "name" (string) and "arguments" (object)'),
        (7, {"arguments": {}}, 'needs "name"'),
    ):
        effects = ask(s, msg_id, params)
        assert not [e for e in effects if isinstance(e, (vs.AskConsent, OpenView))], params
        [error] = errors(effects)
        assert words in error["message"], (params, error)


def test_a_server_rule_allowing_other_requests_still_asks_about_opening_a_view() -> None:
    rules = ViewRules((("message", "allow"), ("openLink", "allow"), ("download", "allow"), ("sampling", "allow")))
    s = ready(view_rules=rules)
    assert [e for e in ask(s, 8, {"name": "chart"}) if isinstance(e, vs.AskConsent)]
