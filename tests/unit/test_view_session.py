"""ViewSession, the sans-IO view protocol: every method a view may send, and the host's side."""

from __future__ import annotations

from dataclasses import replace

import pytest

import mcp_apps_host as vs
from mcp_apps_host.settings import Limits
from mcp_apps_host.values.tools import tool_entry
from mcp_apps_host.views.context import host_capabilities
from mcp_apps_host.views.theme import STYLE_VARIABLE_KEYS, host_styles

TOOL = tool_entry("srv", {
    "name": "show",
    "description": "shows things",
    "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}},
    "_meta": {"ui": {"resourceUri": "ui://srv/show.html"}},
})


def make(limits: Limits | None = None, call_id: int | None = 7, decide=None) -> vs.ViewSession:
    extra = {"decide_tool_call": decide} if decide else {}
    spec = vs.ViewSpec(**extra,
        server="srv", tool=TOOL, html="<p>hi</p>", call_id=call_id,
        csp={"connectDomains": ["https://api.example.com"]},
        permissions={"clipboardWrite": {}}, allow="clipboard-write",
        app_tools=frozenset({"show", "app-only"}), all_tools=frozenset({"show", "app-only", "model-only"}),
    )
    return vs.ViewSession(spec, vs.HostEnvironment(theme="dark", styles=host_styles()), limits or Limits())


def req(msg_id, method, params=None):
    msg = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def note(method, params=None):
    msg = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def posts(effects):
    return [e.message for e in effects if isinstance(e, vs.PostToView)]


def of(effects, kind):
    return [e for e in effects if isinstance(e, kind)]


def ready(session: vs.ViewSession, init_id=0) -> vs.ViewSession:
    session.receive(note("ui/notifications/sandbox-proxy-ready"))
    session.receive(req(init_id, "ui/initialize", {"appInfo": {"name": "t", "version": "1"}, "appCapabilities": {},
                                                   "protocolVersion": "2026-01-26"}))
    session.receive(note("ui/notifications/initialized"))
    assert session.state == vs.ViewState.READY
    return session


# ---- handshake ----------------------------------------------------------------------------------


def test_proxy_ready_sends_the_resource_once():
    s = make()
    effects = s.receive(note("ui/notifications/sandbox-proxy-ready"))
    [msg] = posts(effects)
    assert msg["method"] == "ui/notifications/sandbox-resource-ready"
    assert msg["params"]["html"] == "<p>hi</p>"
    assert msg["params"]["allow"] == "clipboard-write"
    assert "allow-top-navigation" not in msg["params"]["sandbox"]
    assert of(effects, vs.StartInitTimer)
    again = s.receive(note("ui/notifications/sandbox-proxy-ready"))
    assert not posts(again) and of(again, vs.Refused)


@pytest.mark.parametrize("init_id", [0, "init-1"])
def test_initialize_result_is_complete(init_id):
    s = make()
    s.receive(note("ui/notifications/sandbox-proxy-ready"))
    [reply] = posts(s.receive(req(init_id, "ui/initialize", {"appInfo": {"name": "a", "version": "1"},
                                                             "appCapabilities": {}, "protocolVersion": "2026-01-26"})))
    assert reply["id"] == init_id  # id 0 is a real id
    result = reply["result"]
    assert set(result) == {"protocolVersion", "hostInfo", "hostCapabilities", "hostContext"}
    assert result["protocolVersion"] == "2026-01-26"
    caps = result["hostCapabilities"]
    assert all(isinstance(v, dict) for v in caps.values())  # objects, never `true`
    assert caps["sandbox"]["csp"] == {"connectDomains": ["https://api.example.com"]}
    ctx = result["hostContext"]
    assert ctx["theme"] == "dark" and ctx["platform"] == "web" and ctx["displayMode"] == "inline"
    assert set(ctx["availableDisplayModes"]) <= {"inline", "fullscreen", "pip"}
    assert ctx["toolInfo"]["id"] == 7 and ctx["toolInfo"]["tool"]["inputSchema"]["type"] == "object"
    assert set(ctx["styles"]["variables"]) == set(STYLE_VARIABLE_KEYS)
    assert "maxHeight" in ctx["containerDimensions"]
    assert {"locale", "timeZone", "userAgent", "deviceCapabilities", "safeAreaInsets"} <= set(ctx)


