"""The host's own sections of the config file: model, consent, sampling and trust.

Each parser takes the whole parsed document and returns plain values; a wrong entry
raises :class:`~mcp_apps_host.errors.ConfigError` (or its ``ConsentConfigError``)
naming the key path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from ..errors import ConfigError, ConsentConfigError

Decision = Literal["allow", "ask", "deny"]
DECISION_VALUES: Final[tuple[str, ...]] = get_args(Decision)
ANY_TOOL: Final = "*"
Rules = dict[str, dict[str, Decision]]

DEFAULT_MAX_STEPS: Final = 8
DEFAULT_MAX_PER_MINUTE: Final = 5
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _section(data: object, key: str) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise ConsentConfigError(f"the config must be an object, not {type(data).__name__}")
    section = data.get(key)
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise ConsentConfigError(f"{key}: must be an object of server names, not {type(section).__name__}")
    return dict(section)


def check_name(path: str, name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ConsentConfigError(f"{path}: {name!r} is not a name")
    return name


# ---- consent -------------------------------------------------------------------------------------


def parse_consent_config(data: object) -> Rules:
    """Read the ``consent`` section of a parsed config file (the whole document is passed).

    ``{"consent": {"SERVER": {"TOOL": "allow"|"ask"|"deny", "*": "ask"}}}``; a missing
    section means no rules.
    """
    rules: Rules = {}
    for server, tools in _section(data, "consent").items():
        check_name("consent", server)
        where = f"consent.{server}"
        if not isinstance(tools, Mapping):
            raise ConsentConfigError(
                f"{where}: must be an object of tool names to allow/ask/deny, not {type(tools).__name__}"
            )
        per_server: dict[str, Decision] = {}
        for tool, value in tools.items():
            check_name(where, tool)
            if value not in DECISION_VALUES:
                raise ConsentConfigError(
                    f"{where}.{tool}: {value!r} is not one of {', '.join(repr(v) for v in DECISION_VALUES)}"
                )
            per_server[tool] = value
        rules[server] = per_server
    return rules


# ---- sampling ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SamplingSettings:
    enabled: bool = False
    max_per_minute: int = DEFAULT_MAX_PER_MINUTE


def parse_sampling_config(data: object) -> dict[str, SamplingSettings]:
    """Read ``{"sampling": {"SERVER": {"enabled": true, "maxPerMinute": 5}}}`` (whole document passed)."""
    out: dict[str, SamplingSettings] = {}
    for server, entry in _section(data, "sampling").items():
        check_name("sampling", server)
        where = f"sampling.{server}"
        if not isinstance(entry, Mapping):
            raise ConsentConfigError(
                f'{where}: must be an object like {{"enabled": true, "maxPerMinute": 5}}'
            )
        unknown = set(entry) - {"enabled", "maxPerMinute"}
        if unknown:
            raise ConsentConfigError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
        enabled = entry.get("enabled", False)
        if not isinstance(enabled, bool):
            raise ConsentConfigError(f"{where}.enabled: must be true or false, not {enabled!r}")
        rate = entry.get("maxPerMinute", DEFAULT_MAX_PER_MINUTE)
        if isinstance(rate, bool) or not isinstance(rate, int) or not 1 <= rate <= 10_000:
            raise ConsentConfigError(
                f"{where}.maxPerMinute: must be a whole number from 1 to 10000, not {rate!r}"
            )
        out[server] = SamplingSettings(enabled=enabled, max_per_minute=rate)
    return out


# ---- trust ---------------------------------------------------------------------------------------


def sha256_set(name: str, values: object) -> frozenset[str]:
    """Hex SHA-256 strings, lower-cased; anything else is an error naming ``name``."""
    if isinstance(values, str) or not isinstance(values, (list, tuple, set, frozenset)):
        raise ConfigError(f"{name}: must be a list of hex SHA-256 strings")
    out = set()
    for value in values:
        text = value.strip().lower() if isinstance(value, str) else value
        if not isinstance(text, str) or not _SHA256.fullmatch(text):
            raise ConfigError(f"{name}: {value!r} is not a hex SHA-256")
        out.add(text)
    return frozenset(out)


@dataclass(frozen=True)
class TrustLists:
    """Template hashes and servers allowed or blocked outright (block wins)."""

    allow_hashes: frozenset[str] = frozenset()
    block_hashes: frozenset[str] = frozenset()
    allow_servers: frozenset[str] = frozenset()
    block_servers: frozenset[str] = frozenset()


def parse_trust_config(data: Mapping[str, Any]) -> TrustLists:
    """Read ``{"trust": {"allowHashes": [], "blockHashes": [], "allowServers": [], "blockServers": []}}``."""
    trust = data.get("trust", {})
    if not isinstance(trust, dict):
        raise ConfigError('"trust" must be an object with allowHashes, blockHashes, allowServers, blockServers')
    lists: dict[str, list[str]] = {}
    for key in ("allowHashes", "blockHashes", "allowServers", "blockServers"):
        value = trust.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f'"trust.{key}" must be a list of strings')
        lists[key] = value
    return TrustLists(sha256_set("trust.allowHashes", lists["allowHashes"]),
                      sha256_set("trust.blockHashes", lists["blockHashes"]),
                      frozenset(lists["allowServers"]), frozenset(lists["blockServers"]))


# ---- model ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelSettings:
    """``none``, ``openai:MODEL`` or ``anthropic:MODEL``, an optional endpoint, and the step limit."""

    spec: str = "none"
    base_url: str | None = None
    max_steps: int = DEFAULT_MAX_STEPS


def parse_model_config(data: Mapping[str, Any]) -> ModelSettings:
    section = data.get("model", {})
    if not isinstance(section, dict):
        raise ConfigError('"model" must be an object like '
                          '{"spec": "openai:MODEL", "baseUrl": "http://…", "maxSteps": 8}')
    spec = section.get("spec", "none")
    base_url = section.get("baseUrl")
    max_steps = section.get("maxSteps", DEFAULT_MAX_STEPS)
    if not isinstance(spec, str) or not (base_url is None or isinstance(base_url, str)) \
            or not isinstance(max_steps, int) or isinstance(max_steps, bool):
        raise ConfigError('"model": spec and baseUrl must be strings and maxSteps an integer')
    if max_steps < 1:
        raise ConfigError(f'"model.maxSteps" must be at least 1, not {max_steps}')
    return ModelSettings(spec, base_url, max_steps)
