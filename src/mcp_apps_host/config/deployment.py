"""The sections of the config file that say where and how the host is deployed:
``apps``, ``origin``, ``sandboxOrigin``, ``database``, ``secretKey`` and ``tokenKey``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..errors import ConfigError
from .servers import ServerSpec


@dataclass(frozen=True)
class AppsSettings:
    """Whether views render at all, and for a server whose entry does not say (``"apps": true|false``)."""

    enabled: bool = False
    default: bool = False

    def for_server(self, spec: ServerSpec) -> bool:
        return self.enabled and (spec.apps if spec.apps is not None else self.default)


def check_origin(value: Any, where: str) -> str:
    """``scheme://host[:port]`` and nothing else."""
    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/") \
            or parts.query or parts.fragment or parts.username:
        raise ConfigError(f"{where}: {value!r} is not an origin like 'https://console.example.com'")
    return f"{parts.scheme}://{parts.netloc.lower()}"


def check_sandbox_origin(value: Any, where: str) -> str:
    """An origin whose host starts with the ``{label}`` each server's views get, e.g. ``https://{label}.apps.example.com``."""
    if not isinstance(value, str) or value.count("{label}") != 1 or "://{label}." not in value:
        raise ConfigError(f"{where}: {value!r} must be an origin whose host starts with '{{label}}.', "
                          "e.g. 'http://{label}.sandbox.localhost:8765' or 'https://{label}.apps.example.com'")
    check_origin(value.replace("{label}", "x"), where)
    return value.lower()


def parse_apps_config(data: Mapping[str, Any], source: str) -> AppsSettings:
    section = data.get("apps", {})
    if not isinstance(section, Mapping) or set(section) - {"enabled", "default"} or not all(
            isinstance(v, bool) for v in section.values()):
        raise ConfigError(f'{source}: "apps" must be an object like {{"enabled": true, "default": false}} '
                          "(default: whether a server whose entry has no \"apps\" key shows its views)")
    return AppsSettings(enabled=section.get("enabled", False), default=section.get("default", False))


def check_stop_timeout(value: object, where: str) -> float:
    """Seconds calls in flight may take to finish when the process is asked to stop."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 3600:
        raise ConfigError(f"{where} must be a number of seconds from 0 to 3600, not {value!r}")
    return float(value)


def parse_deployment_config(data: Mapping[str, Any], source: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if data.get("origin") is not None:
        out["origin"] = check_origin(data["origin"], f"{source}: origin")
    if data.get("sandboxOrigin") is not None:
        out["sandbox_origin"] = check_sandbox_origin(data["sandboxOrigin"], f"{source}: sandboxOrigin")
    if data.get("database") is not None:
        if not isinstance(data["database"], str) or "://" not in data["database"]:
            raise ConfigError(f'{source}: "database" must be a SQLAlchemy URL like "postgresql+psycopg://host/db"')
        out["database_url"] = data["database"]
    if data.get("secretKey") is not None:
        if not isinstance(data["secretKey"], str) or len(data["secretKey"]) < 16:
            raise ConfigError(f'{source}: "secretKey" must be a string of at least 16 characters')
        out["secret_key"] = data["secretKey"]
    if data.get("stopTimeout") is not None:
        out["stop_timeout"] = check_stop_timeout(data["stopTimeout"], f'{source}: "stopTimeout"')
    if data.get("tokenKey") is not None:
        if not isinstance(data["tokenKey"], str) or not data["tokenKey"].strip():
            raise ConfigError(f'{source}: "tokenKey" must be one Fernet key, or several separated by commas')
        out["token_key"] = data["tokenKey"]
    return out
