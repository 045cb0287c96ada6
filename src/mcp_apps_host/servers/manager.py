"""All configured servers, started together, watched together.

An HTTP server whose calls must run as the signed-in person gets a connection per person
(`personal`): one opened with the headers the embedding app's `server_headers` hook gives, or
one that needs each person to sign in (MCP authorization: the shared connection met a 401).
The others are shared by everyone.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from ..config.entrypolicy import person_headers, uses_person, without_person
from ..config.serverhosts import SERVE_HOSTS, ServerHosts
from ..config.servers import ServerSpec
from ..errors import NotGranted, ServerUnavailable
from ..settings import Limits
from ..values.grants import EVERYONE, Access
from ..values.identity import Identity
from ..values.templates import Template
from ..values.tools import ToolEntry
from .clientside import ServerAsks
from .connection import ServerConnection, TemplateHook
from .oauth import AuthSetup, Person

Listener = Callable[[], None]
# (person, server name) -> the headers that server's requests carry for that person, or None: shared.
ServerHeaders = Callable[[Identity, str], Mapping[str, str] | None]


def own_limits(limits: Limits, spec: ServerSpec) -> Limits:
    """The host's limits with those the server's entry sets for itself (``"limits"``, bounds checked there)."""
    overrides = spec.limits.as_dict()
    return replace(limits, **overrides) if overrides else limits


class ServerManager:
    def __init__(self, specs: list[ServerSpec], limits: Limits, prepare_template: TemplateHook | None = None,
                 asks: ServerAsks | None = None, log_level: str = "info",
                 apps: Callable[[ServerSpec], bool] = lambda spec: True,
                 server_headers: ServerHeaders | None = None, auth: AuthSetup | None = None, *,
                 hosts: ServerHosts = SERVE_HOSTS) -> None:
        self.limits = limits
        self.hosts = hosts
        self._prepare = prepare_template
        self._apps = apps
        self._asks = asks
        self._log_level = log_level
        self.auth = auth
        # A header template naming the person ({user}, ...) is filled in on each person's own connection; the
        # shared one, for nobody in particular, goes without it.
        self._templated: dict[str, dict[str, str]] = {}
        self._shared = {s.name: self._shared_connection(s)
                        for s in specs}
        # Who may use each server (the registry's tenant and grants); a server not here is everyone's.
        self._access: dict[str, Access] = {}
        self._revision = [0]  # bumped when a server comes or goes (shared with every person's view)
        self._task_of: dict[str, asyncio.Task[None]] = {}  # each shared connection's running task
        self.server_headers = server_headers
        self._listeners: set[Listener] = set()
        self._tasks: list[asyncio.Task[None]] = []
        # (tenant, user, server) -> that person's connection and the task running it
        self._personal: dict[tuple[str, str, str], tuple[ServerConnection, asyncio.Task[None] | None]] = {}
        self._started = False
        # As one person sees them (set by `personal`): their connections, worked out again whenever a
        # server turns out to need each person to sign in.
        self._person: Person | None = None
        self._mine: dict[str, ServerConnection] = {}
        self._seen = -1
        self._per_person: set[str] = set()  # shared with every person's view, as `_personal` is; only grows

    @property
    def connections(self) -> dict[str, ServerConnection]:
        if self._person is None:
            return self._shared
        seen = len(self._per_person) * 1_000_003 + self._revision[0]
        if self._seen != seen:
            self._seen = seen
            who = self._person.identity
            self._mine = {name: self._personal_connection(self._person, conn) for name, conn in self._shared.items()
                          if self.access(name).visible_to(who) and self.access(name).refusal(name, who) is None}
        return self._mine

    def access(self, server: str) -> Access:
        return self._access.get(server, EVERYONE)

    def start(self) -> None:
        self._started = True
        for conn in self._shared.values():
            self._task_of[conn.name] = self._run(conn)

    # ---- servers that come and go while the host runs (the registry) ---------------------------

    def put_server(self, spec: ServerSpec, access: Access) -> None:
        """Run ``spec`` under its name, replacing what ran under it; the same spec again only changes who may
        use it. The old connection finishes its calls in flight before it is closed."""
        old = self._shared.get(spec.name)
        self._access[spec.name] = access
        if old is None or old.spec != spec:
            if old is not None:
                self._retire(old)
            conn = self._shared_connection(spec)
            self._shared[spec.name] = conn
            if self._started:
                self._task_of[spec.name] = self._run(conn)
        self._revision[0] += 1
        self._tell()

    def _shared_connection(self, spec: ServerSpec) -> ServerConnection:
        """The connection to ``spec`` for nobody in particular (with no header naming a person)."""
        if spec.url and uses_person(spec.headers):
            self._templated[spec.name] = spec.headers
        else:
            self._templated.pop(spec.name, None)
        return ServerConnection(replace(spec, headers=without_person(spec.headers)), own_limits(self.limits, spec),
                                self._changed, self._prepare, self._asks, self._log_level, self._apps(spec), self.auth,
                                hosts=self.hosts)

    def remove_server(self, name: str) -> None:
        """Take ``name`` away: no new call reaches it; the calls in flight finish, then it is closed."""
        conn = self._shared.pop(name, None)
        self._access.pop(name, None)
        if conn is None:
            return
        self._retire(conn)
        self._revision[0] += 1
        self._tell()

    def _retire(self, conn: ServerConnection) -> None:
        tasks = [t for t in (self._task_of.pop(conn.name, None),) if t is not None]
        conns = [conn]
        for key in [k for k in self._personal if k[2] == conn.name]:
            personal, task = self._personal.pop(key)
            conns.append(personal)
            if task is not None:
                tasks.append(task)

        async def close() -> None:
            await asyncio.gather(*(c.finish_calls(self.limits.tool_call_timeout) for c in conns))
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        if self._started:
            self._tasks.append(asyncio.get_running_loop().create_task(close(), name=f"server-retire:{conn.name}"))

    def _run(self, conn: ServerConnection) -> asyncio.Task[None]:
        task = asyncio.create_task(conn.run(), name=f"server:{conn.name}")
        self._tasks.append(task)
        return task

    def personal(self, identity: Identity, base_path: str = "") -> ServerManager:
        """The servers as ``identity`` reaches them: only those granted to them, through their own connection
        where `server_headers` gives headers or where the server needs them to sign in."""
        view = copy.copy(self)
        view._person, view._mine, view._seen = Person(identity, base_path), {}, -1
        return view

    def _personal_connection(self, person: Person, shared: ServerConnection) -> ServerConnection:
        if not shared.spec.url:
            return shared  # a stdio server has no request headers to carry a person
        identity = person.identity
        headers = self.server_headers(identity, shared.name) if self.server_headers is not None else None
        templated = self._templated.get(shared.name)
        if templated is not None:
            headers = {**person_headers(templated, identity.user, identity.tenant, identity.groups), **(headers or {})}
        signs_in = shared.name in self._per_person
        if headers is None and not signs_in:
            return shared
        key = (*identity.key, shared.name)
        spec = replace(shared.spec, headers={**shared.spec.headers, **headers}) if headers else shared.spec
        known = self._personal.get(key)
        if known is not None and known[0].spec == spec and (known[0].signin is not None) == signs_in:
            return known[0]
        if known is not None and known[1] is not None:  # the person's headers changed (a fresh token)
            known[1].cancel()
        asks = self._asks.for_person(identity) if self._asks is not None else None
        conn = ServerConnection(spec, own_limits(self.limits, spec), self._changed, shared.prepare, asks,
                                self._log_level, shared.apps,
                                self.auth if signs_in else None, person if signs_in else None, hosts=self.hosts)
        self._personal[key] = (conn, self._run(conn) if self._started else None)
        return conn

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.add(listener)
        return lambda: self._listeners.discard(listener)

    def _changed(self, conn: ServerConnection) -> None:
        if conn.needs_person:
            self._per_person.add(conn.name)  # every person's view gets their own connection to it
        self._tell()

    def _tell(self) -> None:
        for listener in list(self._listeners):
            listener()

    def get(self, server: str) -> ServerConnection:
        conn = self.connections.get(server)
        if conn is None:
            who = self._person.identity if self._person is not None else None
            access = self.access(server)
            if who is not None and server in self._shared and access.visible_to(who):
                refusal = access.refusal(server, who)
                if refusal is not None:  # a stale page, or a model told of it elsewhere: the rule, named
                    raise NotGranted(refusal)
            known = ", ".join(sorted(self.connections)) or "none"
            raise ServerUnavailable(f"no server named {server!r} (servers: {known})")
        return conn

    def tool(self, server: str, tool: str) -> ToolEntry | None:
        conn = self.connections.get(server)
        return conn.tools.get(tool) if conn else None

    async def template(self, server: str, uri: str) -> Template:
        return await self.get(server).template(uri)

    def template_read(self, server: str, tool: str) -> Template | None:
        """The template of the view of a tool this person may call, as read when its server connected; None
        when there is none or it is not read yet (nothing is asked of the server here)."""
        entry = self.tool(server, tool)
        if entry is None or not entry.resource_uri or not entry.model_visible:
            return None
        read = self.connections[server].templates.get(entry.resource_uri)
        return read if isinstance(read, Template) else None

    async def set_roots(self, server: str, roots: tuple[str, ...]) -> None:
        """Give a server new roots (it is told they changed, as its protocol version says)."""
        await self.get(server).set_roots(roots)
        self._changed(self.get(server))

    def snapshot(self) -> list[dict[str, Any]]:
        """The server list as the page shows it. Tools without "model" visibility are
        never offered to a person or a model; a view can still call its own app-only tools."""
        out = []
        for conn in self.connections.values():
            tools = [
                {
                    "name": t.name,
                    "title": t.definition.get("title") or (t.definition.get("annotations") or {}).get("title"),
                    "description": t.definition.get("description") or "",
                    "inputSchema": t.input_schema,
                    "hasView": t.resource_uri is not None,
                    "callable": t.model_visible,
                }
                for t in conn.tools.values()
                if t.model_visible
            ]
            out.append(
                {
                    "name": conn.name,
                    "status": str(conn.status),
                    "error": conn.error,
                    "transport": conn.spec.transport,
                    "target": conn.spec.describe(),
                    "protocolVersion": conn.protocol_version,
                    "roots": list(conn.roots),
                    "auth": conn.auth_state,
                    "signin": {"url": conn.signin.url, "state": conn.signin.state}
                    if conn.signin is not None and conn.signin.asking else None,
                    "waiting": conn.waiting,
                    "tools": tools,
                }
            )
        return out
