"""The config file's ``metrics`` section: ``{"port": 9464, "key": "…"}`` serves `/metrics` on that port
(off the console's origin), to scrapes that bring ``Authorization: Bearer KEY`` when a key is set."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..errors import ConfigError

MIN_KEY_CHARS: Final = 16


@dataclass(frozen=True)
class MetricsSettings:
    port: int | None = None  # None: no metrics endpoint
    key: str | None = field(default=None, repr=False)  # never printed with the settings


def check_metrics_port(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise ConfigError(f"{where}: {value!r} is not a port number (1-65535)")
    return value


def parse_metrics_config(data: Mapping[str, Any], source: str) -> MetricsSettings:
    section = data.get("metrics")
    if section is None:
        return MetricsSettings()
    if not isinstance(section, Mapping) or set(section) - {"port", "key"}:
        raise ConfigError(f'{source}: "metrics" must be an object like {{"port": 9464, "key": "…"}} '
                          f"(only \"port\" and \"key\")")
    port = check_metrics_port(section["port"], f'{source}: metrics.port') if section.get("port") is not None \
        else None
    key = section.get("key")
    if key is not None and (not isinstance(key, str) or len(key) < MIN_KEY_CHARS or not key.isprintable()
                            or any(c.isspace() for c in key)):
        # The key's value is never repeated in the message: it is a secret, and error messages are logged.
        raise ConfigError(f"{source}: metrics.key must be a string of at least {MIN_KEY_CHARS} printable "
                          "characters without spaces")
    return MetricsSettings(port=port, key=key)
