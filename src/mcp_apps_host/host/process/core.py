"""The host: servers, policies, stores, and the views that are mounted now (by handle).

One `Host` serves a process. `for_person` gives the same host as one person sees it:
their conversations, their "always allow" answers, their template pins, their sampling
allowance — a tab only ever holds that one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Final, TypeVar, cast

from ...chat.agent import AgentLoop
from ...config.policies import TrustLists
from ...policy.consent import ConsentPolicy, SamplingPolicy
from ...policy.csp import build_view_csp
from ...policy.trust import TemplateTrust
from ...servers.manager import ServerManager
from ...servers.watch import watch_servers
from ...settings import Limits
from ...store.audit import AuditLog
from ...store.budgets import SamplingBudgets
from ...store.consents import RememberedConsents
from ...store.conversations import Conversations, OwnConversations
from ...store.health import DatabaseProbe
from ...store.item_appends import ItemAppends
from ...store.outage import write_retried
from ...store.pins import TemplatePins
from ...store.retention import AuditRetention
from ...store.view_host_states import OwnViewHostStates, ViewHostStates
from ...store.view_pins import OwnViewPins, ViewPins
from ...store.view_records import ViewInstances, ViewRecord
from ...telemetry import tracing
from ...values.identity import CONSOLE, Identity
from ...values.templates import Template
from .bus import Bus, LocalBus
from .handles import HandleSigner, ViewPass
from .lifecycle import Lifecycle
from .news import ConversationNews
from .registry import RegistrySync
from .sandbox import Sandbox
from .serverasks import HostAsks
from .signins import SignIns

# Browser features a view may be granted through the iframe `allow` attribute when it asks.
DEFAULT_GRANTED_PERMISSIONS = frozenset({"clipboard-write"})
log = logging.getLogger("mcp_apps_host.host")

STOP_STEP_S: Final = 30.0  # the longest a step of `Host.stop` is waited for
HUNG_ORIGIN_QUIET_S = 10.0  # see `Host.hung_lately`; the browser's reuse window is a few seconds
T = TypeVar("T")

CspReport = Callable[[dict[str, Any]], None]
# What of a CSP report goes to another worker: what the view's log and the audit trail show.
_REPORT_KEYS = frozenset({"blocked-uri", "blockedURL", "effective-directive", "effectiveDirective",
                          "violated-directive", "document-uri", "documentURL", "disposition"})


@dataclass
class MountedView:
    """What the sandbox origin needs of a view: its origin, its CSP, and where its CSP reports go."""

    handle: str
    identity: Identity
    template: Template
    token: str  # the signed handle the proxy page and the CSP reports are addressed by
    origin: str  # the sandbox origin this view runs on
    csp_header: str
    on_csp_report: CspReport


@dataclass(frozen=True)
class PrestartedProxy:
    """A proxy address signed ahead of its view (`Host.prestart_proxy`)."""

    handle: str
    token: str
    origin: str
    csp_header: str
    key: str  # views whose template gives the same key may take it


def proxy_key(origin: str, template: Template) -> str:
    """What a proxy page depends on: its origin and the policy its template declares (not the HTML)."""
    return f"{origin} {build_view_csp(template.csp)}"


@dataclass(frozen=True)
class Stores:
    """The repositories of one database; a person's session sees them through `Host.for_person`."""

    conversations: Conversations
    remembered: RememberedConsents
    pins: TemplatePins
    budgets: SamplingBudgets
    views: ViewInstances
    view_pins: ViewPins | None = None
    view_states: ViewHostStates | None = None  # what views ask the host to keep (mcp-apps-host/state)


