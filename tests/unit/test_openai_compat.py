"""OpenAI Apps SDK widgets: their metadata read as MCP Apps metadata, the shim placed first, the state kept."""

from __future__ import annotations

import pytest

from mcp_apps_host.errors import TemplateError
from mcp_apps_host.host.process.compat import view_html
from mcp_apps_host.servers.templates import parse_template
from mcp_apps_host.settings import Limits
from mcp_apps_host.values.tools import tool_entry
from mcp_apps_host.views.context import HostEnvironment, ViewSpec, host_context

URI = "ui://widget/list.html"


def read(mime: str, meta: dict | None = None, html: str = "<html><head></head><body>w</body></html>") -> dict:
    item = {"uri": URI, "mimeType": mime, "text": html}
    if meta is not None:
        item["_meta"] = meta
    return {"contents": [item]}


def test_a_skybridge_template_is_accepted_with_its_widget_csp_border_and_domain():
    meta = {"openai/widgetCSP": {"connect_domains": ["https://api.example.com"],
                                 "resource_domains": ["https://cdn.example.com"]},
            "openai/widgetPrefersBorder": True, "openai/widgetDomain": "https://w.example.com"}
    template = parse_template("s", URI, read("text/html+skybridge", meta), None, 10_000)
    assert template.compat == "openai"
    assert template.csp.to_json() == {"connectDomains": ["https://api.example.com"],
                                      "resourceDomains": ["https://cdn.example.com"]}
    assert template.prefers_border is True and template.domain == "https://w.example.com"
    # An MCP Apps template never becomes a widget, and another mime is still refused by name.
    assert parse_template("s", URI, read("text/html;profile=mcp-app", meta), None, 10_000).compat is None
    with pytest.raises(TemplateError, match="text/html\\+skybridge"):
        parse_template("s", URI, read("text/html"), None, 10_000)


def test_a_bad_widget_csp_is_refused_with_its_name():
    with pytest.raises(TemplateError, match=r"_meta\.ui\.csp"):
        parse_template("s", URI, read("text/html+skybridge", {"openai/widgetCSP": {"connect_domains": "x"}}),
                       None, 10_000)


@pytest.mark.parametrize("meta, visibility", [
    ({"openai/outputTemplate": URI}, {"model"}),
    ({"openai/outputTemplate": URI, "openai/widgetAccessible": True}, {"model", "app"}),
    ({"openai/widgetAccessible": True, "openai/visibility": "private"}, {"app"}),
    ({"openai/outputTemplate": URI, "ui": {"visibility": ["app"]}}, {"app"}),  # MCP Apps metadata wins
    ({}, {"model", "app"}),
])
def test_openai_tool_metadata_names_the_template_and_who_may_call(meta, visibility):
    entry = tool_entry("s", {"name": "t", "_meta": meta})
    assert entry.visibility == frozenset(visibility)
    if "openai/outputTemplate" in meta:
        assert entry.resource_uri == URI


def test_the_shim_goes_first_in_a_widget_and_nowhere_else():
    widget = parse_template("s", URI, read("text/html+skybridge", html="<!doctype html><HTML><Head x=1>"
                                           "<script>window.mine=1</script></Head></HTML>"), None, 10_000)
    html = view_html(widget)
    assert html.index("window.openai") < html.index("window.mine")
    assert html.startswith("<!doctype html><HTML><Head x=1><script>")
    plain = parse_template("s", URI, read("text/html;profile=mcp-app"), None, 10_000)
    # A plain view gets the guard (no WebRTC) first, and no shim.
    assert "window.openai" not in view_html(plain) and "RTCPeerConnection" in view_html(plain)
    bare = parse_template("s", URI, read("text/html+skybridge", html="<div>no head</div>"), None, 10_000)
    assert view_html(bare).endswith("<div>no head</div>") and "window.openai" in view_html(bare)


def test_the_view_guard_goes_first_and_keeps_the_doctype_first():
    for html in ("<!doctype html><p>x</p><script>window.mine=1</script>", "<p>x</p><script>window.mine=1</script>",
                 "<!DOCTYPE html><html><head><script>window.mine=1</script></head></html>"):
        out = view_html(parse_template("s", URI, read("text/html;profile=mcp-app", html=html), None, 10_000))
        assert out.index("RTCPeerConnection") < out.index("window.mine")
        assert out.lower().startswith("<!doctype html>") == html.lower().startswith("<!doctype html>")
        assert out.replace(out[out.index("<script>"):out.index("</script>") + 9], "", 1) == html


def test_the_widget_state_is_in_the_host_context_of_a_widget_only():
    spec = ViewSpec(server="s", tool=tool_entry("s", {"name": "t"}), html="", call_id=1, csp={}, permissions={},
                    allow="", app_tools=frozenset(), all_tools=frozenset(), compat="openai",
                    widget_state={"favorite": "x"})
    assert host_context(spec, HostEnvironment(), Limits(), "inline")["openai/widgetState"] == {"favorite": "x"}
    plain = ViewSpec(**{**spec.__dict__, "compat": None})
    assert "openai/widgetState" not in host_context(plain, HostEnvironment(), Limits(), "inline")
