"""The tools a model may call: unique, readable names across servers and views, and each provider's
tool format.

A server's tool is `server__tool`. A tool a view offers of its own (an app-provided tool) is
`server_viewN__tool`, N being the view's call: the name says whose it is and keeps the tool's
own name readable. Server tools keep their names; an app tool that would take one gets a hash.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..values.apptools import AppTool
    from ..values.tools import ToolEntry

NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_NAME = 64
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
SEPARATOR = "__"


@dataclass(frozen=True, slots=True)
class ModelTool:
    model_name: str
    server: str
    name: str  # the tool's MCP name on its server
    description: str
    input_schema: dict[str, Any]
    view: str | None = None  # the view offering this tool (an app-provided tool); None for a server's tool
    view_label: str | None = None  # how that view is named to the model and the person ("view7")


def _hash(server: str, tool: str, length: int) -> str:
    return hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:length]


def base_model_name(server: str, tool: str) -> str:
    """`server__tool` with anything a provider refuses replaced by `_` (may still be too long)."""
    return f"{_UNSAFE.sub('_', server) or '_'}{SEPARATOR}{_UNSAFE.sub('_', tool) or '_'}"


def _hashed_name(server: str, tool: str, length: int = 8) -> str:
    return f"{base_model_name(server, tool)[: MAX_NAME - length - 1]}_{_hash(server, tool, length)}"


def _object_schema(schema: Any) -> dict[str, Any]:
    # Providers insist on an object schema at the top; MCP requires one too, but servers slip.
    if isinstance(schema, dict) and schema.get("type") == "object":
        return schema
    return {"type": "object", "properties": {}}


class ToolTable:
    """Model-facing name ↔ (server, tool). Built once per turn from the model-visible tools."""

    def __init__(self, tools: Iterable[ModelTool] = (), withheld: frozenset[tuple[str, str]] = frozenset()) -> None:
        # (server, tool) pairs not offered to the model (a server's tool rules refuse them), yet known by
        # name, so a call the model makes anyway is refused with the rule rather than "no such tool".
        self.withheld = withheld
        self._tools: dict[str, ModelTool] = {}
        self._by_origin: dict[tuple[str, str, str | None], ModelTool] = {}
        for tool in tools:
            if tool.model_name in self._tools:
                raise ValueError(f"duplicate model tool name {tool.model_name!r}")
            self._tools[tool.model_name] = tool
            self._by_origin[(tool.server, tool.name, tool.view)] = tool

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[ModelTool]:
        return iter(self._tools.values())

    def __contains__(self, model_name: object) -> bool:
        return model_name in self._tools

    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, model_name: str) -> ModelTool | None:
        return self._tools.get(model_name)

    def resolve(self, model_name: str) -> tuple[str, str] | None:
        """(server, MCP tool name) for a name the model used, or None if no such tool is offered."""
        tool = self._tools.get(model_name)
        return (tool.server, tool.name) if tool else None

    def model_name(self, server: str, tool: str, view: str | None = None) -> str | None:
        entry = self._by_origin.get((server, tool, view))
        return entry.model_name if entry else None

    def withholding(self, pairs: frozenset[tuple[str, str]]) -> ToolTable:
        """The same tools, with ``pairs`` no longer offered to the model."""
        return ToolTable(self, self.withheld | pairs)

    def offered(self) -> list[ModelTool]:
        return [t for t in self if (t.server, t.name) not in self.withheld or t.view is not None]

    def openai_tools(self) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": {
                    "name": t.model_name,
                    "description": t.description,
                    "parameters": t.input_schema,
                },
            }
            for t in self.offered()
        ]

    def anthropic_tools(self) -> list[dict[str, Any]]:
        return [
            {"name": t.model_name, "description": t.description, "input_schema": t.input_schema}
            for t in self.offered()
        ]


def build_tool_table(tools: Iterable[tuple[str, str, str, dict[str, Any]]]) -> ToolTable:
    """Give each (server, name, description, input_schema) a unique model-facing name.

    The name is `server__tool` when that is already safe, short enough and unique. Otherwise a
    hash of the exact (server, tool) pair is appended, so the name depends only on that pair and
    on which other tools collide with it, never on the order tools are listed in. When a safe name
    collides with names that had to be sanitised, the safe one keeps the plain form.
    A repeated (server, tool) pair is kept once.
    """
    entries: list[tuple[str, str, str, dict[str, Any]]] = []
    seen: set[tuple[str, str]] = set()
    for server, name, description, schema in tools:
        if (server, name) not in seen:
            seen.add((server, name))
            entries.append((server, name, description or "", _object_schema(schema)))

    groups: dict[str, list[tuple[str, str]]] = {}
    for server, name, _, _ in entries:
        groups.setdefault(base_model_name(server, name), []).append((server, name))

    chosen: dict[tuple[str, str], str] = {}
    for base, members in groups.items():
        exact = [m for m in members if f"{m[0]}{SEPARATOR}{m[1]}" == base]
        for server, name in members:
            plain_ok = len(base) <= MAX_NAME and (len(members) == 1 or exact == [(server, name)])
            chosen[(server, name)] = base if plain_ok else _hashed_name(server, name)

    # A hashed name could in theory equal another tool's plain name; lengthen the hash until unique.
    length = 8
    while len(set(chosen.values())) < len(chosen) and length < 32:
        length *= 2
        counts: dict[str, int] = {}
        for value in chosen.values():
            counts[value] = counts.get(value, 0) + 1
        for key, value in chosen.items():
            if counts[value] > 1:
                chosen[key] = _hashed_name(*key, length=length)
    if len(set(chosen.values())) < len(chosen):
        raise ValueError("could not give every tool a unique model-facing name")

    return ToolTable(ModelTool(chosen[(s, n)], s, n, d, sch) for s, n, d, sch in entries)


def tool_table_from_entries(entries: Iterable[ToolEntry]) -> ToolTable:
    """The model's tools from the servers' catalogues: only tools whose visibility includes "model"."""
    return build_tool_table(
        (e.server, e.name, str(e.definition.get("description") or ""), e.input_schema)
        for e in entries
        if e.model_visible
    )


@dataclass(frozen=True, slots=True)
class ViewTools:
    """The tools one view offers, for the model's table."""

    view: str  # the view's handle
    server: str
    label: str  # how the name says which view: "view7" for the view of call 7
    tools: tuple[AppTool, ...]