@dataclass
class Host:
    servers: ServerManager
    limits: Limits
    host_origin: str
    sandbox: Sandbox
    stores: Stores | None = None
    audit: AuditLog | None = None
    item_appends: ItemAppends | None = None  # every tab's conversation items, appended together
    consent: ConsentPolicy = field(default_factory=ConsentPolicy)
    sampling: SamplingPolicy = field(default_factory=lambda: SamplingPolicy({}))
    trust_lists: TrustLists | None = None  # None: templates are not checked against pins
    agent: AgentLoop | None = None  # None: no model, tools are called directly
    asks: HostAsks | None = None  # what servers ask the person (elicitation, sampling) goes through here
    granted_permissions: frozenset[str] = DEFAULT_GRANTED_PERMISSIONS
    signer: HandleSigner = field(default_factory=lambda: HandleSigner(None, 24 * 3600))
    bus: Bus = field(default_factory=LocalBus)
    lifecycle: Lifecycle = field(default_factory=Lifecycle)  # the process's graceful stop, shared by every person
    database_probe: DatabaseProbe | None = None  # what readiness asks of the database; None: no database
    signins: SignIns | None = None  # people signing in to servers (MCP authorization)
    conversation_news: ConversationNews = field(default_factory=ConversationNews)  # the bus's, by conversation
    registry: RegistrySync | None = None  # servers admins add while the host runs (None: only the config's)
    admin_key: str | None = None  # the admin API key (`Authorization: Bearer …`); None: no key is accepted
    views: dict[str, MountedView] = field(default_factory=dict)
    # Called with an origin whose renderer may hang (a view there did not answer its teardown): every
    # tab's frames of one origin share a renderer, so each tab lets go of what it holds there.
    origin_hung: set[Callable[[str], None]] = field(default_factory=set)
    _hung_at: dict[str, float] = field(default_factory=dict)  # origin -> when it last hung (monotonic)
    # `serve --watch`: the watched paths of each server; their views re-render when the server restarts.
    watch: dict[str, tuple[str, ...]] = field(default_factory=dict)
    watch_debounce_ms: int = 300
    _watcher: asyncio.Task[None] | None = None
    retention: AuditRetention | None = None  # deletes old audit records ("audit": {"retentionDays": N})
    _retention_task: asyncio.Task[None] | None = None
    saved_templates: set[str] = field(default_factory=set)  # hashes already in the store
    _records: dict[str, asyncio.Future[None]] = field(default_factory=dict)  # view records being written
    # As one person sees it (set by `for_person`):
    identity: Identity = CONSOLE
    conversations: OwnConversations | None = None
    view_pins: OwnViewPins | None = None  # the views this person pinned to the side panel
    view_states: OwnViewHostStates | None = None  # the states this person's views asked the host to keep
    trust: TemplateTrust | None = None
    base_path: str = ""  # where the host is mounted in the embedding app ("" at the root)

    async def write(self, fn: Callable[..., T], *args: Any, urgent: bool = False) -> T:
        """Run a blocking database write off the event loop where it does not fight the audit trail's writer
        for SQLite's one write lock (another thread waits for it in sleeps of milliseconds, a view's mount with it).
        ``urgent``: a person or a view waits for it now (see `AuditLog.run_beside`)."""
        if self.audit is not None:
            return await self.audit.write_in_turn(fn, *args, urgent=urgent)
        return await asyncio.to_thread(fn, *args)

    def hung(self, origin: str) -> None:
        """A view on ``origin`` did not answer its teardown: every tab lets go of what it started ahead there."""
        self._hung_at[origin] = time.monotonic()
        for callback in list(self.origin_hung):
            callback(origin)

    def hung_lately(self, template: Template) -> bool:
        """Whether the origin of ``template``'s views hung in the last `HUNG_ORIGIN_QUIET_S`. The browser
        keeps a renderer a moment after its last frame goes, to reuse it for the next frame of the same site,
        and a renderer a view keeps busy never gets free: a frame made there meanwhile, in any tab, would
        never load. Nothing is loaded ahead there until then; a view the person calls still starts."""
        at = self._hung_at.get(self.sandbox.origin_for(template.server, template.domain))
        return at is not None and time.monotonic() - at < HUNG_ORIGIN_QUIET_S

    def for_person(self, identity: Identity, base_path: str = "") -> Host:
        """This host as ``identity`` sees it; registries, servers and the audit trail stay shared."""
        stores = self.stores
        servers = self.servers.personal(identity, base_path)
        if stores is None:
            return replace(self, identity=identity, base_path=base_path, servers=servers)
        lists = self.trust_lists
        return replace(
            self, identity=identity, base_path=base_path, servers=servers,
            conversations=stores.conversations.bound(identity),
            view_pins=stores.view_pins.bound(identity) if stores.view_pins is not None else None,
            view_states=stores.view_states.bound(identity) if stores.view_states is not None else None,
            consent=self.consent.with_remembered(stores.remembered.bound(identity)),
            sampling=self.sampling.with_budget(stores.budgets.bound(identity)),
            trust=TemplateTrust(stores.pins.bound(identity), lists.allow_hashes, lists.block_hashes,
                                lists.allow_servers, lists.block_servers) if lists is not None else None,
        )

    def prestart_proxy(self, template: Template) -> PrestartedProxy:
        """A view's handle, origin, CSP and signed proxy address made ready before its call: the page
        loads that proxy ahead, and the next view whose template asks for the same origin and policy
        takes it (`register_view`). It renders nothing until the host sends the view's HTML."""
        # The handle is unguessable and never reused; the token signs it to this person.
        handle = secrets.token_urlsafe(18)
        origin = self.sandbox.origin_for(template.server, template.domain)
        # The report address names the view by a signed handle too, so any worker can take the report.
        reports = self.signer.sign(ViewPass(handle, self.identity, origin, ""))
        csp = (build_view_csp(template.csp, report_uri=f"{self.base_path}/csp-report/{reports}")
               + f"; frame-ancestors {self.host_origin}")
        token = self.signer.sign(ViewPass(handle, self.identity, origin, csp))
        return PrestartedProxy(handle, token, origin, csp, proxy_key(origin, template))

    def register_view(self, template: Template, on_csp_report: CspReport, *, tool: str = "",
                      conversation: str | None = None, prestarted: PrestartedProxy | None = None) -> MountedView:
        """A mounted view; on ``prestarted`` (a proxy the page loaded ahead) when its origin and policy fit."""
        origin = self.sandbox.origin_for(template.server, template.domain)
        if prestarted is None or prestarted.key != proxy_key(origin, template):
            prestarted = self.prestart_proxy(template)
        handle, token, csp = prestarted.handle, prestarted.token, prestarted.csp_header
        view = MountedView(handle, self.identity, template, token, origin, csp, on_csp_report)
        self.views[handle] = view
        self._keep(handle, ViewRecord(handle, self.identity, conversation, template.server, tool, template.sha256,
                                      origin, csp))
        return view

    def unregister_view(self, handle: str) -> None:
        self.views.pop(handle, None)
        self._keep(handle, None)

    def _keep(self, handle: str, record: ViewRecord | None) -> None:
        """Put a view on record (or its end), in order per view and off the event loop."""
        if self.stores is None:
            return
        views = self.stores.views
        before = self._records.get(handle)

        async def write() -> None:
            if before is not None:
                await asyncio.gather(before, return_exceptions=True)
            wait = self.limits.database_wait_timeout
            if record is not None:
                await write_retried(lambda: views.add(record), "a view's record", wait, self.write)
            else:
                await write_retried(lambda: views.close(handle), "a view's end", wait, self.write)

        task = asyncio.ensure_future(write())
        self._records[handle] = task
        task.add_done_callback(lambda t: self._records.pop(handle, None) if self._records.get(handle) is t else None)

    def proxy_url(self, handle: str) -> str:
        view = self.views[handle]
        return f"{view.origin}{self.base_path}/proxy/{view.token}"

    def prestarted_url(self, prestarted: PrestartedProxy) -> str:
        return f"{prestarted.origin}{self.base_path}/proxy/{prestarted.token}"

    def csp_report(self, view: ViewPass, report: dict[str, Any]) -> None:
        """A CSP report for a view, delivered where the view lives (this worker, or the one that has it)."""
        mounted = self.views.get(view.handle)
        if mounted is not None and mounted.identity.key == view.identity.key:
            mounted.on_csp_report(report)
        else:
            known = {k: str(v)[:500] for k, v in report.items() if k in _REPORT_KEYS}  # a bus message is small
            self.bus.publish("csp-report", {"handle": view.handle, "tenant": view.identity.tenant,
                                            "user": view.identity.user, "report": known})

    def _deliver_csp_report(self, message: dict[str, Any]) -> None:
        mounted = self.views.get(str(message.get("handle")))
        if mounted is not None and mounted.identity.key == (message.get("tenant"), message.get("user")) \
                and isinstance(message.get("report"), dict):
            mounted.on_csp_report(message["report"])

    async def not_ready(self) -> list[str]:
        """What keeps this process from taking new tabs (empty when ready): "stopping", "database", "bus"."""
        waiting = ["stopping"] if self.lifecycle.stopping else []
        if self.database_probe is not None and not await self.database_probe.reachable():
            waiting.append("database")
        if not self.bus.up:
            waiting.append("bus")
        return waiting

    async def start(self) -> None:
        """Connect the servers (in the background; their status reaches every tab) and the bus."""
        await self.bus.start()
        self.bus.subscribe("csp-report", self._deliver_csp_report)
        self.bus.subscribe("conversation", self.conversation_news.heard)
        if self.signins is not None:
            self.signins.start()
        self.servers.start()
        if self.registry is not None:
            await self.registry.start()
        if self.watch:
            self._watcher = asyncio.create_task(watch_servers(self.servers, self.watch, self.watch_debounce_ms),
                                                name="server-watcher")
        if self.retention is not None:
            self._retention_task = asyncio.create_task(self.retention.run(), name="audit-retention")

    async def stop(self) -> None:
        """Disconnect the servers and the model, then write what the audit trail still holds. A step that does
        not end within `STOP_STEP_S` is left behind, named in the log: the audit trail is written all the same."""
        for task in (self._watcher, self._retention_task):
            if task is not None:
                task.cancel()
                await _stop_step(task.get_name(), asyncio.gather(task, return_exceptions=True))
        await _stop_step("closing the servers' connections", self.servers.stop())
        await _stop_step("closing the bus", self.bus.stop())
        if self.agent is not None:
            await _stop_step("closing the model's client", self.agent.adapter.aclose())
        if self.audit is not None:
            await asyncio.to_thread(self.audit.close)
        await tracing.flush()  # the spans still batched, before the process ends


