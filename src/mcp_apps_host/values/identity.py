"""Who a request is for: the person and their tenant, as the embedding app's sign-in says."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError

# The one person of a console started with `serve` (its token stands for them).
CONSOLE_USER = "local"
DEFAULT_TENANT = "default"


@dataclass(frozen=True)
class Identity:
    """``user`` within ``tenant``; ``admin`` may export the whole tenant's audit trail and manage its
    servers; ``groups`` are the groups the embedding's sign-in puts them in (what server grants name)."""

    user: str
    tenant: str = DEFAULT_TENANT
    admin: bool = False
    groups: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        """Who it is, whatever their role: what their rows are filed under."""
        return self.tenant, self.user

    def __post_init__(self) -> None:
        for name, value, limit in (("user", self.user, 256), ("tenant", self.tenant, 128)):
            if not isinstance(value, str) or not value or len(value) > limit or not value.isprintable():
                raise ConfigError(f"Identity.{name} must be 1-{limit} printable characters, not {value!r}")
        if not isinstance(self.admin, bool):
            raise ConfigError(f"Identity.admin must be true or false, not {self.admin!r}")
        if isinstance(self.groups, (list, set, frozenset)):  # whatever collection a sign-in gives: one tuple
            object.__setattr__(self, "groups", tuple(self.groups))
        if not isinstance(self.groups, tuple) or not all(
                isinstance(g, str) and g and len(g) <= 256 and g.isprintable() for g in self.groups):
            raise ConfigError(f"Identity.groups must be names of 1-256 printable characters, not {self.groups!r}")


CONSOLE = Identity(CONSOLE_USER, DEFAULT_TENANT, admin=True)