def test_tool_info_without_schema_gets_one():
    s = make()
    object.__setattr__(s.spec, "tool", tool_entry("srv", {"name": "bare"}))
    assert s.host_context()["toolInfo"]["tool"]["inputSchema"] == {"type": "object"}


def test_nothing_reaches_the_view_before_initialized():
    s = make()
    s.receive(note("ui/notifications/sandbox-proxy-ready"))
    assert s.tool_input({"x": 1}) == []
    assert s.tool_result({"content": [{"type": "text", "text": "ok"}]}) == []
    s.receive(req(0, "ui/initialize", {"appCapabilities": {}, "appInfo": {}}))
    effects = s.receive(note("ui/notifications/initialized"))
    assert of(effects, vs.StateChanged)[0].state == vs.ViewState.READY
    methods = [m["method"] for m in posts(effects)]
    assert methods == ["ui/notifications/tool-input", "ui/notifications/tool-result"]


def test_partial_inputs_then_input_then_result_in_order():
    s = ready(make())
    sent = []
    sent += posts(s.tool_input_partial({"x": 1}))
    sent += posts(s.tool_input_partial({"x": 12}))
    sent += posts(s.tool_input({"x": 123}))
    sent += posts(s.tool_result({"content": []}))
    assert [m["method"].rsplit("/", 1)[1] for m in sent] == [
        "tool-input-partial", "tool-input-partial", "tool-input", "tool-result"]
    assert sent[1]["params"] == {"arguments": {"x": 12}}
    with pytest.raises(vs.IllegalTransition):
        s.tool_input_partial({"x": 1})
    with pytest.raises(vs.IllegalTransition):
        s.tool_result({"content": []})


def test_tool_cancelled():
    s = ready(make())
    s.tool_input({})
    [msg] = posts(s.tool_cancelled("cancelled by the person"))
    assert msg == {"jsonrpc": "2.0", "method": "ui/notifications/tool-cancelled",
                   "params": {"reason": "cancelled by the person"}}


def test_second_initialize_and_requests_before_initialize():
    s = make()
    s.receive(note("ui/notifications/sandbox-proxy-ready"))
    [err] = posts(s.receive(req(3, "tools/call", {"name": "show", "arguments": {}})))
    assert err["error"]["code"] == -32600
    s.receive(req(0, "ui/initialize", {}))
    [dup] = posts(s.receive(req(1, "ui/initialize", {})))
    assert dup["error"]["code"] == -32600


def test_messages_before_proxy_ready_are_dropped():
    s = make()
    effects = s.receive(req(0, "ui/initialize", {}))
    assert not posts(effects) and of(effects, vs.Refused)


# ---- the method table ---------------------------------------------------------------------------


@pytest.mark.parametrize("msg_id", [0, 5, "abc"])
def test_ping(msg_id):
    s = ready(make())
    assert posts(s.receive(req(msg_id, "ping"))) == [{"jsonrpc": "2.0", "id": msg_id, "result": {}}]


def test_tools_call_is_proxied_with_progress_token_and_answered():
    s = ready(make())
    effects = s.receive(req(0, "tools/call",
                            {"name": "app-only", "arguments": {"a": 1}, "_meta": {"progressToken": "p1"}}))
    [call] = of(effects, vs.ProxyToolCall)
    assert (call.request_id, call.name, call.arguments, call.progress_token) == (0, "app-only", {"a": 1}, "p1")
    [prog] = posts(s.progress("p1", 1, 4, "a quarter"))
    assert prog["method"] == "notifications/progress" and prog["params"]["total"] == 4
    [reply] = posts(s.complete_request(0, result={"content": [], "isError": False}))
    assert reply == {"jsonrpc": "2.0", "id": 0, "result": {"content": [], "isError": False}}
    assert s.complete_request(0, result={}) == []  # answered once only


