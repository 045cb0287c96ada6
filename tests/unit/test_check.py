"""`check`'s reasoning without a browser: arguments from a schema, conclusions from audit records, reports."""

from __future__ import annotations

from xml.etree import ElementTree as ET

import pytest

from mcp_apps_host.check.arguments import example_arguments, parse_args_flags
from mcp_apps_host.check.findings import ConsoleLine, Observation, Record, conclude, size_loop
from mcp_apps_host.check.report import junit, table
from mcp_apps_host.errors import ConfigError

T0 = 1000.0


def rec(ts: float, direction: str, method: str | None, payload=None, msg_id=None, decision=None, reason=None):
    return Record(T0 + ts, direction, method, msg_id, decision, reason, payload)


def msg(method: str, params=None, msg_id=None):
    out = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if msg_id is not None:
        out["id"] = msg_id
    return out


INIT = msg("ui/initialize", {"appInfo": {"name": "a"}, "appCapabilities": {}, "protocolVersion": "2026-01-26"}, 0)
GOOD = [
    rec(0.1, "view->host", "ui/notifications/sandbox-proxy-ready", msg("ui/notifications/sandbox-proxy-ready")),
    rec(0.2, "view->host", "ui/initialize", INIT, 0),
    rec(0.3, "host->view", None, {"jsonrpc": "2.0", "id": 0, "result": {}}, 0),
    rec(0.4, "view->host", "ui/notifications/initialized", msg("ui/notifications/initialized")),
    rec(0.5, "host->view", "ui/notifications/tool-input", msg("ui/notifications/tool-input", {"arguments": {}})),
    rec(0.6, "host->view", "ui/notifications/tool-result", msg("ui/notifications/tool-result", {"content": []})),
]


def observe(**kw) -> Observation:
    base = {"server": "s", "tool": "t", "arguments": {}, "submitted": T0, "handle": "h", "state": "ready",
            "result_seen": True, "blank_light": False, "blank_dark": False, "dark_differs": True}
    return Observation(**{**base, **kw})


def test_a_complete_handshake_with_a_result_and_a_drawing_passes_and_is_timed():
    result = conclude(observe(), GOOD, set(), 4)
    assert result.passed, result.failures
    assert result.ready_ms == 400 and result.result_ms == 600


def test_a_view_that_never_sends_initialized_fails_in_the_specs_words():
    records = [r for r in GOOD if r.method != "ui/notifications/initialized" and "tool-" not in (r.method or "")]
    result = conclude(observe(), records, set(), 4)
    assert not result.passed
    assert "never sent ui/notifications/initialized" in result.failures[0]
    assert len(result.failures) == 1  # the missing result is the same fault, not a second one


def test_a_view_that_never_starts_the_handshake_says_what_did_not_load():
    records = GOOD[:1]
    console = [ConsoleLine("error", "Failed to load resource: net::ERR_NAME_NOT_RESOLVED", "https://cdn.example/x.js")]
    result = conclude(observe(console=console), records, set(), 4)
    assert result.failures[0].startswith("the view never sent ui/initialize")
    assert "https://cdn.example/x.js did not load: net::ERR_NAME_NOT_RESOLVED" in result.failures[0]


def test_an_invalid_template_is_the_whole_reason():
    obs = observe(handle=None, state="error", error="the template is not valid: mimeType is 'text/html'")
    assert conclude(obs, [], set(), 4).failures == ["the template is not valid: mimeType is 'text/html'"]


def test_mcp_initialize_or_its_params_are_named():
    plain = [GOOD[0], rec(0.2, "view->host", "initialize", msg("initialize", {}, 0), 0, "refused", "method not found")]
    assert "instead of ui/initialize" in conclude(observe(), plain, set(), 4).failures[0]
    wrong = msg("ui/initialize", {"clientInfo": {"name": "a"}, "capabilities": {}}, 0)
    records = [GOOD[0], rec(0.2, "view->host", "ui/initialize", wrong, 0), *GOOD[2:]]
    failures = conclude(observe(), records, set(), 4).failures
    assert any("clientInfo" in f and "appInfo" in f for f in failures)
    assert any("appCapabilities" in f for f in failures)


