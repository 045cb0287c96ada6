"""Whatever a server lists as a tool's `_meta` or returns from `resources/read`, the catalog and the
template loader never raise anything but a `TemplateError` that names the template, never widen who
may call a tool, and never accept a template over max_template_bytes."""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_apps_host.errors import TemplateError
from mcp_apps_host.servers.templates import parse_template
from mcp_apps_host.values.protocol import APP_MIME_TYPE
from mcp_apps_host.values.tools import tool_entry

MAX = 2048

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=25,
)
ui_meta = st.fixed_dictionaries({}, optional={
    "resourceUri": json_values | st.sampled_from(["ui://s/v.html", "https://x.example/v", ""]),
    "visibility": json_values | st.lists(st.sampled_from(["model", "app", "other", ""]), max_size=3),
    "csp": json_values | st.fixed_dictionaries({}, optional={
        key: json_values | st.lists(st.sampled_from(["https://a.example", "*", "'self'", "javascript:", "x y"]),
                                    max_size=3)
        for key in ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")}),
    "permissions": json_values, "domain": json_values, "prefersBorder": json_values,
})
metas = st.one_of(json_values, st.fixed_dictionaries({}, optional={
    "ui": ui_meta | json_values, "ui/resourceUri": json_values, "openai/outputTemplate": json_values,
    "openai/visibility": json_values, "openai/widgetAccessible": json_values}))


@settings(max_examples=200, deadline=None)
@given(name=json_values, meta=metas)
def test_any_tool_meta_gives_an_entry_that_never_widens_visibility(name: Any, meta: Any) -> None:
    entry = tool_entry("s", {"name": name, "inputSchema": {"type": "object"}, "_meta": meta})
    assert entry.resource_uri is None or isinstance(entry.resource_uri, str)
    assert entry.visibility <= {"model", "app"}
    ui = meta.get("ui") if isinstance(meta, dict) else None
    if isinstance(ui, dict) and "visibility" in ui:
        declared = ui["visibility"]
        valid = isinstance(declared, list) and all(v in ("model", "app") for v in declared)
        assert entry.visibility == (frozenset(declared) if valid else frozenset())
        assert valid or any("visibility" in p for p in entry.problems)


html = st.text(max_size=MAX + 200)
contents_item = st.fixed_dictionaries({}, optional={
    "uri": st.sampled_from(["ui://s/v.html", "ui://s/other.html"]) | json_values,
    "mimeType": st.sampled_from([APP_MIME_TYPE, "text/html", "text/html;profile=mcp-app ", "TEXT/HTML; PROFILE=MCP-APP",
                                 "text/html+skybridge"]) | json_values,
    "text": html | json_values,
    "blob": st.binary(max_size=MAX + 200).map(lambda b: base64.b64encode(b).decode()) | st.text(max_size=60)
    | json_values,
    "_meta": st.fixed_dictionaries({}, optional={"ui": ui_meta | json_values}) | json_values,
})
read_results = st.one_of(json_values, st.fixed_dictionaries(
    {}, optional={"contents": st.lists(contents_item | json_values, max_size=3) | json_values}))


@settings(max_examples=200, deadline=None)
@given(result=read_results, entry=st.none() | st.fixed_dictionaries({}, optional={"_meta": metas}))
def test_any_read_result_is_a_template_or_a_named_error(result: Any, entry: Any) -> None:
    if not isinstance(result, dict):
        result = {"contents": result}
    try:
        template = parse_template("s", "ui://s/v.html", result, entry, MAX)
    except TemplateError as exc:
        assert "template ui://s/v.html of server 's'" in str(exc)
        return
    assert template.html.strip() and len(template.html.encode("utf-8")) <= MAX
    assert len(template.sha256) == 64
