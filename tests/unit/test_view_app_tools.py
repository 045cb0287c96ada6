"""ViewSession paths of the current MCP Apps draft: a view's own tools (host → view tools/list and
tools/call, view → host notifications/tools/list_changed), view → host tools/list, downloads of
several files and of resource links, and the host capabilities that name supported content."""

from __future__ import annotations

import pytest

import mcp_apps_host as vs
from mcp_apps_host.errors import CallFailed
from mcp_apps_host.settings import Limits
from mcp_apps_host.values.tools import tool_entry
from mcp_apps_host.views.effects import AppToolResult, AppToolsChanged, SaveFiles, StartRequestTimer
from mcp_apps_host.views.events import CallAppTool
from mcp_apps_host.views.theme import host_styles

TOOL = tool_entry("srv", {"name": "show", "inputSchema": {"type": "object"},
                          "_meta": {"ui": {"resourceUri": "ui://srv/show.html"}}})
APP_ONLY = {"name": "app-only", "inputSchema": {"type": "object"}, "_meta": {"ui": {"visibility": ["app"]}}}


def call_app_tool(session: vs.ViewSession, name: str, arguments: dict) -> tuple[object, list]:
    """tools/call of one of the view's tools, as the host sends it: its id, and what goes out."""
    rid = session.next_host_id()
    return rid, session.handle(CallAppTool(rid, name, arguments))


def make(limits: Limits | None = None, **spec: object) -> vs.ViewSession:
    fields: dict[str, object] = {
        "server": "srv", "tool": TOOL, "html": "<p>hi</p>", "call_id": 7, "csp": {}, "permissions": {}, "allow": "",
        "app_tools": frozenset({"show", "app-only"}), "all_tools": frozenset({"show", "app-only", "model-only"}),
        "server_tools": (TOOL.definition, APP_ONLY)}
    fields.update(spec)
    return vs.ViewSession(vs.ViewSpec(**fields), vs.HostEnvironment(styles=host_styles()), limits or Limits())


def req(msg_id, method, params=None):
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}}


def note(method, params=None):
    return {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}


def reply(msg_id, result):
    return {"jsonrpc": "2.0", "id": msg_id, "result": result}


def posts(effects):
    return [e.message for e in effects if isinstance(e, vs.PostToView)]


def of(effects, kind):
    return [e for e in effects if isinstance(e, kind)]


def start(session: vs.ViewSession, capabilities: dict | None = None) -> list:
    """The handshake; returns the effects of `initialized` (where the host's first tools/list goes out)."""
    session.receive(note("ui/notifications/sandbox-proxy-ready"))
    session.receive(req(0, "ui/initialize", {"appInfo": {"name": "t", "version": "1"},
                                             "appCapabilities": capabilities or {}, "protocolVersion": "2026-01-26"}))
    effects = session.receive(note("ui/notifications/initialized"))
    assert session.state == vs.ViewState.READY
    return effects


def tool(name: str, **extra: object) -> dict:
    return {"name": name, "description": f"does {name}", "inputSchema": {"type": "object"}, **extra}


def listed(session: vs.ViewSession, tools: list[dict]) -> tuple[str, ...]:
    """Answer the pending tools/list with ``tools``; the names the host kept."""
    effects = start(session, {"tools": {"listChanged": True}})
    [ask] = [m for m in posts(effects) if m.get("method") == "tools/list"]
    [changed] = of(session.receive(reply(ask["id"], {"tools": tools})), AppToolsChanged)
    return tuple(t.name for t in changed.tools)


# ---- the host lists the view's tools ---------------------------------------------------------------


def test_a_view_without_the_tools_capability_is_never_asked():
    s = make()
    effects = start(s, {})
    assert not [m for m in posts(effects) if m.get("method") == "tools/list"]
    assert of(s.receive(note("notifications/tools/list_changed")), vs.Refused)