def test_a_message_before_the_handshake_a_csp_violation_and_a_blank_drawing_each_fail():
    early = rec(0.15, "view->host", "tools/call", msg("tools/call", {"name": "x"}, 5), 5, "refused",
                "tools/call before ui/initialize")
    csp = rec(0.7, "view->host", "csp-violation", {"blocked-uri": "https://evil.example/a"}, None, "refused",
              "CSP blocked https://evil.example/a (connect-src); declare 'https://evil.example' in "
              "_meta.ui.csp.connectDomains to allow it")
    result = conclude(observe(blank_light=True), [*GOOD, early, csp], set(), 4)
    text = "\n".join(result.failures)
    assert "posted tools/call before the handshake" in text
    assert "CSP blocked https://evil.example/a" in text
    assert "drew nothing" in text


def test_a_failed_resource_read_fails_but_a_request_the_person_declined_does_not():
    read = rec(0.7, "view->host", "resources/read", msg("resources/read", {"uri": "videos://a"}, 3), 3)
    error = rec(0.8, "host->view", None, {"jsonrpc": "2.0", "id": 3, "error": {"code": -32603, "message": "offline"}})
    assert "resources/read videos://a failed: offline (error -32603)" in conclude(
        observe(), [*GOOD, read, error], set(), 4).failures
    call = rec(0.7, "view->host", "tools/call", msg("tools/call", {"name": "x"}, 4), 4)
    declined = rec(0.75, "view->host", "tools/call", None, 4, "declined", "declined by the person")
    no = rec(0.8, "host->view", None, {"jsonrpc": "2.0", "id": 4, "error": {"code": -32000, "message": "declined"}})
    result = conclude(observe(), [*GOOD, call, declined, no], {"x"}, 4)
    assert result.passed, result.failures
    assert "called app-only tools: x" in result.notes


def test_a_grow_shrink_loop_is_found_but_growing_once_is_not():
    def sizes(heights):
        return [rec(1 + i / 10, "view->host", "ui/notifications/size-changed",
                    msg("ui/notifications/size-changed", {"height": h})) for i, h in enumerate(heights)]
    assert size_loop(sizes([100, 200, 100, 200, 100, 200]), T0, 4) is not None
    assert size_loop(sizes([100, 150, 200, 260, 260]), T0, 4) is None
    assert size_loop(sizes([100, 200, 100, 200, 100, 200]), T0 + 5, 4) is None  # all before the result


def test_example_arguments_come_from_defaults_examples_and_types():
    schema = {"type": "object", "required": ["q", "n", "deep"], "properties": {
        "q": {"type": "string"}, "n": {"type": "integer", "minimum": 3}, "mode": {"enum": ["a", "b"]},
        "opt": {"type": "string"}, "limit": {"type": "integer", "default": 10},
        "deep": {"type": "object", "required": ["x"], "properties": {"x": {"type": "boolean"}}}}}
    assert example_arguments(schema) == {"q": "example", "n": 3, "mode": "a", "limit": 10, "deep": {"x": False}}
    assert example_arguments({"examples": [{"a": 1}], "properties": {"b": {"default": 2}}}) == {"a": 1}


def test_args_flags_are_checked_by_name():
    assert parse_args_flags(['pdf/show={"url": "x"}']) == {("pdf", "show"): {"url": "x"}}
    for bad, needle in (("pdf=1", "SERVER/TOOL=JSON"), ("a/b={", "not valid JSON"), ("a/b=[1]", "JSON object")):
        with pytest.raises(ConfigError, match=needle):
            parse_args_flags([bad])
    with pytest.raises(ConfigError, match="more than once"):
        parse_args_flags(["a/b={}", "a/b={}"])


def test_junit_has_one_testcase_per_view_and_the_table_says_why():
    ok = conclude(observe(), GOOD, set(), 4)
    bad = conclude(observe(server="srv", tool="tl"), GOOD[:1], set(), 4)
    root = ET.fromstring(junit([ok, bad]))
    cases = root.findall(".//testcase")
    assert [c.get("name") for c in cases] == ["s/t", "srv/tl"]
    assert cases[0].find("failure") is None
    assert cases[1].find("failure").get("message").startswith("the view never sent ui/initialize")
    assert root.find("testsuite").get("failures") == "1"
    text = table([ok, bad])
    assert "srv/tl" in text and "FAIL" in text and "1 passed, 1 failed" in text
