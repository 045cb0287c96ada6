"""The keys of a server's entry an admin governs it with: ``tools``, ``views``, ``limits``, ``consent``,
and the person templates its ``headers`` may hold. Each error names the key path and the bad value."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from ..errors import ConfigError
from .policies import ANY_TOOL, DECISION_VALUES, Decision
from .serverpolicy import (
    LIMIT_KEYS,
    TOOL_MODES,
    VIEW_ACTIONS,
    VIEW_RULES,
    LimitOverrides,
    ToolRules,
    ViewRules,
)

# What a header template may say of the person calling: `{user}`, `{tenant}`, `{groups}`.
HEADER_FIELDS: Final = ("user", "tenant", "groups")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


def _names(value: Any, where: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
        raise ConfigError(f"{where}: expected a list of tool names, not {value!r}")
    return frozenset(value)


def parse_tools(value: Any, where: str) -> ToolRules:
    if value is None:
        return ToolRules()
    if not isinstance(value, Mapping) or set(value) - {"mode", "allow", "deny"}:
        raise ConfigError(f'{where}: expected an object with "mode", "allow" and "deny", not {value!r}')
    mode = value.get("mode", "all")
    if mode not in TOOL_MODES:
        raise ConfigError(f"{where}.mode: expected all, read-only or only, not {mode!r}")
    allow, deny = _names(value.get("allow"), f"{where}.allow"), _names(value.get("deny"), f"{where}.deny")
    if allow and mode != "only":
        raise ConfigError(f'{where}.allow: only used with "mode": "only" (mode is {mode})')
    return ToolRules(mode, allow, deny)


def parse_views(value: Any, where: str) -> ViewRules:
    if value is None:
        return ViewRules()
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected an object of {', '.join(VIEW_ACTIONS)}, not {value!r}")
    rules = []
    for action, rule in value.items():
        if action not in VIEW_ACTIONS:
            raise ConfigError(f"{where}.{action}: unknown; expected one of {', '.join(VIEW_ACTIONS)}")
        if rule not in VIEW_RULES:
            raise ConfigError(f"{where}.{action}: expected allow, ask or deny, not {rule!r}")
        rules.append((action, rule))
    return ViewRules(tuple(rules))


def parse_limits(value: Any, where: str) -> LimitOverrides:
    if value is None:
        return LimitOverrides()
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected an object of {', '.join(LIMIT_KEYS)}, not {value!r}")
    out = []
    for key, number in value.items():
        if key not in LIMIT_KEYS:
            raise ConfigError(f"{where}.{key}: unknown; expected one of {', '.join(LIMIT_KEYS)}")
        name, low, high = LIMIT_KEYS[key]
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not low <= number <= high:
            raise ConfigError(f"{where}.{key}: expected a number from {low:g} to {high:g}, not {number!r}")
        out.append((name, int(number) if name == "max_template_bytes" else float(number)))
    return LimitOverrides(tuple(out))


def parse_consent(value: Any, where: str) -> dict[str, Decision]:
    """The config file's per-server consent rules (``{"TOOL": "allow"|"ask"|"deny", "*": ...}``), in the entry."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected an object of tool names (or {ANY_TOOL!r}) to allow, ask or deny")
    for tool, decision in value.items():
        if not isinstance(tool, str) or not tool or decision not in DECISION_VALUES:
            raise ConfigError(f"{where}.{tool}: expected allow, ask or deny, not {decision!r}")
    return dict(value)


def check_header_values(headers: Mapping[str, str], where: str) -> bool:
    """Whether any value is a template naming the person; ConfigError for a value a request could not carry
    safely (CR, LF or other control characters) or a placeholder other than {user}, {tenant}, {groups}."""
    personal = False
    for name, value in headers.items():
        if not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name):
            raise ConfigError(f"{where}: {name!r} is not a header name")
        if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
            raise ConfigError(f"{where}.{name}: control characters (CR, LF, ...) are not allowed in a header value")
        for placeholder in _PLACEHOLDER.findall(value):
            if placeholder not in HEADER_FIELDS:
                raise ConfigError(f"{where}.{name}: {{{placeholder}}} is unknown; a header template may use "
                                  "{user}, {tenant} and {groups}")
            personal = True
    return personal


def entry_policy(entry: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The ServerSpec fields of an entry's governing keys."""
    return {"tools": parse_tools(entry.get("tools"), f"{where}.tools"),
            "views": parse_views(entry.get("views"), f"{where}.views"),
            "limits": parse_limits(entry.get("limits"), f"{where}.limits"),
            "consent": parse_consent(entry.get("consent"), f"{where}.consent")}


def uses_person(headers: Mapping[str, str]) -> bool:
    """Whether a header template names the person (each person then gets a connection of their own)."""
    return any(_PLACEHOLDER.search(v) for v in headers.values())


def without_person(headers: Mapping[str, str]) -> dict[str, str]:
    """The headers a connection made for nobody in particular sends: templates naming the person left out."""
    return {k: v for k, v in headers.items() if not _PLACEHOLDER.search(v)}


def person_headers(headers: Mapping[str, str], user: str, tenant: str, groups: tuple[str, ...]) -> dict[str, str]:
    """The headers with the person's {user}, {tenant} and {groups} (comma-separated) filled in.
    ConfigError when a value would carry a control character (a header must not be split by its value)."""
    fields = {"user": user, "tenant": tenant, "groups": ",".join(groups)}
    out = {}
    for name, value in headers.items():
        filled = _PLACEHOLDER.sub(lambda m: fields.get(m.group(1), m.group(0)), value)
        if any(ord(c) < 0x20 or ord(c) == 0x7F for c in filled):
            raise ConfigError(f"headers.{name}: the person's values would put a control character in the header")
        out[name] = filled
    return out