def test_tools_are_listed_after_initialized_with_a_time_limit():
    s = make(Limits(app_tool_call_timeout=4))
    s.receive(note("ui/notifications/sandbox-proxy-ready"))
    init = s.receive(req(0, "ui/initialize", {"appCapabilities": {"tools": {}}, "appInfo": {}}))
    assert not [m for m in posts(init) if m.get("method") == "tools/list"]  # nothing before initialized
    effects = s.receive(note("ui/notifications/initialized"))
    [ask] = [m for m in posts(effects) if m.get("method") == "tools/list"]
    [timer] = of(effects, StartRequestTimer)
    assert timer.request_id == ask["id"] and timer.seconds == 4
    [changed] = of(s.receive(reply(ask["id"], {"tools": [tool("get-state", annotations={"readOnlyHint": True})]})),
                   AppToolsChanged)
    [got] = changed.tools
    assert got.name == "get-state" and got.read_only and got.description == "does get-state"


def test_garbage_instead_of_a_tool_list_offers_nothing():
    s = make()
    effects = start(s, {"tools": {}})
    [ask] = [m for m in posts(effects) if m.get("method") == "tools/list"]
    answer = s.receive(reply(ask["id"], {"tools": "all of them"}))
    assert of(answer, AppToolsChanged)[0].tools == ()
    assert "tools" in of(answer, vs.Refused)[0].reason
    assert s.state == vs.ViewState.READY  # a bad answer costs the view its tools, not its life


def test_bad_tools_are_left_out_with_the_reason():
    names = listed(make(), [
        tool("good"), {"name": 5}, "a string", tool("bad name!"), tool("good"),
        tool("no-schema-type", inputSchema={"properties": {}}), {"name": "defaults"},
    ])
    assert names == ("good", "defaults")


def test_at_most_max_app_tools_per_view_are_kept():
    s = make(Limits(max_app_tools_per_view=50))
    effects = start(s, {"tools": {"listChanged": True}})
    [ask] = [m for m in posts(effects) if m.get("method") == "tools/list"]
    answer = s.receive(reply(ask["id"], {"tools": [tool(f"t{i}") for i in range(500)]}))
    [changed] = of(answer, AppToolsChanged)
    assert [t.name for t in changed.tools] == [f"t{i}" for i in range(50)]
    assert any("max_app_tools_per_view" in e.text for e in of(answer, vs.Log))


def test_a_view_that_never_answers_offers_nothing_once_the_time_is_up():
    s = make()
    effects = start(s, {"tools": {}})
    [timer] = of(effects, StartRequestTimer)
    late = s.request_timed_out(timer.request_id)
    assert of(late, AppToolsChanged)[0].tools == ()
    assert "app_tool_call_timeout" in of(late, vs.Refused)[0].reason
    [cancel] = [m for m in posts(late) if m.get("method") == "notifications/cancelled"]
    assert cancel["params"]["requestId"] == timer.request_id
    # Its answer after the time is up is a reply to nothing.
    assert of(s.receive(reply(timer.request_id, {"tools": [tool("x")]})), vs.Refused)
    assert s.app_tools.tools == ()


def test_descriptions_are_cut_and_pages_followed():
    s = make(Limits(max_app_tool_description_chars=10))
    effects = start(s, {"tools": {}})
    [first] = [m for m in posts(effects) if m.get("method") == "tools/list"]
    page = s.receive(reply(first["id"], {"tools": [tool("a", description="x" * 50)], "nextCursor": "p2"}))
    [second] = [m for m in posts(page) if m.get("method") == "tools/list"]
    assert second["params"] == {"cursor": "p2"} and not of(page, AppToolsChanged)
    [changed] = of(s.receive(reply(second["id"], {"tools": [tool("b")]})), AppToolsChanged)
    assert [t.name for t in changed.tools] == ["a", "b"]
    assert changed.tools[0].description.startswith("x" * 10) and "max_app_tool_description_chars" in \
        changed.tools[0].description


def test_list_changed_during_a_listing_lists_once_more_after_it():
    s = make()
    effects = start(s, {"tools": {"listChanged": True}})
    [ask] = [m for m in posts(effects) if m.get("method") == "tools/list"]
    assert s.receive(note("notifications/tools/list_changed")) == []  # one listing at a time
    assert s.receive(note("notifications/tools/list_changed")) == []
    after = s.receive(reply(ask["id"], {"tools": [tool("old")]}))
    again = [m for m in posts(after) if m.get("method") == "tools/list"]
    assert len(again) == 1 and again[0]["id"] != ask["id"]
    [changed] = of(s.receive(reply(again[0]["id"], {"tools": [tool("new")]})), AppToolsChanged)
    assert [t.name for t in changed.tools] == ["new"]


