"""App-provided tools: the tools a view offers of its own (MCP Apps draft, "App-Provided Tools").

A view is untrusted, so everything it lists is checked here: a tool that does not look
like an MCP `Tool` is left out with the reason, and what is kept is a copy holding only
the fields the host uses.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# MCP tool names: 1-128 of letters, digits, "_", "-" and ".".
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
MAX_TITLE_CHARS = 200


@dataclass(frozen=True)
class AppTool:
    """One tool a view offers, as the host keeps it."""

    name: str
    title: str | None
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any] = field(default_factory=dict)

    @property
    def read_only(self) -> bool:
        # Hints from an untrusted view: only an explicit true counts, and destructive wins.
        return self.annotations.get("readOnlyHint") is True and self.annotations.get("destructiveHint") is not True

    def definition(self) -> dict[str, Any]:
        """The tool as an MCP `Tool` (what the page and the model are shown)."""
        out: dict[str, Any] = {"name": self.name, "description": self.description, "inputSchema": self.input_schema}
        if self.title:
            out["title"] = self.title
        if self.annotations:
            out["annotations"] = self.annotations
        return out


def parse_app_tool(raw: Any, max_description: int) -> AppTool | str:
    """An `AppTool`, or the reason ``raw`` is not one (for the view's log)."""
    if not isinstance(raw, Mapping):
        return f"a tool must be an object, not {type(raw).__name__}"
    name = raw.get("name")
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        shown = repr(name) if not isinstance(name, str) or len(name) < 60 else repr(name[:57] + "...")
        return f"tool name {shown} is not 1-128 letters, digits, '_', '-' or '.'"
    schema = raw.get("inputSchema", {"type": "object", "properties": {}})
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        return f"tool {name!r}: inputSchema must be a JSON Schema object with type \"object\""
    description = raw.get("description")
    description = description if isinstance(description, str) else ""
    if len(description) > max_description:
        description = description[:max_description] + " [cut at max_app_tool_description_chars]"
    title = raw.get("title")
    annotations = raw.get("annotations")
    return AppTool(
        name=name,
        title=title[:MAX_TITLE_CHARS] if isinstance(title, str) and title.strip() else None,
        description=description,
        input_schema=dict(schema),
        annotations={k: v for k, v in annotations.items() if isinstance(k, str)}
        if isinstance(annotations, Mapping) else {},
    )


def call_result_problem(result: Any) -> str | None:
    """Why ``result`` is not a `CallToolResult`, or None when it is one."""
    if not isinstance(result, Mapping):
        return "the result is not an object"
    content = result.get("content")
    if not isinstance(content, list):
        return '"content" is not an array of content blocks'
    if not all(isinstance(b, Mapping) and isinstance(b.get("type"), str) for b in content):
        return '"content" holds something that is not a content block'
    if "isError" in result and not isinstance(result["isError"], bool):
        return '"isError" is not true or false'
    if "structuredContent" in result and not isinstance(result["structuredContent"], Mapping):
        return '"structuredContent" is not an object'
    return None