def app_tool_name(server: str, label: str, tool: str) -> str:
    """`server_viewN__tool`, with anything a provider refuses replaced by `_` (may still be too long)."""
    return f"{_UNSAFE.sub('_', server) or '_'}_{_UNSAFE.sub('_', label)}{SEPARATOR}{_UNSAFE.sub('_', tool) or '_'}"


def with_app_tools(table: ToolTable, views: Iterable[ViewTools]) -> ToolTable:
    """``table`` plus the tools the views offer. A server tool keeps its name; an app tool whose name
    is taken or too long gets a hash of (view, tool) instead, so it can never stand in for another tool."""
    taken = set(table.names())
    added: list[ModelTool] = []
    for group in views:
        for tool in group.tools:
            plain = name = app_tool_name(group.server, group.label, tool.name)
            attempt = 0
            while len(name) > MAX_NAME or name in taken:
                digest = hashlib.sha256(f"{group.view}\0{tool.name}\0{attempt}".encode()).hexdigest()[:8]
                name = f"{plain[: MAX_NAME - 9]}_{digest}"
                attempt += 1
            taken.add(name)
            origin = f"[An app tool: offered by the {group.server} view {group.label} (tool {tool.name!r}), run " \
                     "inside that view and gone when it closes; its description comes from the view.]"
            added.append(ModelTool(name, group.server, tool.name, f"{origin} {tool.description}".strip(),
                                   _object_schema(tool.input_schema), view=group.view, view_label=group.label))
    return ToolTable([*table, *added], table.withheld)
