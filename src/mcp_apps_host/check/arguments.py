"""The arguments `check` calls a tool with: `--args SERVER/TOOL=JSON`, else what its input schema suggests."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigError

MAX_DEPTH = 4  # nested required objects are filled this deep, no deeper


def parse_args_flags(values: Sequence[str]) -> dict[tuple[str, str], dict[str, Any]]:
    """`SERVER/TOOL=JSON` flags by (server, tool); :class:`ConfigError` names the flag that is wrong."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for text in values:
        where = f"--args {text!r}"
        target, sep, raw = text.partition("=")
        server, slash, tool = target.partition("/")
        if not sep or not slash or not server.strip() or not tool.strip():
            raise ConfigError(f'{where}: expected SERVER/TOOL=JSON, e.g. pdf/display_pdf=\'{{"url": "…"}}\'')
        try:
            arguments = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(arguments, dict):
            raise ConfigError(f"{where}: the arguments must be a JSON object")
        key = (server.strip(), tool.strip())
        if key in out:
            raise ConfigError(f"{where}: arguments for {key[0]}/{key[1]} are given more than once")
        out[key] = arguments
    return out


def example_arguments(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments a tool can be called with: the schema's own example, else each property's default or
    example, and a plain value of the right type for a required property that has neither."""
    examples = schema.get("examples")
    if isinstance(examples, list) and examples and isinstance(examples[0], dict):
        return dict(examples[0])
    value = _object(schema, 0)
    return value if isinstance(value, dict) else {}


def _object(schema: Mapping[str, Any], depth: int) -> dict[str, Any]:
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    required = schema.get("required")
    required = {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
    out: dict[str, Any] = {}
    for name, prop in props.items():
        if not isinstance(prop, dict):
            continue
        found, value = _suggested(prop)
        if found:
            out[name] = value
        elif name in required:
            out[name] = _placeholder(prop, depth)
    return out


_MISSING = object()


def _suggested(prop: Mapping[str, Any]) -> tuple[bool, Any]:
    for key in ("default", "const"):
        if key in prop:
            return True, prop[key]
    for key in ("examples", "enum"):
        values = prop.get(key)
        if isinstance(values, list) and values:
            return True, values[0]
    if "example" in prop:
        return True, prop["example"]
    return False, _MISSING


def _placeholder(prop: Mapping[str, Any], depth: int) -> Any:
    kind = prop.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None:
        options = prop.get("anyOf") or prop.get("oneOf")
        if isinstance(options, list) and options and isinstance(options[0], dict):
            found, value = _suggested(options[0])
            return value if found else _placeholder(options[0], depth)
    if kind == "string":
        return "https://example.com/" if prop.get("format") in ("uri", "url") else "example"
    if kind in ("integer", "number"):
        minimum = prop.get("minimum", prop.get("exclusiveMinimum", 0))
        value = minimum if isinstance(minimum, (int, float)) and not isinstance(minimum, bool) else 0
        return value + 1 if "exclusiveMinimum" in prop and "minimum" not in prop else value
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    if kind == "object" and depth < MAX_DEPTH:
        return _object(prop, depth + 1)
    return None
