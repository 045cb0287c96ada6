"""`elicitation/create` in form mode: the restricted schema a server may ask with, and whether what
the person entered fits it.

The schema is MCP's restricted subset of JSON Schema: one flat object whose properties are
strings (optionally with a format, or an enum), numbers, integers, booleans, or arrays of
enum values (multi-select). The page draws the form; the host checks the values again
here before the server sees them, because the page is only a renderer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

PRIMITIVE_TYPES = ("string", "number", "integer", "boolean")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:\S+$")


def _choices(prop: Mapping[str, Any]) -> list[Any] | None:
    """The allowed values of an enum property (`enum`, or titled `oneOf`/`anyOf` consts)."""
    if isinstance(prop.get("enum"), list):
        return list(prop["enum"])
    for key in ("oneOf", "anyOf"):
        options = prop.get(key)
        if isinstance(options, list) and options and all(isinstance(o, Mapping) and "const" in o for o in options):
            return [o["const"] for o in options]
    return None


def schema_problem(schema: Any, max_fields: int) -> str | None:
    """Why ``schema`` is not a form the host can show, or None."""
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        return 'requestedSchema must be an object schema ("type": "object")'
    props = schema.get("properties", {})
    if not isinstance(props, Mapping):
        return "requestedSchema.properties must be an object"
    if len(props) > max_fields:
        return f"requestedSchema has {len(props)} fields, more than max_elicitation_fields ({max_fields})"
    for name, prop in props.items():
        if not isinstance(prop, Mapping):
            return f"requestedSchema.properties.{name} is not an object"
        kind = prop.get("type")
        if kind == "array":
            items = prop.get("items")
            if not isinstance(items, Mapping) or _choices(items) is None:
                return f"requestedSchema.properties.{name}: an array must list its choices (items.enum or anyOf)"
        elif kind not in PRIMITIVE_TYPES:
            return f"requestedSchema.properties.{name}: type {kind!r} is not one of string, number, integer, " \
                   "boolean or an array of choices (no nesting)"
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) and r in props for r in required):
        return "requestedSchema.required must list names of its properties"
    return None


def _value_problem(name: str, prop: Mapping[str, Any], value: Any) -> str | None:
    kind = prop.get("type")
    choices = _choices(prop)
    if kind == "array":
        allowed = _choices(prop["items"]) or []
        if not isinstance(value, list) or not all(v in allowed for v in value):
            return f"{name}: choose from {allowed}"
        low, high = prop.get("minItems"), prop.get("maxItems")
        if (isinstance(low, int) and len(value) < low) or (isinstance(high, int) and len(value) > high):
            return f"{name}: choose between {low or 0} and {high if high is not None else len(allowed)} items"
        return None
    if choices is not None and value not in choices:
        return f"{name}: must be one of {choices}"
    if kind == "boolean":
        return None if isinstance(value, bool) else f"{name}: must be true or false"
    if kind in ("number", "integer"):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind == "integer" and
                                                                               not float(value).is_integer()):
            return f"{name}: must be {'a whole number' if kind == 'integer' else 'a number'}"
        low, high = prop.get("minimum"), prop.get("maximum")
        if (isinstance(low, (int, float)) and value < low) or (isinstance(high, (int, float)) and value > high):
            return f"{name}: must be between {low} and {high}"
        return None
    if not isinstance(value, str):
        return f"{name}: must be text"
    return _string_problem(name, prop, value)


def _string_problem(name: str, prop: Mapping[str, Any], value: str) -> str | None:
    low, high = prop.get("minLength"), prop.get("maxLength")
    if isinstance(low, int) and len(value) < low:
        return f"{name}: at least {low} characters"
    if isinstance(high, int) and len(value) > high:
        return f"{name}: at most {high} characters"
    fmt = prop.get("format")
    if fmt == "email" and not _EMAIL.match(value):
        return f"{name}: not an email address"
    if fmt == "uri" and not _URI.match(value):
        return f"{name}: not a URI"
    try:
        if fmt == "date":
            date.fromisoformat(value)
        elif fmt == "date-time":
            datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return f"{name}: not a {fmt} (ISO 8601)"
    return None


def content_problem(schema: Mapping[str, Any], content: Any) -> str | None:
    """Why ``content`` (the person's values) does not fit ``schema``, or None."""
    if not isinstance(content, Mapping):
        return "the values must be an object"
    props: Mapping[str, Any] = schema.get("properties") or {}
    unknown = sorted(set(content) - set(props))
    if unknown:
        return f"not asked for: {', '.join(map(str, unknown))}"
    missing = [r for r in schema.get("required") or [] if r not in content]
    if missing:
        return f"required: {', '.join(missing)}"
    for name, value in content.items():
        problem = _value_problem(name, props[name], value)
        if problem:
            return problem
    return None
