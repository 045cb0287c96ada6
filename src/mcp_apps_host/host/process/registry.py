"""The server registry while the host runs: admins add, change and remove servers; every worker follows.

A change is written to the database first, then announced on the bus (channel ``servers``); each
worker, this one included, reads the registry again and makes its server manager match it. Reading it
whole each time makes a missed or repeated message harmless. Servers of the command line and the config
file are listed too, read-only.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ...config.registry import keep_secrets, parse_entry, redacted
from ...config.servers import ServerSpec
from ...errors import ConfigError, HostError
from ...servers.manager import ServerManager
from ...store.audit import AuditLog
from ...store.audit_events import AuditEvent
from ...store.registry import ServerRegistry, StoredServer
from ...values.grants import Access, Grants
from ...values.identity import Identity
from .bus import Bus

log = logging.getLogger("mcp_apps_host.registry")

CHANNEL = "servers"
Change = Literal["add", "change", "remove"]


class RegistryConflict(HostError):
    """A change the registry cannot make as asked (a server of the config file, another tenant's name)."""


class NoSuchServer(HostError):
    """A change to a server the registry does not have."""


@dataclass
class RegistrySync:
    store: ServerRegistry
    servers: ServerManager
    bus: Bus
    audit: AuditLog | None
    fixed: tuple[ServerSpec, ...]  # from the command line and the config file: listed, never changed here
    _applied: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (tenant, body JSON) running
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def _fixed_names(self) -> set[str]:
        return {s.name for s in self.fixed}

    async def start(self) -> None:
        self.bus.subscribe(CHANNEL, self._heard)
        await self.sync()

    def _heard(self, _message: dict[str, Any]) -> None:
        task = asyncio.get_running_loop().create_task(self.sync())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def sync(self) -> None:
        """Make the running servers match the registry."""
        async with self._lock:
            try:
                stored = await asyncio.to_thread(self.store.all)
            except Exception as exc:  # the database is away: the next message (or start) tries again
                log.warning("registry: could not read the servers (%s)", exc)
                return
            self._apply(stored)

    def _apply(self, stored: list[StoredServer]) -> None:
        wanted: dict[str, StoredServer] = {}
        for row in stored:
            if row.name in self._fixed_names:
                log.warning("registry: server %s is also in the config; the config's entry is used", row.name)
                continue
            wanted[row.name] = row
        for name in [n for n in self._applied if n not in wanted]:
            del self._applied[name]
            self.servers.remove_server(name)
        for name, row in wanted.items():
            key = (row.tenant, json.dumps(row.body, sort_keys=True))
            if self._applied.get(name) == key:
                continue
            try:
                entry = parse_entry(name, row.body)
            except ConfigError as exc:  # a row no longer valid (a key's rules changed): it does not run
                log.warning("registry: server %s is not run: %s", name, exc)
                entry = None
            self._applied[name] = key
            if entry is None or not entry.enabled:
                self.servers.remove_server(name)
            else:
                self.servers.put_server(entry.spec, Access(row.tenant, Grants(*entry.grants)))

    # ---- what the admin API does ---------------------------------------------------------------------

    async def listing(self, admin: Identity) -> list[dict[str, Any]]:
        """Every server the tenant's admin may see: the config's (read-only), then the registry's."""
        rows = await asyncio.to_thread(self.store.all)
        out: list[dict[str, Any]] = [
            {"name": s.name, "source": "config", "readOnly": True, "entry": redacted(_entry_of(s)),
             "grants": {"users": [], "groups": []}, "enabled": True, "status": self._status(s.name)}
            for s in self.fixed]
        for row in rows:
            if row.tenant != admin.tenant or row.name in self._fixed_names:
                continue
            body = redacted(row.body) or {}
            out.append({"name": row.name, "source": "registry", "readOnly": False,
                        "entry": {k: v for k, v in body.items() if k not in ("grants", "enabled")},
                        "grants": body.get("grants") or {"users": [], "groups": []},
                        "enabled": body.get("enabled", True), "status": self._status(row.name),
                        "updated": row.updated, "updatedBy": row.updated_by})
        return out

    def _status(self, name: str) -> str:
        conn = self.servers.connections.get(name)
        return str(conn.status) if conn is not None else "disabled"

    async def put(self, admin: Identity, name: str, body: Any) -> Change:
        """Add or change ``name``; ConfigError names a bad key, RegistryConflict a name not this admin's."""
        source = f"PUT /api/admin/servers/{name}"
        if name in self._fixed_names:
            raise RegistryConflict(f"{source}: server {name} comes from the command line or the config file and "
                                   "is read-only here (change it there)")
        before = await asyncio.to_thread(self.store.get, name)
        self._check_tenant(admin, name, before)
        if not isinstance(body, dict):
            raise ConfigError(f"{source}: the body must be a JSON object (an mcpServers entry)")
        body = keep_secrets(body, before.body if before is not None else None)
        parse_entry(name, body, source)  # every key checked before anything is stored
        replaced = await asyncio.to_thread(self.store.put, name, admin.tenant, body, admin.user)
        change: Change = "add" if replaced is None else "change"
        self._record(admin, name, change, replaced.body if replaced is not None else None, body)
        await self._announce(name)
        return change

    async def delete(self, admin: Identity, name: str) -> None:
        if name in self._fixed_names:
            raise RegistryConflict(f"DELETE /api/admin/servers/{name}: server {name} comes from the command line "
                                   "or the config file and is read-only here (remove it there)")
        before = await asyncio.to_thread(self.store.get, name)
        self._check_tenant(admin, name, before)
        if before is None:
            raise NoSuchServer(f"no server named {name!r} in the registry")
        removed = await asyncio.to_thread(self.store.delete, name)
        if removed is not None:
            self._record(admin, name, "remove", removed.body, None)
        await self._announce(name)

    @staticmethod
    def _check_tenant(admin: Identity, name: str, row: StoredServer | None) -> None:
        if row is not None and row.tenant != admin.tenant:
            raise RegistryConflict(f"the server name {name} is taken (choose another name)")

    async def _announce(self, name: str) -> None:
        self.bus.publish(CHANNEL, {"name": name})
        await self.sync()  # this worker at once; the others when they hear it

    def _record(self, admin: Identity, name: str, change: Change, before: Mapping[str, Any] | None,
                after: Mapping[str, Any] | None) -> None:
        if self.audit is None:
            return
        what = {"add": "added", "change": "changed", "remove": "removed"}[change]
        self.audit.record_nowait(AuditEvent(
            direction="admin->host", method=f"admin/servers/{change}", server=name, decision="allowed",
            reason=f"{admin.user} {what} server {name}",
            payload={"before": redacted(before), "after": redacted(after)},
            tenant=admin.tenant, user_id=admin.user))


def _entry_of(spec: ServerSpec) -> dict[str, Any]:
    """A config server as an entry (what the admin page shows of it)."""
    if spec.url:
        return {"url": spec.url, "headers": dict(spec.headers)}
    return {"command": spec.command, "args": list(spec.args), "env": dict(spec.env)}
