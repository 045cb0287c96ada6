"""A server entry as an admin gives it to the registry (`PUT /api/admin/servers/NAME`).

The body is an `mcpServers` entry, parsed by the same parser as the config file's (so every key a
config entry may have works here), plus the registry's own keys: ``grants`` (who may use it) and
``enabled``. The whole body is what is stored; the spec is built from it again on every worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..errors import ConfigError
from .servers import ServerSpec, parse_config

# Keys of the entry itself: the config file's, and the per-server policy sections read by their own parsers.
ENTRY_KEYS: Final = frozenset({"command", "args", "env", "cwd", "url", "headers", "apps", "watch", "roots", "auth",
                               "tools", "views", "limits", "consent"})
REGISTRY_KEYS: Final = frozenset({"grants", "enabled"})
# What stands for a secret value in what the registry shows (header and env values); sent back unchanged in
# a PUT it keeps the value stored.
REDACTED: Final = "<redacted>"
_SECRET_MAPS: Final = ("headers", "env")


@dataclass(frozen=True)
class RegistryEntry:
    """One server of the registry: its spec, who may use it, whether it runs, and the body as stored."""

    spec: ServerSpec
    grants: tuple[tuple[str, ...], tuple[str, ...]]  # (users, groups); both empty: everyone in the tenant
    enabled: bool
    body: Mapping[str, Any]


def _names(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() and len(v) <= 256 for v in value):
        raise ConfigError(f"{where} must be a list of names (strings of 1-256 characters)")
    return tuple(dict.fromkeys(v.strip() for v in value))


def parse_grants(value: Any, where: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if value is None:
        return (), ()
    if not isinstance(value, dict) or set(value) - {"users", "groups"}:
        raise ConfigError(f'{where} must be an object with only "users" and "groups" (lists of names)')
    return _names(value.get("users", []), f"{where}.users"), _names(value.get("groups", []), f"{where}.groups")


def parse_entry(name: str, body: Any, source: str = "registry") -> RegistryEntry:
    """The registry's entry for ``name``; ConfigError names the key that is wrong."""
    where = f"{source}: {name}"
    if not isinstance(body, dict):
        raise ConfigError(f"{where}: the body must be a JSON object (an mcpServers entry)")
    unknown = sorted(set(body) - ENTRY_KEYS - REGISTRY_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (an entry may have "
                          f"{', '.join(sorted(ENTRY_KEYS | REGISTRY_KEYS))})")
    enabled = body.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{where}.enabled must be true or false, not {enabled!r}")
    grants = parse_grants(body.get("grants"), f"{where}.grants")
    entry = {k: v for k, v in body.items() if k not in REGISTRY_KEYS}
    (spec,) = parse_config({"mcpServers": {name: entry}}, source)
    return RegistryEntry(spec, grants, enabled, dict(body))


def redacted(body: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The body with its header and env values hidden: what the admin API, its page and the audit trail show."""
    if body is None:
        return None
    out = dict(body)
    for key in _SECRET_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = dict.fromkeys(out[key], REDACTED)
    return out


def keep_secrets(body: dict[str, Any], stored: Mapping[str, Any] | None) -> dict[str, Any]:
    """A body sent back with `REDACTED` values keeps the values stored for those names."""
    out = dict(body)
    for key in _SECRET_MAPS:
        given, before = out.get(key), (stored or {}).get(key)
        if isinstance(given, dict):
            old = before if isinstance(before, dict) else {}
            missing = [k for k, v in given.items() if v == REDACTED and k not in old]
            if missing:
                raise ConfigError(f"{key}.{missing[0]}: {REDACTED} stands for a stored value, and none is stored")
            out[key] = {k: old[k] if v == REDACTED else v for k, v in given.items()}
    return out