async def _stop_step(what: str, step: Awaitable[Any]) -> None:
    """Wait for one step of the stop, at most `STOP_STEP_S`; one that hangs is logged with the tasks still
    waiting and where (``asyncio.wait_for`` would wait for ever for a task that does not end when cancelled)."""
    task = asyncio.ensure_future(step)
    done, _ = await asyncio.wait({task}, timeout=STOP_STEP_S)
    if done:
        task.result()
        return
    here = asyncio.current_task()
    waiting = "; ".join(f"{t.get_name()} at {_waits_in(t)}" for t in asyncio.all_tasks() if t is not here)
    log.error("stopping: %s did not end within %g s; the stop goes on without it (tasks waiting: %s)",
              what, STOP_STEP_S, waiting or "none")


_ASYNCIO_DIR: Final = os.path.dirname(asyncio.__file__) + os.sep


def _waits_in(task: asyncio.Task[Any]) -> str:
    """Where a task waits: the innermost of its coroutines that is not asyncio's own, as file:line."""
    where, coro = "?", cast(Any, task.get_coro())
    while (frame := getattr(coro, "cr_frame", None)) is not None:
        if not frame.f_code.co_filename.startswith(_ASYNCIO_DIR):
            where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
        coro = getattr(coro, "cr_await", None)
    return where

