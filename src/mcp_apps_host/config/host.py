"""`HostConfig`: everything a host is started with, as one typed value.

Build it in code, or from a dict in the config file's shape with :meth:`HostConfig.from_dict`
(``mcpServers`` plus the host's own ``model``, ``consent``, ``sampling``, ``trust`` and ``metrics`` sections).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..settings import Limits
from .audit import parse_retention
from .deployment import AppsSettings, parse_apps_config, parse_deployment_config
from .metrics import MetricsSettings, parse_metrics_config
from .policies import (
    ModelSettings,
    Rules,
    SamplingSettings,
    TrustLists,
    parse_consent_config,
    parse_model_config,
    parse_sampling_config,
    parse_trust_config,
)
from .serverhosts import ServerHosts
from .servers import ServerSpec, merge_specs, parse_config


@dataclass(frozen=True)
class HostConfig:
    servers: tuple[ServerSpec, ...] = ()
    model: ModelSettings = field(default_factory=ModelSettings)
    consent: Rules = field(default_factory=dict)
    sampling: Mapping[str, SamplingSettings] = field(default_factory=dict)
    trust: TrustLists = field(default_factory=TrustLists)
    limits: Limits = field(default_factory=Limits)
    database_url: str | None = None  # a SQLAlchemy URL; None: SQLite in ~/.local/share
    apps: AppsSettings = field(default_factory=AppsSettings)  # off unless enabled (an embedding's default)
    # Where people open the host page, e.g. "https://console.example.com" (never taken from a request's headers).
    origin: str | None = None
    # The sandbox's origin, with "{label}" for each server's own name (e.g. "https://{label}.apps.example.com");
    # None: a port of its own (`serve --sandbox-port`).
    sandbox_origin: str | None = None
    # Signs view handles for the sandbox origin; every worker of one deployment needs the same (None: random).
    secret_key: str | None = None
    # Encrypts the tokens people get by signing in to servers: Fernet keys, comma-separated, the first
    # encrypting and all decrypting (rotation); None: MCP_APPS_HOST_TOKEN_KEY, else no sign-in is stored.
    token_key: str | None = None
    watch: bool = False  # `serve --watch`: restart a stdio server whose files change, re-render its views
    watch_debounce_ms: int = 300
    # On SIGTERM: how long calls in flight may take to finish before they are ended (`serve --stop-timeout`).
    stop_timeout: float = 30.0
    # The level of the log messages servers are asked to send (MCP logging levels).
    server_log_level: str = "info"
    # Where HTTP servers may live ("allowedServerHosts"); `serve` adds this machine (build_host's loopback_servers).
    allowed_server_hosts: ServerHosts = field(default_factory=ServerHosts)
    # "audit": {"retentionDays": N}: audit records older than this are deleted (None: kept).
    audit_retention_days: int | None = None
    # The admin API key (`Authorization: Bearer KEY` on /api/admin/…): `--admin-key`, MCP_APPS_HOST_ADMIN_KEY,
    # or create_app(admin_key=…); None: the audit stream is closed.
    admin_key: str | None = None
    metrics: MetricsSettings = field(default_factory=MetricsSettings)  # `/metrics` on a port of its own

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "config", base: Path | None = None,
                  **overrides: Any) -> HostConfig:
        """A config file's document, checked section by section (errors name ``source`` and the key).
        Relative paths in it (roots) are read from ``base``, the file's folder."""
        servers = parse_config(data, source, base) if "mcpServers" in data else []
        config = cls(
            servers=tuple(servers),
            model=parse_model_config(data),
            consent=parse_consent_config(data),
            sampling=parse_sampling_config(data),
            trust=parse_trust_config(data),
            apps=parse_apps_config(data, source),
            allowed_server_hosts=ServerHosts.parse(data.get("allowedServerHosts"), f"{source}: allowedServerHosts"),
            audit_retention_days=parse_retention(data.get("audit"), f"{source}: audit"),
            metrics=parse_metrics_config(data, source),
            **parse_deployment_config(data, source),
        )
        return replace(config, **overrides) if overrides else config

    def with_servers(self, *groups: list[ServerSpec]) -> HostConfig:
        """More servers, before or after these (a name given twice is an error)."""
        return replace(self, servers=tuple(merge_specs(*groups)))
