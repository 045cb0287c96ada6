"""max_view_messages_per_second (the window, the burst recorded once, the answers a view gets) and
max_view_message_depth (and frames deeper than Python parses)."""

from __future__ import annotations

import pytest
from test_view_session import make, note, ready, req

from mcp_apps_host.settings import Limits, limits_from_env
from mcp_apps_host.views import effects as fx
from mcp_apps_host.views.ratelimit import Admission, MessageRate


def test_a_window_admits_its_limit_and_refuses_the_rest_recording_the_first_only():
    rate = MessageRate(3)
    seen = [rate.admit(10.0 + i * 0.01) for i in range(6)]
    assert seen == [Admission.ADMIT] * 3 + [Admission.REFUSE_FIRST, Admission.REFUSE, Admission.REFUSE]
    assert rate.refused_total == 3


def test_a_burst_lasts_until_a_window_passes_without_a_refusal():
    rate = MessageRate(2)
    for t in (0.0, 0.1, 0.2):
        rate.admit(t)
    assert rate.limited
    # The next window is over the limit again: the same burst, nothing new to record.
    assert [rate.admit(t) for t in (1.0, 1.1, 1.2)] == [Admission.ADMIT, Admission.ADMIT, Admission.REFUSE]
    # A window within the limit ends it; the next excess is a new burst, recorded again.
    assert rate.admit(2.0) == Admission.ADMIT
    assert [rate.admit(t) for t in (3.0, 3.1, 3.2)] == [Admission.ADMIT, Admission.ADMIT, Admission.REFUSE_FIRST]


def test_the_limit_must_be_positive():
    with pytest.raises(ValueError, match="per_second"):
        MessageRate(0)
    with pytest.raises(ValueError, match="MAX_VIEW_MESSAGES_PER_SECOND"):
        limits_from_env(environ={"MCP_APPS_HOST_MAX_VIEW_MESSAGES_PER_SECOND": "0"})
    limits = limits_from_env(environ={"MCP_APPS_HOST_MAX_VIEW_MESSAGES_PER_SECOND": "7"})
    assert limits.max_view_messages_per_second == 7


def test_a_view_over_the_limit_gets_errors_for_requests_and_nothing_for_notifications():
    session = ready(make(Limits(max_view_messages_per_second=5)))
    now = 100.0
    assert all(session.over_rate(req(i, "ping"), now) is None for i in range(5))
    first = session.over_rate(req(5, "ping"), now)
    assert first is not None and isinstance(first[0], fx.Refused)
    assert "max_view_messages_per_second = 5" in first[0].reason
    assert first[1] == fx.PostToView({"jsonrpc": "2.0", "id": 5, "error": {
        "code": -32000, "message": "more than 5 messages in one second (max_view_messages_per_second = 5)"}})
    again = session.over_rate(req(6, "ping"), now)
    assert again is not None and len(again) == 1 and isinstance(again[0], fx.PostToView)  # answered, not recorded
    assert session.over_rate(note("notifications/message", {"level": "info", "data": "x"}), now) == []
    assert session.over_rate({"jsonrpc": "2.0", "id": 3, "result": {}}, now) == []
    # A second later the view is served again.
    assert session.over_rate(req(7, "ping"), now + 1.5) is None


# ---- max_view_message_depth, and frames deeper than Python parses ----------------------------------


def test_a_message_nested_deeper_than_the_limit_is_refused_with_its_id():
    session = ready(make(Limits(max_view_message_depth=5)))
    deep: object = {}
    for _ in range(5):
        deep = {"d": deep}
    effects = session.receive(req(9, "ui/update-model-context", {"structuredContent": deep}))
    assert isinstance(effects[0], fx.Refused) and "max_view_message_depth (5)" in effects[0].reason
    assert effects[1].message["id"] == 9 and effects[1].message["error"]["code"] == -32600
    shallow = session.receive(req(10, "ui/update-model-context", {"structuredContent": {"a": [1]}}))
    assert not any(isinstance(e, fx.Refused) for e in shallow)


def test_depth_is_counted_without_recursion_and_stops_early():
    from mcp_apps_host.views.jsonrpc import nesting_depth

    assert nesting_depth(1, 10) == 0 and nesting_depth([], 10) == 1 and nesting_depth({"a": [{}]}, 10) == 3
    very: object = []
    for _ in range(100_000):
        very = [very]
    assert nesting_depth(very, 50) == 51


def test_a_frame_too_deep_for_json_loads_is_cut_to_what_can_be_read():
    import json

    from mcp_apps_host.web.deepjson import cut_deep

    text = '{"type":"view-message","view":"v","message":{"id":3,"s":"[{\\"]","p":' + "[" * 5000 + "]" * 5000 + "}}"
    with pytest.raises(RecursionError):
        json.loads(text)
    data = json.loads(cut_deep(text, keep=4))
    assert data == {"type": "view-message", "view": "v", "message": {"id": 3, "s": '[{"]', "p": [[None]]}}
    assert cut_deep('{"a":[1,{"b":2}]}', keep=10) == '{"a":[1,{"b":2}]}'  # shallow text is left alone
    assert cut_deep("[[[", keep=1) == "[null"  # not JSON stays not JSON