# ---- the host calls the view's tools ----------------------------------------------------------------


def test_a_call_goes_out_and_its_result_comes_back():
    s = make(Limits(app_tool_call_timeout=30))
    listed(s, [tool("move")])
    rid, effects = call_app_tool(s, "move", {"to": 4})
    [msg] = posts(effects)
    assert msg == {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                   "params": {"name": "move", "arguments": {"to": 4}}}
    assert of(effects, StartRequestTimer)[0].seconds == 30
    result = {"content": [{"type": "text", "text": "moved"}], "structuredContent": {"at": 4}}
    [done] = of(s.receive(reply(rid, result)), AppToolResult)
    assert done.request_id == rid and done.result == result and done.error is None


@pytest.mark.parametrize("answer, needle", [
    ({"content": "moved"}, "content"),
    ({"content": [{"text": "no type"}]}, "content block"),
    ({"content": [], "isError": "yes"}, "isError"),
    ({"content": [], "structuredContent": [1]}, "structuredContent"),
])
def test_a_result_that_is_not_a_call_tool_result_fails_the_call(answer, needle):
    s = make()
    listed(s, [tool("move")])
    rid, _ = call_app_tool(s, "move", {})
    effects = s.receive(reply(rid, answer))
    [done] = of(effects, AppToolResult)
    assert done.result is None and needle in done.error and "CallToolResult" in done.error


def test_an_error_answer_and_a_timeout_fail_the_call_by_name():
    s = make(Limits(app_tool_call_timeout=2))
    listed(s, [tool("move")])
    rid, _ = call_app_tool(s, "move", {})
    [done] = of(s.receive({"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": "board full"}}),
                AppToolResult)
    assert "board full" in done.error
    rid, _ = call_app_tool(s, "move", {})
    [late] = of(s.request_timed_out(rid), AppToolResult)
    assert "app_tool_call_timeout (2 s)" in late.error
    assert s.request_timed_out(rid) == []  # once only


def test_unknown_tools_and_closed_views_are_clear_errors():
    s = make()
    listed(s, [tool("move")])
    with pytest.raises(CallFailed, match="offers no tool 'jump'"):
        call_app_tool(s, "jump", {})
    rid, _ = call_app_tool(s, "move", {})
    s.teardown("closed by the person")
    with pytest.raises(CallFailed, match="tearing_down"):
        call_app_tool(s, "move", {})
    closed = s.teardown_timed_out()
    [failed] = of(closed, AppToolResult)
    assert failed.request_id == rid and "closed" in failed.error
    assert of(closed, AppToolsChanged)[0].tools == ()  # the registrations go with the view
    with pytest.raises(CallFailed, match="closed"):
        call_app_tool(s, "move", {})


def test_a_large_result_may_exceed_the_message_limit_up_to_its_own():
    limits = Limits(max_view_message_bytes=1_000, max_app_tool_result_bytes=5_000)
    s = make(limits)
    listed(s, [tool("dump")])
    rid, _ = call_app_tool(s, "dump", {})
    big = {"content": [{"type": "text", "text": "x" * 3_000}]}
    [done] = of(s.receive(reply(rid, big)), AppToolResult)
    assert done.result == big
    rid, _ = call_app_tool(s, "dump", {})
    huge = s.receive(reply(rid, {"content": [{"type": "text", "text": "x" * 6_000}]}))
    [failed] = of(huge, AppToolResult)
    assert failed.result is None and "max_app_tool_result_bytes" in failed.error
    # Nothing else gets the larger allowance: a request of 3 000 bytes is still refused.
    refused = s.receive(req(50, "ping", {"pad": "x" * 3_000}))
    assert "max_view_message_bytes" in of(refused, vs.Refused)[0].reason


# ---- view → host tools/list, server tool changes -----------------------------------------------------


