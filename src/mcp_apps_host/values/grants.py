"""Who may use a server: everyone in its tenant, or the users and groups it is granted to.

One rule, one place: the server list a person sees, the tools offered to their model, and every
call (theirs, their model's, their views') ask :func:`refusal` through the person's server manager.
"""

from __future__ import annotations

from dataclasses import dataclass

from .identity import Identity


@dataclass(frozen=True)
class Grants:
    """No users and no groups: everyone in the tenant. Else only those named."""

    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()

    @property
    def everyone(self) -> bool:
        return not self.users and not self.groups

    def admits(self, identity: Identity) -> bool:
        return self.everyone or identity.user in self.users or bool(set(identity.groups) & set(self.groups))

    def describe(self) -> str:
        parts = [f"users {', '.join(self.users)}" if self.users else "",
                 f"groups {', '.join(self.groups)}" if self.groups else ""]
        return " and ".join(p for p in parts if p) or "everyone"

    def as_json(self) -> dict[str, list[str]]:
        return {"users": list(self.users), "groups": list(self.groups)}


@dataclass(frozen=True)
class Access:
    """Where a server may be used: its tenant (None: every tenant, as a server of the config file) and its
    grants within it."""

    tenant: str | None = None
    grants: Grants = Grants()

    def visible_to(self, identity: Identity) -> bool:
        """A server of another tenant does not exist for this person (its name says nothing to them)."""
        return self.tenant is None or self.tenant == identity.tenant

    def refusal(self, server: str, identity: Identity) -> str | None:
        """Why ``identity`` may not use ``server`` (the rule, named), or None when they may."""
        if self.grants.admits(identity):
            return None
        return f"policy: server {server} is granted to {self.grants.describe()}"


EVERYONE = Access()
