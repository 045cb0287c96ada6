"""One MCP server: connect with the official SDK, keep its catalog and templates, reconnect.

Both generations of MCP servers are spoken: the SDK's `mode="auto"` probes `server/discover`
(2026-07-28) and falls back to the `initialize` handshake. What differs after that is kept
in small pieces: the health check (`health.py`), change notifications (`listen.py` on
2026-07-28 servers, notifications on older ones) and what a server may ask the host
(`clientside.py`). A server that fails to start, crashes or hangs is reported (status +
error) and retried with backoff; nothing it does can raise out of `run()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import warnings
from collections.abc import Callable
from dataclasses import replace
from enum import StrEnum
from typing import Any, Literal, NoReturn, Protocol, cast

import anyio
import httpx2
import mcp_types as types
from mcp.client import Client, advertise
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import LoggingLevel

from ..config.serverhosts import SERVE_HOSTS, ServerHosts
from ..config.servers import ServerSpec
from ..errors import ServerUnavailable, SignInRequired, TemplateError
from ..settings import Limits
from ..telemetry import metrics
from ..values.protocol import (
    APP_MIME_TYPE,
    EXTENSION_ID,
    RESOURCES_SUBSCRIBE,
    RESOURCES_UNSUBSCRIBE,
    SUBSCRIPTIONS_LISTEN,
    ResourceListing,
)
from ..values.templates import Template
from ..values.tools import ToolEntry
from ..version import __version__
from .catalog import dump, list_tools, read_templates
from .changes import Changes, change_of
from .clientside import ServerAsks, client_callbacks
from .health import health_check, is_modern, set_log_level
from .listen import METHOD_NOT_FOUND, ChangeFeed
from .loglimit import LogBudget
from .oauth import (
    ASK_PERSON,
    AuthSetup,
    HostOAuth,
    NeedsPerson,
    Person,
    PersonNeeded,
    SignIn,
    www_authenticate,
)
from .transport import CONNECTION_CLOSED, StderrCapture, describe_failure, open_transport
from .watching import ResourceWatchers, Updated

# The SDK imports jsonschema at the first result of a tool with an outputSchema: 50 ms on the event loop of a
# host just started, every tab waiting. So it is imported with the connections.
importlib.import_module("jsonschema")

log = logging.getLogger("mcp_apps_host.servers")


class ProgressFn(Protocol):
    """Called with each `notifications/progress` of a request."""

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None: ...


# Runs on every template read, off the critical path of a view (the host adds its review's warnings).
TemplateHook = Callable[[Template], Template]


class ServerStatus(StrEnum):
    CONNECTING = "connecting"
    READY = "ready"
    ERROR = "error"
    RETRYING = "retrying"
    STOPPED = "stopped"


def _told_to_stop() -> bool:
    """The task running the connection was cancelled, though the connection ended otherwise: a cancel scope
    or task group of the SDK's, cancelled at the same moment for a reason of its own, may take the task's
    cancellation with its own and end with an error, or with none. Going on would wait for a server or a
    person for ever, and the host's stop with it."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class ServerConnection:
    def __init__(self, spec: ServerSpec, limits: Limits, on_change: Callable[[ServerConnection], None],
                 prepare: TemplateHook | None = None, asks: ServerAsks | None = None,
                 log_level: str = "info", apps: bool = True, auth: AuthSetup | None = None,
                 person: Person | None = None, *, hosts: ServerHosts = SERVE_HOSTS) -> None:
        self.spec = spec
        self.hosts = hosts  # where an HTTP server may be reached (allowedServerHosts)
        self.limits = limits
        self._on_change = on_change
        self.prepare: TemplateHook = prepare or (lambda template: template)
        # Without apps the server's tools are plain tools: no view, no template ever read.
        self.apps = apps
        self._asks = asks
        self._log_level = log_level
        self.status = ServerStatus.CONNECTING
        self.error: str | None = None
        self.protocol_version: str | None = None  # what the server speaks, once connected
        self.roots: tuple[str, ...] = spec.roots
        self.tools: dict[str, ToolEntry] = {}
        self.templates: dict[str, Template | TemplateError] = {}
        self._client: Client | None = None
        self._advertised_roots = False
        self._changes = Changes()
        self._failure: str | None = None
        self._stderr = StderrCapture()
        self._feed = ChangeFeed(spec.name, limits, self._changed)
        self._log_budget = LogBudget(limits.max_server_log_lines_per_minute)
        # Bumped whenever the tools or templates may have changed (a new connection, a refresh), so
        # views of this server can tell their template may be stale.
        self.generation = 0
        self._restart: str | None = None  # why the server is being restarted now
        self._counted = metrics.ConnectionState(spec.name)
        self._retry_now = asyncio.Event()
        # Sign-in (MCP authorization): a person's connection asks them; the shared one finds out whether
        # the server needs a person at all (`needs_person`), or signs in as the deployment itself.
        self.signin: SignIn | None = None
        self.needs_person = False
        self._auth: httpx2.Auth | None = None
        self._startup: anyio.CancelScope | None = None
        self._waiters: set[asyncio.Future[None]] = set()  # calls waiting for the person to sign in
        self._auth_error: SignInRequired | None = None  # why the latest sign-in failed, until it is told
        self._elicitations: dict[str, asyncio.Event] = {}  # URL elicitations the server may say are complete
        self._watchers = ResourceWatchers()  # the resources views subscribed to
        self._unfollowing: set[asyncio.Task[None]] = set()  # unsubscribes under way (held: the loop only refs weakly)
        self._calls = 0  # tool calls in flight: a server taken out of the registry lets them finish
        self._idle = asyncio.Event()
        self._idle.set()
        if spec.url and auth is not None:
            if person is not None:
                self.signin = SignIn(person.identity, spec.name, auth.board, self._signin_changed)
                self._auth = auth.for_person(spec.url, spec.auth, person, self.signin, self._auth_failed)
            elif spec.auth is not None and spec.auth.grant == "client_credentials":
                self._auth = auth.as_service(spec.url, spec.auth, spec.name)
            else:
                self._auth = NeedsPerson(self._auth_failed)

    @property
    def name(self) -> str:
        return self.spec.name

    # ---- lifecycle -------------------------------------------------------------------------

    async def run(self) -> None:
        delay = self.limits.reconnect_initial_delay
        first = True
        while True:
            if not first:  # after an error, an end, or a restart asked for
                metrics.SERVER_RESTARTS.labels(self.name).inc()
            first = False
            self._set(ServerStatus.CONNECTING if self.status != ServerStatus.RETRYING else ServerStatus.RETRYING)
            connections = self.generation
            try:
                await self._connected_session()
                delay = self.limits.reconnect_initial_delay  # it was up: start backoff afresh
            except asyncio.CancelledError:
                self._stopped()
            except BaseException as exc:  # a server must never take the host down
                if _told_to_stop():
                    self._stopped(exc)
                self._client = None
                if (needed := self._take_auth_error()) is not None and await self._signin_failed(needed):
                    delay = self.limits.reconnect_initial_delay
                    continue
                if self.generation != connections:  # it was up before it failed: start backoff afresh
                    delay = self.limits.reconnect_initial_delay
                self.error = str(needed) if needed is not None else self._describe_failure(exc)
                log.warning("server %s: %s (retrying in %.0fs)", self.name, self.error, delay)
                self._set(ServerStatus.ERROR)
                await self._pause(delay)
                delay = min(delay * 2, self.limits.reconnect_max_delay)
                self.status = ServerStatus.RETRYING
                continue
            if _told_to_stop():
                self._stopped()
            self._client = None
            if self._restart is not None:
                log.info("server %s: restarting: %s", self.name, self._restart)
                self._restart = None
                self._retry_now.clear()
                self.status = ServerStatus.CONNECTING
                continue
            self.error = self._failure or "the connection ended"
            log.warning("server %s: %s (reconnecting)", self.name, self.error)
            self._set(ServerStatus.ERROR)
            await self._pause(delay)
            self.status = ServerStatus.RETRYING

    def _stopped(self, cause: BaseException | None = None) -> NoReturn:
        self._client = None
        self._set(ServerStatus.STOPPED)
        raise asyncio.CancelledError() from cause

    async def _signin_failed(self, exc: SignInRequired) -> bool:
        """A sign-in that did not happen (the calls that waited for it already ended, in `_auth_failed`). The
        shared connection learns the server is reached per person and waits; a person's starts afresh (a new
        authorization URL for their next click). False: an error like any other (retried with backoff)."""
        self.error = str(exc)
        if self.signin is None:
            if not isinstance(self._auth, NeedsPerson):
                return False
            self.needs_person = True
            log.info("server %s: %s", self.name, exc)
            self._set(ServerStatus.ERROR)
            await self._retry_now.wait()  # a restart (the server's files changed) tries again
            self._retry_now.clear()
            return True
        log.info("server %s: sign-in of %s/%s: %s", self.name, *self.signin.identity.key, exc)
        self._set(ServerStatus.CONNECTING)
        return self.signin.take_answered()  # the person answered: ask again at once; else back off

    async def _pause(self, delay: float) -> None:
        """The backoff before the next try; a restart (its files changed) cuts it short."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._retry_now.wait(), delay)
        self._retry_now.clear()

    def restart(self, reason: str) -> None:
        """Start the server afresh now (`serve --watch`: its files changed)."""
        self._restart = reason
        self._retry_now.set()
        self._fail(reason)

    def _new_client(self) -> Client:
        callbacks = client_callbacks(self.name, self._asks, lambda: self.roots)
        self._advertised_roots = "list_roots_callback" in callbacks
        return Client(
            open_transport(self.spec, self.limits, self._stderr, self._auth, self.hosts),
            mode="auto",  # server/discover (2026-07-28), else the initialize handshake
            extensions=[advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})] if self.apps else [],
            client_info=types.Implementation(name="mcp-apps-host", version=__version__),
            message_handler=self._on_message,
            logging_callback=self._on_log,
            log_level=cast(LoggingLevel, self._log_level),  # 2026-07-28: the level goes with each request
            cache=None,
            **callbacks,
        )

    async def _connected_session(self) -> None:
        self._failure = None
        self._restart = None  # a restart asked for before this start is this start
        # A template read from an earlier run of the server is never served for this one.
        self.templates = {}
        client = self._new_client()
        # One scope around the whole connection (cancel scopes must nest with the SDK's task
        # groups); its deadline covers start-up only and is lifted once the server is ready.
        with anyio.CancelScope() as scope:
            limits = self.limits
            scope.deadline = self._startup_deadline()
            self._startup = scope
            try:
                async with client:
                    self._client = client
                    self.protocol_version = client.protocol_version
                    await set_log_level(client, self._log_level, self.name)
                    await self._load_catalog(client)
                    await self._load_templates(client, None)
                    await self._follow_again(client)
                    scope.deadline = float("inf")
                    self._startup = None
                    self.error = None
                    self.generation += 1
                    log.info("server %s: ready (MCP %s)", self.name, self.protocol_version)
                    self._set(ServerStatus.READY)
                    async with anyio.create_task_group() as group:
                        if is_modern(client):
                            group.start_soon(self._feed.run, client, self._followed_uris)
                        await self._serve(client)
                        group.cancel_scope.cancel()
            finally:
                self._client = None
                self._startup = None
        if scope.cancelled_caught:
            raise TimeoutError(f"did not finish connecting in time (server_connect_timeout "
                               f"{limits.server_connect_timeout:g} s + template_read_timeout "
                               f"{limits.template_read_timeout:g} s)")

    def _startup_deadline(self) -> float:
        return anyio.current_time() + self.limits.server_connect_timeout + self.limits.template_read_timeout

    async def _serve(self, client: Client) -> None:
        """Wait for changes and health checks until the connection fails."""
        missed = 0
        interval = self.limits.server_health_interval
        while self._failure is None:
            self._changes.wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changes.wake.wait(), interval)
            if self._failure is not None:
                return
            if self._changes.pending():
                await self._refresh(client)
            if not self._changes.wake.is_set():
                token = ASK_PERSON.set(False)
                try:
                    await health_check(client, interval)
                    missed = 0
                except TimeoutError:
                    # A server busy with a long synchronous tool may miss a check or two: restarting it
                    # would kill that call, so only a server silent for a while is given up on.
                    missed += 1
                    if missed >= self.limits.server_missed_health_checks:
                        self._failure = f"has not answered {missed} health checks in a row"
                except Exception as exc:  # a broken connection
                    self._failure = f"does not answer its health check: {self._describe_failure(exc)}"
                finally:
                    ASK_PERSON.reset(token)

    async def _refresh(self, client: Client) -> None:
        before = set(self._template_uris())
        tools, uris = self._changes.take()
        if tools:
            await self._load_catalog(client)
        if uris is not None:
            await self._load_templates(client, uris or None)
            self.generation += 1
        if before != set(self._template_uris()) and self._feed.scope is not None:
            self._feed.scope.cancel()  # listen for the templates in use now
        self._set(self.status)

    def _describe_failure(self, exc: BaseException) -> str:
        return describe_failure(exc, self.spec, self._stderr)

    def _set(self, status: ServerStatus) -> None:
        self.status = status
        # A stopped connection is gone (the host stops, a person's connection is let go): no longer counted.
        if status == ServerStatus.STOPPED:
            self._counted.end()
        else:
            self._counted.set(str(status))
        if status == ServerStatus.READY:
            for waiter in self._waiters:
                if not waiter.done():
                    waiter.set_result(None)
        try:
            self._on_change(self)
        except Exception:  # a listener's bug must not stop the connection
            log.exception("server %s: change listener failed", self.name)

    # ---- catalog and templates -------------------------------------------------------

    def _template_uris(self) -> list[str]:
        return sorted({t.resource_uri for t in self.tools.values() if t.resource_uri})

    def _followed_uris(self) -> list[str]:
        """What a 2026-07-28 server's change stream asks updates of: the templates in use and what views follow."""
        return sorted({*self._template_uris(), *self._watchers.uris()})

    async def _load_catalog(self, client: Client) -> None:
        tools = await list_tools(client, self.name)
        self.tools = tools if self.apps else {n: replace(t, resource_uri=None) for n, t in tools.items()}

    async def _load_templates(self, client: Client, only: set[str] | None) -> None:
        uris = set(self._template_uris())
        self.templates.update(await read_templates(client, self.name, uris if only is None else uris & only,
                                                   self.limits, self.prepare, self._describe_failure))

    async def template(self, uri: str) -> Template:
        """The cached template, read now if the prefetch has not got it (or failed before)."""
        cached = self.templates.get(uri)
        if isinstance(cached, Template):
            return cached
        fresh = (await read_templates(await self._usable_client(), self.name, [uri], self.limits, self.prepare,
                                      self._describe_failure))[uri]
        self.templates[uri] = fresh
        if isinstance(fresh, TemplateError):
            raise fresh
        return fresh

    # ---- sign-in ------------------------------------------------------------------------------

    def _signin_changed(self) -> None:
        """The person is now asked (or no longer): the start-up deadline stops while they are, and the
        page hears of it (the server list carries the authorization URL)."""
        if self._startup is not None:
            asking = self.signin is not None and self.signin.asking
            self._startup.deadline = float("inf") if asking else self._startup_deadline()
        self._set(self.status)

    @property
    def auth_state(self) -> Literal["none", "needed", "signed-in"]:
        if self.signin is None:
            return "needed" if self.needs_person else "none"
        return "signed-in" if self.status == ServerStatus.READY and not self.signin.asking else "needed"

    @property
    def waiting(self) -> int:
        """How many calls wait for the person to sign in: those held before the connection is up, or (at least)
        the request whose token was refused while it was up, parked in the sign-in."""
        asked_while_up = self.status == ServerStatus.READY and self.signin is not None and self.signin.asking
        return max(len(self._waiters), int(asked_while_up))

    async def sign_out(self) -> None:
        """The person's tokens revoked and forgotten; the connection starts afresh (and asks them again)."""
        if self.signin is None or not isinstance(self._auth, HostOAuth):
            raise ServerUnavailable(f"server {self.name!r}: nobody signs in to it here")
        await self._auth.sign_out()
        self.restart("signed out")

    def _auth_failed(self, exc: SignInRequired) -> None:
        """A sign-in did not happen (declined, refused, no key): the calls waiting for it end now, and a
        connection still starting stops here (the SDK would otherwise try its next handshake, and sign in
        again)."""
        self._auth_error = exc
        self._fail_waiters(exc)
        if self._startup is not None:
            self._startup.cancel()

    def _take_auth_error(self) -> SignInRequired | None:
        exc, self._auth_error = self._auth_error, None
        return exc

    def _fail_waiters(self, exc: SignInRequired) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_exception(SignInRequired(f"server {self.name!r}: {exc}"))

    async def ready(self) -> None:
        """Once the server is connected: at once, or after the person signed in (SignInRequired if they did
        not); ServerUnavailable for a server not connected that needs no sign-in."""
        await self._usable_client()

    async def _usable_client(self) -> Client:
        """The client; a person's connection not ready yet (it waits for them to sign in, or is getting
        there) holds the call until it is, so the call goes on by itself after the sign-in."""
        if self._client is not None and self.status == ServerStatus.READY:
            return self._client
        if self.signin is None or self.status == ServerStatus.STOPPED:
            return self._require_client()
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.add(waiter)
        self._set(self.status)  # the page shows the sign-in prompt
        try:
            await asyncio.wait_for(asyncio.shield(waiter), self.limits.signin_timeout)
        except TimeoutError:
            raise SignInRequired(f"server {self.name!r}: nobody signed in within "
                                 f"{self.limits.signin_timeout:g} s (signin_timeout)") from None
        finally:
            self._waiters.discard(waiter)
            self._set(self.status)
        return self._require_client()

    # ---- requests ----------------------------------------------------------------------

    def _require_client(self) -> Client:
        if self._client is None or self.status != ServerStatus.READY:
            detail = f": {self.error}" if self.error else ""
            raise ServerUnavailable(f"server {self.name!r} is not connected ({self.status}{detail})")
        return self._client

    async def finish_calls(self, timeout: float) -> None:
        """Wait (at most ``timeout`` seconds) until no tool call is in flight on this connection."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), timeout)

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        progress: ProgressFn | None = None) -> dict[str, Any]:
        self._calls += 1
        self._idle.clear()
        try:
            return await self._call_tool_once(name, arguments, progress)
        finally:
            self._calls -= 1
            if not self._calls:
                self._idle.set()

    async def _call_tool_once(self, name: str, arguments: dict[str, Any],
                              progress: ProgressFn | None) -> dict[str, Any]:
        result = await self._call_tool(name, arguments, progress)
        if (challenge := www_authenticate(result)) is None or self._auth is None:
            return result
        # The tool asks for a sign-in: the person signs in, and the call is made once more.
        if isinstance(self._auth, NeedsPerson):
            self.needs_person = True
            self._set(self.status)  # every person gets a connection of their own to it
            raise PersonNeeded(f"server {self.name!r}: tool {name!r} needs each person to sign in")
        if isinstance(self._auth, HostOAuth):
            await self._auth.sign_in(challenge)
            return await self._call_tool(name, arguments, progress)
        return result

    async def _call_tool(self, name: str, arguments: dict[str, Any], progress: ProgressFn | None) -> dict[str, Any]:
        client = await self._usable_client()
        try:
            with metrics.server_time(self.name):
                result = await client.call_tool(
                    name, arguments, read_timeout_seconds=self.limits.tool_call_timeout, progress_callback=progress
                )
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
            raise self._went_away(f"tools/call {name}") from exc
        except MCPError as exc:
            self._request_failed(exc, f"tools/call {name}")
        return dump(result)

    def _request_failed(self, exc: MCPError, during: str) -> NoReturn:
        """Raise what a request's error means: the connection gone, a sign-in that did not happen, or the
        server's own error as it came."""
        if exc.code == CONNECTION_CLOSED and exc.message == "Connection closed":
            raise self._went_away(during) from exc
        if (needed := self._take_auth_error()) is not None:
            raise SignInRequired(f"server {self.name!r}: {needed}") from None
        raise exc

    def _went_away(self, during: str) -> ServerUnavailable:
        self._fail(f"the connection broke during {during}")
        tail = self._stderr.tail(3)
        return ServerUnavailable(f"server {self.name!r} went away during {during}" + (f": {tail}" if tail else ""))

    async def read_resource(self, uri: str) -> dict[str, Any]:
        client = await self._usable_client()
        try:
            return dump(await client.read_resource(uri))
        except MCPError as exc:
            self._request_failed(exc, f"resources/read {uri}")

    async def list_resources(self, method: ResourceListing, cursor: str | None) -> dict[str, Any]:
        """One page of the server's resources or resource templates, for a view of its own."""
        client = await self._usable_client()
        try:
            if method == "resources/list":
                return dump(await client.list_resources(cursor=cursor))
            return dump(await client.list_resource_templates(cursor=cursor))
        except MCPError as exc:
            self._request_failed(exc, method)

    # ---- resources views follow ----------------------------------------------------------

    async def watch_resource(self, uri: str, updated: Updated) -> None:
        """Call ``updated`` each time the server says ``uri`` was updated (a view's `resources/subscribe`).
        Raises, following nothing, when the server cannot send updates."""
        if self._watchers.add(uri, updated):
            try:
                await self._follow(uri, True)
            except BaseException:
                self._watchers.remove(uri, updated)
                raise

    def unwatch_resource(self, uri: str, updated: Updated) -> None:
        """Stop calling ``updated`` now; the server is told in the background when nobody follows ``uri``."""
        if self._watchers.remove(uri, updated):
            task = asyncio.get_running_loop().create_task(self._unfollow(uri))
            self._unfollowing.add(task)
            task.add_done_callback(self._unfollowing.discard)

    async def _unfollow(self, uri: str) -> None:
        try:
            await self._follow(uri, False)
        except (ServerUnavailable, SignInRequired, MCPError) as exc:  # it forgets at its next reconnect anyway
            log.info("server %s: could not unsubscribe from %s: %s", self.name, uri, exc)

    async def _follow(self, uri: str, on: bool) -> None:
        client = await self._usable_client()
        resources = client.server_capabilities.resources
        if resources is None or not resources.subscribe:
            raise MCPError(METHOD_NOT_FOUND, f"server {self.name!r} does not offer resource subscriptions")
        if is_modern(client):  # one stream carries every update: open it again with the new set
            if self._feed.scope is not None:
                self._feed.scope.cancel()
            if on:  # answered once the server acknowledged it: an update made after the answer is not missed
                try:
                    with anyio.fail_after(self.limits.server_connect_timeout):
                        await self._feed.listening_for(uri)
                except TimeoutError:
                    raise MCPError(types.INTERNAL_ERROR,
                                   f"server {self.name!r} did not acknowledge a {SUBSCRIPTIONS_LISTEN} stream for "
                                   f"{uri} within {self.limits.server_connect_timeout:g} s") from None
            return
        try:
            await _subscribe_before_listen(client, uri, on)
        except MCPError as exc:
            self._request_failed(exc, f"{RESOURCES_SUBSCRIBE if on else RESOURCES_UNSUBSCRIBE} {uri}")

    async def _follow_again(self, client: Client) -> None:
        """A server before 2026-07-28 forgets subscriptions with its connection: ask again for what views follow."""
        if is_modern(client):
            return
        for uri in self._watchers.uris():
            try:
                await _subscribe_before_listen(client, uri, True)
            except MCPError as exc:
                log.info("server %s: could not subscribe again to %s: %s", self.name, uri, exc.message)

    def _fail(self, reason: str) -> None:
        self._failure = reason
        self._changes.wake.set()

    async def set_roots(self, roots: tuple[str, ...]) -> None:
        """New roots. A server before 2026-07-28 that was told of roots hears that they changed; one that
        was not (it had none) is reconnected so it learns it has some; 2026-07-28 servers ask each time."""
        self.roots = roots
        client = self._client
        if client is None or is_modern(client):
            return
        if not self._advertised_roots:
            self._fail("its roots changed; reconnecting so it is offered them")
            return
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.send_roots_list_changed()
        except Exception as exc:  # a broken connection: the health check ends it, the new one has the roots
            log.info("server %s: could not tell it its roots changed: %s", self.name, exc)

    # ---- changes the server reports ---------------------------------------------------

    def _changed(self, kind: str, uri: str | None) -> None:
        if kind == "resource" and uri is not None:
            self._watchers.updated(uri)
            if uri not in self._template_uris():  # not a template: nothing of the host's own to read again
                return
        self._changes.note(kind, uri)

    async def elicitation_done(self, elicitation_id: str, timeout: float) -> bool:
        """Whether the server said the URL elicitation ``elicitation_id`` is complete within ``timeout``
        (its notification is not guaranteed, so nobody waits for it forever)."""
        done = self._elicitations.setdefault(elicitation_id, asyncio.Event())
        try:
            async with asyncio.timeout(timeout):
                await done.wait()
            return True
        except TimeoutError:
            return False
        finally:
            self._elicitations.pop(elicitation_id, None)

    async def _on_message(self, message: Any) -> None:
        if isinstance(done := getattr(message, "root", message), types.ElicitCompleteNotification):
            self._elicitations.setdefault(done.params.elicitation_id, asyncio.Event()).set()
        if isinstance(message, Exception):
            self._fail(f"transport error: {self._describe_failure(message)}")
        elif (change := change_of(message)) is not None and not (self._client and is_modern(self._client)):
            self._changed(*change)  # a 2026-07-28 server's changes are taken from its stream (`ChangeFeed`) alone

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        allowed, dropped = self._log_budget.take()
        if dropped:
            log.warning("server %s: %d log messages dropped (over max_server_log_lines_per_minute = %d)",
                        self.name, dropped, self._log_budget.per_minute)
        if allowed:
            log.info("server %s [%s] %s", self.name, params.level, params.data)


async def _subscribe_before_listen(client: Client, uri: str, on: bool) -> None:
    """`resources/subscribe` (or unsubscribe) to a server before 2026-07-28, the era that has them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await (client.subscribe_resource(uri) if on else client.unsubscribe_resource(uri))
