"""Server specs, the catalog's reading of tool metadata, and template validation."""

from __future__ import annotations

import base64
import json

import pytest

from mcp_apps_host.config.servers import load_config_document, merge_specs, parse_config, parse_server_arg
from mcp_apps_host.errors import ConfigError, TemplateError
from mcp_apps_host.servers.templates import parse_template
from mcp_apps_host.values.tools import tool_entry


def load_config(path):
    return parse_config(load_config_document(path), f"--config {path}")

MIME = "text/html;profile=mcp-app"


def test_server_arg_url_and_command():
    http = parse_server_arg("weather=http://127.0.0.1:3001/mcp")
    assert http.transport == "http" and http.url == "http://127.0.0.1:3001/mcp"
    cmd = parse_server_arg("debug=npx -y '@modelcontextprotocol/server-debug' --stdio")
    assert cmd.transport == "stdio" and cmd.command == "npx"
    assert cmd.args == ("-y", "@modelcontextprotocol/server-debug", "--stdio")


@pytest.mark.parametrize("text, needle", [
    ("noequals", "NAME=SPEC"), ("bad name=cmd", "server name"), ("x=", "NAME=SPEC"),
    ("x=echo 'unterminated", "cannot split"), ("x=http://", r"not an http\(s\) URL"),
])
def test_server_arg_errors(text, needle):
    with pytest.raises(ConfigError, match=needle):
        parse_server_arg(text)


def test_config_file_shape(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"mcpServers": {
        "a": {"command": "node", "args": ["s.js"], "env": {"K": "v"}},
        "b": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
    }}))
    a, b = load_config(path)
    assert a.command == "node" and a.args == ("s.js",) and a.env == {"K": "v"}
    assert b.url == "https://example.com/mcp" and b.headers["Authorization"] == "Bearer x"
    assert "Bearer" not in b.describe()