def test_tools_call_model_only_tool_is_refused():
    s = ready(make())
    effects = s.receive(req("x", "tools/call", {"name": "model-only", "arguments": {}}))
    assert not of(effects, vs.ProxyToolCall)
    [err] = posts(effects)
    assert err["id"] == "x" and err["error"]["code"] == -32000 and "visibility" in err["error"]["message"]


def test_tools_call_other_servers_tool_is_refused():
    s = ready(make())
    [err] = posts(s.receive(req(1, "tools/call", {"name": "weather", "arguments": {}})))
    assert "not a tool of server 'srv'" in err["error"]["message"]


def test_tools_call_while_the_server_is_not_connected_says_so():
    # A view mounted again (a reload, a restart of the host) before its server is back: no tool is known yet,
    # not even the view's own, and the view hears why rather than that the tool does not exist.
    s = make()
    s = ready(vs.ViewSession(replace(s.spec, app_tools=frozenset(), all_tools=frozenset()), s.env, s.limits))
    [err] = posts(s.receive(req(1, "tools/call", {"name": "show", "arguments": {}})))
    assert err["error"]["code"] == -32000 and "server 'srv' is not connected now" in err["error"]["message"]


def test_tools_call_bad_params():
    s = ready(make())
    [err] = posts(s.receive(req(1, "tools/call", {"name": "show", "arguments": [1]})))
    assert err["error"]["code"] == -32602


def test_tools_call_error_is_forwarded():
    s = ready(make())
    s.receive(req(4, "tools/call", {"name": "show", "arguments": {}}))
    [err] = posts(s.complete_request(4, error=(-32603, "boom")))
    assert err["error"] == {"code": -32603, "message": "boom"}


def test_duplicate_pending_id_is_refused():
    s = ready(make())
    s.receive(req(4, "tools/call", {"name": "show", "arguments": {}}))
    [err] = posts(s.receive(req(4, "tools/call", {"name": "show", "arguments": {}})))
    assert err["error"]["code"] == -32600


def test_pending_request_limit():
    s = ready(make(Limits(max_pending_requests_per_view=2)))
    for i in range(2):
        assert of(s.receive(req(i, "resources/read", {"uri": "ui://x"})), vs.ProxyResourceRead)
    [err] = posts(s.receive(req(9, "resources/read", {"uri": "ui://x"})))
    assert "max_pending_requests_per_view" in err["error"]["message"]


def test_resources_read_is_proxied():
    s = ready(make())
    [read] = of(s.receive(req(0, "resources/read", {"uri": "videos://1"})), vs.ProxyResourceRead)
    assert read.uri == "videos://1"
    [err] = posts(s.receive(req(1, "resources/read", {})))
    assert err["error"]["code"] == -32602


@pytest.mark.parametrize("method", ["resources/list", "resources/templates/list"])
def test_resource_listings_are_proxied_with_their_cursor(method):
    s = ready(make())
    [listing] = of(s.receive(req(0, method, {"cursor": "page-2"})), vs.ProxyResourceList)
    assert (listing.method, listing.cursor) == (method, "page-2")
    [err] = posts(s.receive(req(1, method, {"cursor": 2})))
    assert err["error"]["code"] == -32602


def test_open_link_asks_then_opens():
    s = ready(make())
    [ask] = of(s.receive(req(0, "ui/open-link", {"url": "https://example.com/a"})), vs.AskConsent)
    assert ask.kind == "open-link" and ask.detail == "https://example.com/a"
    effects = s.answer_consent(ask.token, True)
    assert of(effects, vs.OpenLink)[0].url == "https://example.com/a"
    assert posts(effects) == [{"jsonrpc": "2.0", "id": 0, "result": {}}]


def test_open_link_denied():
    s = ready(make())
    [ask] = of(s.receive(req(2, "ui/open-link", {"url": "http://example.com"})), vs.AskConsent)
    effects = s.answer_consent(ask.token, False)
    assert not of(effects, vs.OpenLink)
    assert posts(effects)[0]["error"]["code"] == -32000


