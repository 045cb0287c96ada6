from __future__ import annotations

import random

from mcp_apps_host.chat.tools import NAME_PATTERN, build_tool_table, tool_table_from_entries
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
