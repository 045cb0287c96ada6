"""The config file's ``"audit"`` section: how long audit records are kept."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError

MAX_RETENTION_DAYS = 36500


def parse_retention(section: Any, where: str) -> int | None:
    """``{"retentionDays": N}``: records older than N days are deleted; no section: kept for good."""
    if section is None:
        return None
    if not isinstance(section, Mapping) or set(section) - {"retentionDays"}:
        raise ConfigError(f'{where}: expected an object like {{"retentionDays": 90}}, not {section!r}')
    days = section.get("retentionDays")
    if days is None:
        return None
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_RETENTION_DAYS:
        raise ConfigError(f"{where}.retentionDays: expected a whole number of days from 1 to {MAX_RETENTION_DAYS}, "
                          f"not {days!r}")
    return days