@pytest.mark.parametrize("url", ["javascript:alert(1)", "file:///etc/passwd", "data:text/html,x", "/relative", 5, "http://"])
def test_open_link_rejects_non_web_urls(url):
    s = ready(make())
    effects = s.receive(req(1, "ui/open-link", {"url": url}))
    assert not of(effects, vs.AskConsent)
    assert posts(effects)[0]["error"]["code"] == -32602


@pytest.mark.parametrize("content", [[{"type": "text", "text": "hello"}], {"type": "text", "text": "hello"}])
def test_message_accepts_both_shapes_after_consent(content):
    s = ready(make())
    [ask] = of(s.receive(req(0, "ui/message", {"role": "user", "content": content})), vs.AskConsent)
    assert ask.kind == "message" and ask.detail == "hello"
    effects = s.answer_consent(ask.token, True)
    assert of(effects, vs.PostChatMessage)[0].content == [{"type": "text", "text": "hello"}]
    assert posts(effects)[0]["result"] == {}


def test_message_denied_is_dropped():
    s = ready(make())
    message = {"role": "user", "content": [{"type": "text", "text": "x"}]}
    [ask] = of(s.receive(req(0, "ui/message", message)), vs.AskConsent)
    effects = s.answer_consent(ask.token, False)
    assert not of(effects, vs.PostChatMessage) and posts(effects)[0]["error"]["code"] == -32000


def test_message_bad_role():
    s = ready(make())
    assert posts(s.receive(req(0, "ui/message", {"role": "assistant", "content": []})))[0]["error"]["code"] == -32602


def test_update_model_context_keeps_latest():
    s = ready(make())
    s.receive(req(0, "ui/update-model-context", {"content": [{"type": "text", "text": "a"}]}))
    effects = s.receive(req(1, "ui/update-model-context", {"structuredContent": {"b": 2}}))
    assert posts(effects) == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
    assert s.model_context == vs.ModelContextUpdated(None, {"b": 2})
    assert posts(s.receive(req(2, "ui/update-model-context", {"content": "nope"})))[0]["error"]["code"] == -32602


def test_request_display_mode_answers_with_mode_in_effect():
    s = ready(make())  # declared no display modes: stays inline
    assert posts(s.receive(req(0, "ui/request-display-mode", {"mode": "fullscreen"}))) == [
        {"jsonrpc": "2.0", "id": 0, "result": {"mode": "inline"}}]
    assert posts(s.receive(req(1, "ui/request-display-mode", {"mode": "huge"})))[0]["error"]["code"] == -32602


def test_display_mode_switch_for_a_view_that_declared_it():
    s = make()
    s.receive(note("ui/notifications/sandbox-proxy-ready"))
    s.receive(req(0, "ui/initialize", {"appCapabilities": {"availableDisplayModes": ["inline", "fullscreen"]}}))
    s.receive(note("ui/notifications/initialized"))
    assert s.available_modes() == ["inline", "fullscreen"]
    effects = s.receive(req(1, "ui/request-display-mode", {"mode": "fullscreen"}))
    # The reply at once; the view hears the mode with its container's size once the page placed it.
    [reply] = posts(effects)
    assert reply["result"] == {"mode": "fullscreen"}
    assert of(effects, vs.DisplayModeChanged) == [vs.DisplayModeChanged("fullscreen")]
    [changed] = posts(s.container_measured("fullscreen", 1180, 740))
    assert changed["method"] == "ui/notifications/host-context-changed"
    assert changed["params"] == {"displayMode": "fullscreen", "containerDimensions": {"width": 1180, "height": 740},
                                 "safeAreaInsets": {"top": 0, "right": 0, "bottom": 0, "left": 0}}
    assert posts(s.receive(req(2, "ui/request-display-mode", {"mode": "pip"})))[0]["result"] == {"mode": "fullscreen"}
    # The person switches from the header or leaves with Escape: any declared mode, never another.
    assert of(s.set_display_mode("inline"), vs.DisplayModeChanged)[0].mode == "inline"
    assert of(s.set_display_mode("pip"), vs.Log)[0].text.startswith("display mode 'pip' not switched")
    assert s.display_mode == "inline"
    assert of(s.set_display_mode("fullscreen"), vs.DisplayModeChanged)[0].mode == "fullscreen"