def test_tools_list_answers_the_tools_the_view_may_call():
    s = make()
    start(s)
    [answer] = posts(s.receive(req(3, "tools/list")))
    assert answer["result"]["tools"] == [TOOL.definition, APP_ONLY]
    spec = vs.ViewSpec(**{**s.spec.__dict__, "app_tools": frozenset({"show"}), "server_tools": (TOOL.definition,)})
    [told] = posts(s.server_tools_changed(spec))
    assert told == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}}
    [answer] = posts(s.receive(req(4, "tools/list")))
    assert answer["result"]["tools"] == [TOOL.definition]
    [err] = posts(s.receive(req(5, "tools/call", {"name": "app-only", "arguments": {}})))
    assert "not visible to apps" in err["error"]["message"]


def test_host_capabilities_name_the_content_that_is_passed_on():
    s = make()
    s.receive(note("ui/notifications/sandbox-proxy-ready"))
    [result] = posts(s.receive(req(0, "ui/initialize", {"appCapabilities": {}, "appInfo": {}})))
    caps = result["result"]["hostCapabilities"]
    assert caps["serverTools"] == {"listChanged": True}
    assert caps["message"] == {"text": {}, "resource": {}, "resourceLink": {}}
    assert caps["updateModelContext"] == {"text": {}, "resource": {}, "resourceLink": {}, "structuredContent": {}}
    assert "image" not in caps["message"]  # images reach the model only as a placeholder


# ---- downloads ------------------------------------------------------------------------------------------


def embedded(name: str, text: str = "a,b\n") -> dict:
    return {"type": "resource", "resource": {"uri": f"file:///{name}", "mimeType": "text/csv", "text": text}}


def test_several_files_are_one_question_listing_them_all():
    s = make()
    start(s)
    effects = s.receive(req(1, "ui/download-file", {"contents": [embedded("a.csv"), embedded("../b.csv")]}))
    [ask] = of(effects, vs.AskConsent)
    assert ask.kind == "download" and "2 files" in ask.title
    assert "a.csv" in ask.detail and "b.csv" in ask.detail and "../" not in ask.detail
    allowed = s.answer_consent(ask.token, True)
    assert [d.filename for d in of(allowed, vs.Download)] == ["a.csv", "b.csv"]
    assert posts(allowed)[0]["result"] == {}


def test_resource_links_are_fetched_by_the_browser_or_read_from_the_views_server():
    s = make()
    start(s)
    contents = [{"type": "resource_link", "uri": "https://example.com/q4.pdf", "name": "Q4 Report.pdf",
                 "mimeType": "application/pdf"},
                {"type": "resource_link", "uri": "reports://q4/data.csv"}, embedded("c.csv")]
    [ask] = of(s.receive(req(2, "ui/download-file", {"contents": contents})), vs.AskConsent)
    assert "your browser downloads it from https://example.com/q4.pdf" in ask.detail
    assert "read from server srv (reports://q4/data.csv)" in ask.detail
    allowed = s.answer_consent(ask.token, True)
    [save] = of(allowed, SaveFiles)
    assert not posts(allowed)  # answered once the files are fetched
    assert [(f.filename, f.url, f.resource_uri) for f in save.files] == [
        ("Q4 Report.pdf", "https://example.com/q4.pdf", None), ("data.csv", None, "reports://q4/data.csv"),
        ("c.csv", None, None)]
    assert posts(s.complete_request(2, result={}))[0]["result"] == {}


def test_too_many_files_or_bytes_are_refused_by_the_setting_name():
    s = make(max_download_files=2, max_download_bytes=10)
    start(s)
    [err] = posts(s.receive(req(1, "ui/download-file", {"contents": [embedded(f"{i}.csv") for i in range(3)]})))
    assert "max_download_files (2)" in err["error"]["message"]
    [err] = posts(s.receive(req(2, "ui/download-file", {"contents": [embedded("a.csv", "x" * 11)]})))
    assert "contents[0]" in err["error"]["message"] and "max_download_bytes (10)" in err["error"]["message"]


def test_a_call_nobody_waits_for_is_cancelled_at_the_view():
    s = make()
    listed(s, [tool("slow")])
    rid, _ = call_app_tool(s, "slow", {})
    [cancel] = posts(s.app_tools.cancel(rid))
    assert cancel["method"] == "notifications/cancelled" and cancel["params"]["requestId"] == rid
    assert s.app_tools.cancel(rid) == []
    assert of(s.receive(reply(rid, {"content": []})), vs.Refused)  # its late answer is a reply to nothing
