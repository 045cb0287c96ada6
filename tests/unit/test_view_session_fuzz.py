"""Whatever a view sends, ViewSession answers with well-formed JSON-RPC or refuses: it never raises."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_view_session import make, note, ready, req

import mcp_apps_host as vs
from mcp_apps_host.views.events import CallAppTool

METHODS = ["ui/initialize", "ping", "tools/call", "resources/read", "ui/open-link", "ui/message",
           "ui/update-model-context", "ui/request-display-mode", "ui/download-file", "sampling/createMessage",
           "ui/notifications/initialized", "ui/notifications/size-changed", "notifications/message",
           "notifications/cancelled", "ui/notifications/request-teardown", "ui/notifications/sandbox-proxy-ready",
           "ui/notifications/sandbox-resource-ready", "tools/list", "notifications/tools/list_changed", "made/up"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)
ids = st.integers() | st.text(max_size=8) | st.none() | st.booleans() | st.floats(allow_nan=False)
messages = st.one_of(
    json_values,
    st.fixed_dictionaries({"jsonrpc": st.just("2.0"), "method": st.sampled_from(METHODS)},
                          optional={"id": ids, "params": json_values | st.dictionaries(
                              st.sampled_from(["name", "arguments", "uri", "url", "role", "content", "mode",
                                               "width", "height", "level", "data", "requestId", "contents",
                                               "messages", "maxTokens", "_meta"]), json_values, max_size=4)}),
    st.fixed_dictionaries({"jsonrpc": st.just("2.0"), "id": ids},
                          optional={"result": json_values, "error": json_values}),
)


def call_app_tool(session: vs.ViewSession, name: str, arguments: dict) -> tuple[object, list]:
    """tools/call of one of the view's tools, as the host sends it: its id, and what goes out."""
    rid = session.next_host_id()
    return rid, session.handle(CallAppTool(rid, name, arguments))


def well_formed(effects: list[vs.Effect]) -> None:
    for effect in effects:
        if isinstance(effect, vs.PostToView):
            msg = effect.message
            json.dumps(msg, allow_nan=False)
            assert msg["jsonrpc"] == "2.0"
            if "method" not in msg:
                assert isinstance(msg["id"], (int, str)) and not isinstance(msg["id"], bool)
                assert ("result" in msg) != ("error" in msg)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(messages, min_size=1, max_size=12), st.booleans())
def test_any_sequence_of_messages(sequence, handshake_first):
    session = ready(make()) if handshake_first else make()
    for raw in sequence:
        well_formed(session.receive(raw))
    # The host side still works whatever happened.
    well_formed(session.teardown("done"))
    well_formed(session.teardown_timed_out())
    assert session.state in (vs.ViewState.CLOSED, vs.ViewState.ERROR)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_any_params_to_every_method(params):
    for method in METHODS:
        session = ready(make())
        well_formed(session.receive(req(1, method, params if isinstance(params, dict) else {"value": params})))
        well_formed(session.receive(note(method, params if isinstance(params, dict) else None)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values, json_values, st.booleans())
def test_any_answer_to_the_hosts_tool_requests(listing, answer, as_error):
    """A view that declared tools of its own answers the host's tools/list and tools/call with anything."""
    from mcp_apps_host.errors import CallFailed

    session = make()
    session.receive(note("ui/notifications/sandbox-proxy-ready"))
    session.receive(req(0, "ui/initialize", {"appInfo": {}, "appCapabilities": {"tools": {"listChanged": True}}}))
    effects = session.receive(note("ui/notifications/initialized"))
    well_formed(effects)
    [ask] = [e.message for e in effects if isinstance(e, vs.PostToView) and e.message.get("method") == "tools/list"]
    tools = [{"name": "t", "inputSchema": {"type": "object"}}, listing]
    well_formed(session.receive({"jsonrpc": "2.0", "id": ask["id"], "result": {"tools": tools}}))
    try:
        rid, sent = call_app_tool(session, "t", {})
    except CallFailed:
        return  # the listing made "t" invalid: nothing to call
    well_formed(sent)
    reply = {"error": {"code": -1, "message": str(answer)}} if as_error else {"result": answer}
    well_formed(session.receive({"jsonrpc": "2.0", "id": rid, **reply}))
    well_formed(session.request_timed_out(rid))
    well_formed(session.teardown("done"))
