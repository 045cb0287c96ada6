"""What a server offers: its tools, which of them have a view, and who may call them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

VISIBILITY_DEFAULT = frozenset({"model", "app"})


@dataclass(frozen=True)
class ToolEntry:
    """One tool of one server, with its MCP Apps metadata read once."""

    server: str
    name: str
    definition: dict[str, Any]  # the Tool as the server sent it (camelCase, `_meta`)
    resource_uri: str | None
    visibility: frozenset[str]
    problems: tuple[str, ...] = ()  # metadata that was malformed and ignored

    @property
    def model_visible(self) -> bool:
        return "model" in self.visibility

    @property
    def app_visible(self) -> bool:
        return "app" in self.visibility

    @property
    def input_schema(self) -> dict[str, Any]:
        schema = self.definition.get("inputSchema")
        return schema if isinstance(schema, dict) else {"type": "object"}


def read_tool_ui_meta(meta: Any) -> tuple[str | None, frozenset[str], tuple[str, ...]]:
    """`_meta.ui.resourceUri` (or the deprecated flat `ui/resourceUri`) and `_meta.ui.visibility`.

    Malformed visibility is read as "nobody": a server bug must never widen who
    can call a tool.
    """
    problems: list[str] = []
    if not isinstance(meta, dict):
        return None, VISIBILITY_DEFAULT, ()
    ui = meta.get("ui")
    if ui is not None and not isinstance(ui, dict):
        problems.append(f"_meta.ui is {type(ui).__name__}, not an object; it is ignored")
        ui = {}
    ui = ui if isinstance(ui, dict) else {}
    # OpenAI Apps SDK tools name their template with openai/outputTemplate.
    uri = ui.get("resourceUri", meta.get("ui/resourceUri", meta.get("openai/outputTemplate")))
    if uri is not None and not isinstance(uri, str):
        problems.append(f"resourceUri {uri!r} is not a string; the tool is shown without a view")
        uri = None
    # A string that is not ui:// is kept: its view then fails with an error a person can see.
    visibility = _openai_visibility(meta) if "visibility" not in ui else VISIBILITY_DEFAULT
    if "visibility" in ui:
        raw = ui["visibility"]
        if isinstance(raw, list) and all(v in ("model", "app") for v in raw):
            visibility = frozenset(raw)
        else:
            problems.append(f"visibility {raw!r} is not a list of 'model'/'app'; nobody may call the tool")
            visibility = frozenset()
    return uri, visibility, tuple(problems)


def _openai_visibility(meta: dict[str, Any]) -> frozenset[str]:
    """An OpenAI Apps SDK tool: the model sees it unless `openai/visibility` is "private"; its widget may
    call it only with `openai/widgetAccessible: true`. A tool without openai/ keys keeps the MCP default."""
    if not any(isinstance(k, str) and k.startswith("openai/") for k in meta):
        return VISIBILITY_DEFAULT
    who = set() if meta.get("openai/visibility") == "private" else {"model"}
    if meta.get("openai/widgetAccessible") is True:
        who.add("app")
    return frozenset(who)


def tool_entry(server: str, definition: dict[str, Any]) -> ToolEntry:
    uri, visibility, problems = read_tool_ui_meta(definition.get("_meta"))
    return ToolEntry(
        server=server,
        name=str(definition.get("name", "")),
        definition=definition,
        resource_uri=uri,
        visibility=visibility,
        problems=problems,
    )