def test_container_measurements_reach_the_view_once_per_size_and_only_for_the_mode_in_effect():
    s = make(Limits(inline_max_height=600))
    s.receive(note("ui/notifications/sandbox-proxy-ready"))
    s.receive(req(0, "ui/initialize", {"appCapabilities": {"availableDisplayModes": ["pip"]}}))
    assert s.container_measured("inline", 600, 100) == []  # not ready yet
    s.receive(note("ui/notifications/initialized"))
    s.set_display_mode("pip")
    assert s.container_measured("fullscreen", 900, 700) == []  # a mode since left
    [first] = posts(s.container_measured("pip", 400, 300))
    assert first["params"]["containerDimensions"] == {"width": 400, "height": 300}
    assert s.container_measured("pip", 400, 300) == []  # the same size again: nothing new to say
    [resized] = posts(s.container_measured("pip", 500, 320))
    # Resizing the pip window: the new size, no new insets.
    assert resized["params"] == {"displayMode": "pip", "containerDimensions": {"width": 500, "height": 320}}
    s.set_display_mode("inline")
    [back] = posts(s.container_measured("inline", 640, 158))
    # Inline the height is the view's own again, up to the host's limit.
    assert back["params"]["containerDimensions"] == {"width": 640, "maxHeight": 600}
    assert back["params"]["displayMode"] == "inline"


@pytest.mark.parametrize("method", ["prompts/list", "made/up"])
def test_unknown_methods_get_method_not_found(method):
    s = ready(make())
    [err] = posts(s.receive(req(0, method, {})))
    assert err["error"]["code"] == -32601


# ---- notifications from the view ----------------------------------------------------------------


def test_size_changed_is_clamped():
    s = ready(make(Limits(max_view_height=500, max_view_width=300)))
    [size] = of(s.receive(note("ui/notifications/size-changed", {"width": 1e9, "height": 120.2})), vs.Resize)
    assert (size.width, size.height) == (300, 121)
    [size] = of(s.receive(note("ui/notifications/size-changed", {"height": -5})), vs.Resize)
    assert (size.width, size.height) == (None, 0)
    assert of(s.receive(note("ui/notifications/size-changed", {"height": "tall"})), vs.Refused)


def test_an_inline_view_grows_up_to_inline_max_height_and_a_grow_loop_ends_there():
    s = ready(make(Limits(inline_max_height=400)))
    assert of(s.receive(note("ui/notifications/size-changed", {"height": 300})), vs.Resize) == [vs.Resize(None, 300)]
    # Content at 100vh: each frame height it is given comes back larger.
    effects = s.receive(note("ui/notifications/size-changed", {"height": 410}))
    assert of(effects, vs.Resize) == [vs.Resize(None, 400)]
    [log] = of(effects, vs.Log)
    assert log.level == "warning" and "inline_max_height (400 px)" in log.text and "100vh" in log.text
    # Said once; the frame stays at the cap, so the loop has nothing to grow.
    effects = s.receive(note("ui/notifications/size-changed", {"height": 420}))
    assert effects == [vs.Resize(None, 400)]


def test_log_notification():
    s = ready(make())
    log_params = {"level": "warning", "logger": "app", "data": {"a": 1}}
    [line] = of(s.receive(note("notifications/message", log_params)), vs.Log)
    assert line.level == "warning" and line.text == 'app: {"a": 1}'
    [line] = of(s.receive(note("notifications/message", {"level": "bogus", "data": "x"})), vs.Log)
    assert line.level == "info"


def test_cancelled_notification_cancels_proxied_request():
    s = ready(make())
    s.receive(req(0, "tools/call", {"name": "show", "arguments": {}}))
    [cancel] = of(s.receive(note("notifications/cancelled", {"requestId": 0})), vs.CancelProxied)
    assert cancel.request_id == 0