@pytest.mark.parametrize("data, needle", [
    ([], "mcpServers"), ({"mcpServers": {"a": 1}}, "must be an object"),
    ({"mcpServers": {"a": {}}}, "exactly one of"),
    ({"mcpServers": {"a": {"command": "x", "url": "http://h"}}}, "exactly one"),
    ({"mcpServers": {"a": {"command": "x", "args": "y"}}}, "list of strings"),
    ({"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}, "env must be an object of strings"),
])
def test_config_errors(data, needle):
    with pytest.raises(ConfigError, match=needle):
        parse_config(data)


def test_config_file_unreadable_or_not_json(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(ConfigError, match="line 1"):
        load_config(bad)


def test_duplicate_names_are_an_error():
    with pytest.raises(ConfigError, match="more than once"):
        merge_specs([parse_server_arg("a=x")], [parse_server_arg("a=y")])


# ---- catalog ---------------------------------------------------------------------------------


def test_tool_meta_nested_flat_and_visibility():
    nested = tool_entry("s", {"name": "t", "_meta": {"ui": {"resourceUri": "ui://a", "visibility": ["app"]}}})
    assert nested.resource_uri == "ui://a" and nested.app_visible and not nested.model_visible
    flat = tool_entry("s", {"name": "t", "_meta": {"ui/resourceUri": "ui://b"}})
    assert flat.resource_uri == "ui://b" and flat.model_visible and flat.app_visible
    plain = tool_entry("s", {"name": "t"})
    assert plain.resource_uri is None and plain.visibility == {"model", "app"}
    nobody = tool_entry("s", {"name": "t", "_meta": {"ui": {"visibility": []}}})
    assert not nobody.model_visible and not nobody.app_visible


def test_malformed_tool_meta_is_restrictive():
    bad = tool_entry("s", {"name": "t", "_meta": {"ui": {"resourceUri": 5, "visibility": "model"}}})
    assert bad.resource_uri is None and bad.visibility == frozenset() and len(bad.problems) == 2


# ---- templates ---------------------------------------------------------------------------------


def read(item):
    return {"contents": [item]}


def test_template_meta_on_the_content_item_replaces_the_listing_entry_whole():
    listing = {"uri": "ui://a", "_meta": {"ui": {"prefersBorder": False, "domain": "a.example",
                                                 "csp": {"connectDomains": ["https://old.example.com"],
                                                         "resourceDomains": ["https://cdn.example.com"]}}}}
    t = parse_template("s", "ui://a", read({
        "uri": "ui://a", "mimeType": MIME, "text": "<html></html>",
        "_meta": {"ui": {"csp": {"connectDomains": ["https://api.example.com"]}}},
    }), listing, max_bytes=1000)
    assert t.csp.connect_domains == ("https://api.example.com",)  # the content item wins
    # ... as a whole: nothing the item left out is taken from the listing (the spec's "Metadata Location").
    assert t.csp.resource_domains == () and t.prefers_border is None and t.domain is None
    assert len(t.sha256) == 64


def test_template_meta_falls_back_to_the_listing_entry():
    listing = {"uri": "ui://a", "_meta": {"ui": {"prefersBorder": False,
                                                 "csp": {"connectDomains": ["https://old.example.com"]}}}}
    t = parse_template("s", "ui://a", read({"uri": "ui://a", "mimeType": MIME, "text": "<p>x</p>"}), listing,
                       max_bytes=1000)
    assert t.csp.connect_domains == ("https://old.example.com",) and t.prefers_border is False
    # An empty _meta.ui on the item is still the item's word: nothing is widened from the listing.
    t = parse_template("s", "ui://a", read({"uri": "ui://a", "mimeType": MIME, "text": "<p>x</p>",
                                            "_meta": {"ui": {}}}), listing, max_bytes=1000)
    assert t.csp.connect_domains == () and t.prefers_border is None


def test_template_blob():
    html = "<html>é</html>".encode()
    t = parse_template("s", "ui://a", read({"uri": "ui://a", "mimeType": "text/html; profile=mcp-app",
                                           "blob": base64.b64encode(html).decode()}), None, max_bytes=1000)
    assert t.html == "<html>é</html>" and t.size == len(html)


@pytest.mark.parametrize("uri, item, needle", [
    ("https://a", {"mimeType": MIME, "text": "x"}, "must start with ui://"),
    ("ui://a", {"uri": "ui://a", "mimeType": "text/html", "text": "x"}, "mimeType is 'text/html'"),
    ("ui://a", {"uri": "ui://a", "mimeType": MIME}, "neither text nor blob"),
    ("ui://a", {"uri": "ui://a", "mimeType": MIME, "text": "x" * 101}, "max_template_bytes"),
    ("ui://a", {"uri": "ui://a", "mimeType": MIME, "blob": "!!!"}, "base64"),
    ("ui://a", {"uri": "ui://a", "mimeType": MIME, "blob": base64.b64encode(b"\xff\xfe").decode()}, "not UTF-8"),
    ("ui://a", {"uri": "ui://a", "mimeType": MIME, "text": "x",
                "_meta": {"ui": {"csp": {"connectDomains": ["*"]}}}}, "csp"),
])
def test_template_errors_name_the_rule(uri, item, needle):
    with pytest.raises(TemplateError, match=needle) as info:
        parse_template("srv", uri, read(item), None, max_bytes=100)
    assert "srv" in str(info.value)


@pytest.mark.parametrize("code", [-32002, -32602])
def test_both_spellings_of_resource_not_found_read_as_not_found(code):
    import anyio
    from mcp.shared.exceptions import MCPError

    from mcp_apps_host.host.tab.proxied import read_error
    from mcp_apps_host.servers.catalog import read_template
    from mcp_apps_host.settings import Limits

    class Client:
        async def read_resource(self, uri):
            raise MCPError(code, f"Resource not found: {uri}")

    error = anyio.run(lambda: read_template(Client(), "s", "ui://s/gone.html", None, Limits(), lambda t: t, str))
    assert f"no such resource (not found, error {code})" in str(error)
    assert read_error("s", "ui://s/gone.html", MCPError(code, "Resource not found")) == (
        code, f"server 's' has no resource ui://s/gone.html (not found, error {code})")
    # Another invalid-params error is not taken for "not found".
    assert "failed" in read_error("s", "x://y", MCPError(-32602, "uri must be absolute"))[1]
