from __future__ import annotations

import random

from mcp_apps_host.chat.tools import NAME_PATTERN, ViewTools, build_tool_table, tool_table_from_entries, with_app_tools
from mcp_apps_host.values.apptools import AppTool
from mcp_apps_host.values.tools import tool_entry

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}

TOOLS = [
    ("chart", "show-chart", "Draw a chart", SCHEMA),
    ("chart", "show.chart", "Same name after sanitising", SCHEMA),
    ("forms", "show chart", "Spaces", SCHEMA),
    ("forms", "show_chart", "Already safe", SCHEMA),
    ("a__b", "c", "", SCHEMA),
    ("a", "b__c", "", SCHEMA),
    ("s" * 50, "t" * 50, "long", SCHEMA),
    ("s" * 50, "t" * 49 + "u", "long too, same prefix", SCHEMA),
    ("图表", "显示", "unicode", SCHEMA),
    ("表格", "显示", "unicode, same length", SCHEMA),
    ("table", "query", "", SCHEMA),
]


def mapping(tools: list[tuple[str, str, str, dict]]) -> dict[tuple[str, str], str]:
    return {(t.server, t.name): t.model_name for t in build_tool_table(tools)}


def test_plain_names_are_readable() -> None:
    names = mapping(TOOLS)
    assert names[("chart", "show-chart")] == "chart__show-chart"
    assert names[("table", "query")] == "table__query"
    # The one that needed no sanitising keeps the plain form; the sanitised one gets a hash.
    assert names[("forms", "show_chart")] == "forms__show_chart"
    assert names[("forms", "show chart")].startswith("forms__show_chart_")
    assert names[("chart", "show.chart")].startswith("chart__show_chart")


def test_names_are_unique_and_valid() -> None:
    names = mapping(TOOLS)
    assert len(set(names.values())) == len(TOOLS)
    for name in names.values():
        assert NAME_PATTERN.match(name), name
        assert len(name) <= 64


def test_names_do_not_depend_on_order_or_on_unrelated_tools() -> None:
    first = mapping(TOOLS)
    assert mapping(TOOLS) == first
    shuffled = TOOLS[:]
    random.Random(3).shuffle(shuffled)
    assert mapping(shuffled) == first
    more = mapping([*TOOLS, ("weather", "forecast", "", SCHEMA)])
    assert {k: v for k, v in more.items() if k != ("weather", "forecast")} == first


def test_resolve_round_trips() -> None:
    table = build_tool_table(TOOLS)
    for server, name, _, _ in TOOLS:
        model_name = table.model_name(server, name)
        assert model_name is not None
        assert table.resolve(model_name) == (server, name)
    assert table.resolve("nope__nothing") is None
    assert table.model_name("chart", "missing") is None


def test_provider_formats() -> None:
    table = build_tool_table(
        [("chart", "show-chart", "Draw", SCHEMA), ("x", "no-schema", "", {"properties": {}})]
    )
    assert table.openai_tools() == [
        {
            "type": "function",
            "function": {"name": "chart__show-chart", "description": "Draw", "parameters": SCHEMA},
        },
        {
            "type": "function",
            "function": {
                "name": "x__no-schema",
                "description": "",
                "parameters": {"type": "object", "properties": {}},
            },
        },
    ]
    assert table.anthropic_tools()[0] == {
        "name": "chart__show-chart",
        "description": "Draw",
        "input_schema": SCHEMA,
    }
    assert len(table) == 2 and "x__no-schema" in table


def test_repeated_tool_is_kept_once() -> None:
    table = build_tool_table([("a", "t", "first", SCHEMA), ("a", "t", "second", SCHEMA)])
    assert [(t.model_name, t.description) for t in table] == [("a__t", "first")]


def test_only_model_visible_tools_are_offered() -> None:
    entries = [
        tool_entry("chart", {"name": "show", "inputSchema": SCHEMA}),
        tool_entry(
            "chart", {"name": "refresh", "inputSchema": SCHEMA, "_meta": {"ui": {"visibility": ["app"]}}}
        ),
        tool_entry("chart", {"name": "both", "_meta": {"ui": {"visibility": ["model", "app"]}}}),
        tool_entry("chart", {"name": "broken", "_meta": {"ui": {"visibility": "model"}}}),
    ]
    table = tool_table_from_entries(entries)
    assert table.names() == ["chart__show", "chart__both"]
    assert table.get("chart__both").input_schema == {"type": "object"}


# ---- tools a view offers of its own ---------------------------------------------------------------


def app_tool(name: str, description: str = "", schema: dict | None = None) -> AppTool:
    return AppTool(name, None, description, schema if schema is not None else {"type": "object"})


def test_app_tools_say_whose_they_are_and_keep_their_own_name() -> None:
    servers = build_tool_table([("budget", "get-budget-data", "", SCHEMA)])
    table = with_app_tools(servers, [ViewTools("h1", "budget", "view3", (app_tool("get-allocations", "Reads"),))])
    tool = table.get("budget_view3__get-allocations")
    assert tool is not None and tool.view == "h1" and (tool.server, tool.name) == ("budget", "get-allocations")
    assert table.resolve("budget_view3__get-allocations") == ("budget", "get-allocations")
    assert "view3" in tool.description and tool.description.endswith("Reads")
    assert table.get("budget__get-budget-data").view is None


def test_an_app_tool_never_takes_a_server_tools_name() -> None:
    # A server named so that its tool reads exactly like the view's tool keeps that name.
    servers = build_tool_table([("budget_view3", "get", "", SCHEMA), ("budget", "get", "", SCHEMA)])
    table = with_app_tools(servers, [ViewTools("h1", "budget", "view3", (app_tool("get"), app_tool("get")))])
    assert table.get("budget_view3__get").view is None
    app = [t for t in table if t.view == "h1"]
    assert len(app) == 2 and all(t.model_name.startswith("budget_view3__get_") for t in app)
    assert len(set(table.names())) == len(table) == 4


def test_app_tool_names_are_valid_even_when_long_or_odd() -> None:
    views = [ViewTools("h2", "图表" * 20, "view12", (app_tool("x" * 128), app_tool("a.b c"))),
             ViewTools("h3", "s", "view1", (app_tool("t", schema={"type": "array"}),))]
    table = with_app_tools(build_tool_table([]), views)
    assert all(NAME_PATTERN.match(n) for n in table.names()) and len(table) == 3
    assert table.get("s_view1__t").input_schema == {"type": "object", "properties": {}}