def test_view_cannot_send_sandbox_messages():
    s = ready(make())
    effects = s.receive(note("ui/notifications/sandbox-resource-ready", {"html": "<script>evil()</script>"}))
    assert of(effects, vs.Refused) and not posts(effects)


# ---- teardown -----------------------------------------------------------------------------------


def test_teardown_waits_for_reply():
    s = ready(make())
    effects = s.teardown("closed by the person")
    [msg] = posts(effects)
    assert msg["method"] == "ui/resource-teardown" and msg["id"] == 0 and msg["params"]["reason"]
    assert of(effects, vs.StartTeardownTimer)
    assert s.state == vs.ViewState.TEARING_DOWN
    done = s.receive({"jsonrpc": "2.0", "id": 0, "result": {}})
    assert of(done, vs.StateChanged)[0].state == vs.ViewState.CLOSED


def test_teardown_method_not_found_reply_means_go_ahead():
    s = ready(make())
    s.teardown("x")
    done = s.receive({"jsonrpc": "2.0", "id": 0, "error": {"code": -32601, "message": "no handler"}})
    assert s.state == vs.ViewState.CLOSED and of(done, vs.StateChanged)


def test_teardown_timeout_and_request_teardown():
    s = ready(make())
    s.receive(note("ui/notifications/request-teardown"))
    assert s.state == vs.ViewState.TEARING_DOWN
    assert of(s.teardown_timed_out(), vs.StateChanged)[0].state == vs.ViewState.CLOSED
    assert of(s.receive(req(5, "ping")), vs.Refused)


def test_teardown_cancels_pending_work():
    s = ready(make())
    s.receive(req(0, "tools/call", {"name": "show", "arguments": {}}))
    s.teardown("x")
    effects = s.teardown_timed_out()
    assert of(effects, vs.CancelProxied)[0].request_id == 0


def test_init_timeout_fails_the_view():
    s = make(Limits(view_init_timeout=2))
    s.receive(note("ui/notifications/sandbox-proxy-ready"))
    [changed] = of(s.init_timed_out(), vs.StateChanged)
    assert changed.state == vs.ViewState.ERROR and "never sent ui/initialize" in changed.error
    assert ready(make()).init_timed_out() == []


def test_host_context_changed_sends_partial_with_whole_styles():
    s = ready(make())
    [msg] = posts(s.host_context_changed(theme="light", styles=host_styles()))
    assert msg["method"] == "ui/notifications/host-context-changed"
    assert msg["params"]["theme"] == "light" and len(msg["params"]["styles"]["variables"]) == len(STYLE_VARIABLE_KEYS)


# ---- malformed input never raises -----------------------------------------------------------------


@pytest.mark.parametrize("raw", [
    None, 3, "x", [], {}, {"jsonrpc": "1.0", "id": 1, "method": "ping"},
    {"jsonrpc": "2.0", "id": True, "method": "ping"}, {"jsonrpc": "2.0", "id": None, "method": "ping"},
    {"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, {"jsonrpc": "2.0", "method": 5},
    {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]},
    {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}},
    {"jsonrpc": "2.0", "id": 99, "result": {}},
    {"jsonrpc": "2.0", "method": "ping", "id": 1, "extra": 1},
])
def test_malformed_messages_are_refused_not_raised(raw):
    s = ready(make())
    effects = s.receive(raw)
    assert of(effects, vs.Refused)
    for msg in posts(effects):
        assert msg["error"]["code"] == -32600


def test_oversized_message_is_refused():
    s = ready(make(Limits(max_view_message_bytes=200)))
    effects = s.receive(req(3, "ping", {"pad": "x" * 300}))
    assert "max_view_message_bytes" in of(effects, vs.Refused)[0].reason
    assert posts(effects)[0]["id"] == 3


# ---- consent policy on tools/call, downloads ---------------------------------------------------------


def test_tools_call_policy_deny_and_ask():
    rules = {"show": ("deny", "denied in the config", False), "app-only": ("ask", "not annotated read-only", True)}
    s = ready(make(decide=lambda name: rules[name]))
    [err] = posts(s.receive(req(0, "tools/call", {"name": "show", "arguments": {}})))
    assert err["error"]["code"] == -32000 and "denied in the config" in err["error"]["message"]
    effects = s.receive(req(1, "tools/call", {"name": "app-only", "arguments": {"n": 1}}))
    [ask] = of(effects, vs.AskConsent)
    assert ask.kind == "tool-call" and ask.subject == "app-only" and ask.can_remember and '"n": 1' in ask.detail
    assert of(effects, vs.Decided)[0].decision == "asked" and not of(effects, vs.ProxyToolCall)
    allowed = s.answer_consent(ask.token, True)
    assert of(allowed, vs.ProxyToolCall)[0].request_id == 1 and not posts(allowed)  # answered by the call itself
    [reply] = posts(s.complete_request(1, result={"content": []}))
    assert reply["id"] == 1 and "result" in reply


def test_tools_call_consent_declined():
    s = ready(make(decide=lambda name: ("ask", "destructive", False)))
    [ask] = of(s.receive(req("a", "tools/call", {"name": "show", "arguments": {}})), vs.AskConsent)
    effects = s.answer_consent(ask.token, False)
    assert of(effects, vs.Decided)[0].decision == "declined"
    assert posts(effects)[0]["error"]["code"] == -32000 and not of(effects, vs.ProxyToolCall)


def test_download_file_asks_with_a_safe_name():
    s = ready(make())
    contents = [{"type": "resource", "resource": {"uri": "file:///../../etc/report.csv", "mimeType": "text/csv",
                                                    "text": "a,b\n1,2\n"}}]
    [ask] = of(s.receive(req(0, "ui/download-file", {"contents": contents})), vs.AskConsent)
    assert ask.kind == "download" and ask.subject == "report.csv" and "text/csv" in ask.detail
    effects = s.answer_consent(ask.token, True)
    [download] = of(effects, vs.Download)
    assert (download.filename, download.text) == ("report.csv", "a,b\n1,2\n")
    assert posts(effects)[0]["result"] == {}


@pytest.mark.parametrize("contents", [None, [], [{"type": "resource_link", "name": "no uri"}],
                                      [{"type": "resource", "resource": {"uri": "x://y"}}]])
def test_download_file_bad_params(contents):
    s = ready(make())
    assert posts(s.receive(req(0, "ui/download-file", {"contents": contents})))[0]["error"]["code"] == -32602


def test_sampling_is_refused_unless_enabled_then_asked():
    params = {"messages": [{"role": "user", "content": {"type": "text", "text": "haiku please"}}], "maxTokens": 50}
    s = ready(make())
    [err] = posts(s.receive(req(0, "sampling/createMessage", params)))
    assert err["error"]["code"] == -32000 and "sampling is off" in err["error"]["message"]
    spec = vs.ViewSpec(**{**s.spec.__dict__, "decide_sampling": lambda: ("ask", "enabled"), "sampling_enabled": True})
    s2 = ready(vs.ViewSession(spec, s.env, Limits()))
    assert "sampling" in host_capabilities(s2.spec)
    [ask] = of(s2.receive(req(1, "sampling/createMessage", params)), vs.AskConsent)
    assert ask.kind == "sampling" and "haiku please" in ask.detail
    [sample] = of(s2.answer_consent(ask.token, True), vs.Sample)
    assert sample.request_id == 1
    assert posts(s2.complete_request(1, result={"role": "assistant", "content": {"type": "text", "text": "ok"}}))
    [bad] = posts(s2.receive(req(2, "sampling/createMessage", {"messages": [], "maxTokens": 5})))
    assert bad["error"]["code"] == -32602


def test_request_teardown_is_answered_with_resource_teardown_and_the_host_waits():
    s = ready(make())
    effects = s.receive(note("ui/notifications/request-teardown"))
    [msg] = posts(effects)
    assert msg["method"] == "ui/resource-teardown" and msg["params"]["reason"]
    assert of(effects, vs.StartTeardownTimer) and s.state == vs.ViewState.TEARING_DOWN  # not closed yet
    done = s.receive({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
    assert of(done, vs.StateChanged)[0].state == vs.ViewState.CLOSED
