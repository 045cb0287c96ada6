"""The host: servers, policies, stores, and the views that are mounted now (by handle)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..chat.agent import AgentLoop
from ..policy.consent import ConsentPolicy, SamplingPolicy
from ..policy.csp import build_view_csp
from ..policy.trust import TemplateTrust
from ..servers.manager import ServerManager
from ..settings import Limits
from ..store.audit import AuditLog
from ..store.conversations import Conversations
from ..values.templates import Template
from .sandbox import Sandbox
from .serverasks import HostAsks

# Browser features a view may be granted through the iframe `allow` attribute when it asks.
DEFAULT_GRANTED_PERMISSIONS = frozenset({"clipboard-write"})

CspReport = Callable[[dict[str, Any]], None]


@dataclass
class MountedView:
    """What the sandbox origin needs of a view: its origin, its CSP, and where its CSP reports go."""

    handle: str
    template: Template
    origin: str  # the sandbox origin this view runs on
    csp_header: str
    on_csp_report: CspReport


@dataclass
class Host:
    servers: ServerManager
    limits: Limits
    host_origin: str
    sandbox: Sandbox
    conversations: Conversations | None = None
    audit: AuditLog | None = None
    consent: ConsentPolicy = field(default_factory=ConsentPolicy)
    sampling: SamplingPolicy = field(default_factory=lambda: SamplingPolicy({}))
    trust: TemplateTrust | None = None
    agent: AgentLoop | None = None  # None: no model, tools are called directly
    asks: HostAsks | None = None  # what servers ask the person (elicitation, sampling) goes through here
    granted_permissions: frozenset[str] = DEFAULT_GRANTED_PERMISSIONS
    views: dict[str, MountedView] = field(default_factory=dict)
    saved_templates: set[str] = field(default_factory=set)  # hashes already in the store

    def register_view(self, template: Template, on_csp_report: CspReport) -> MountedView:
        # The handle is the only key to the proxy page and its CSP: unguessable, never reused.
        handle = secrets.token_urlsafe(18)
        origin = self.sandbox.origin_for(template.server, template.domain)
        csp = (build_view_csp(template.csp, report_uri=f"/csp-report/{handle}")
               + f"; frame-ancestors {self.host_origin}")
        view = MountedView(handle, template, origin, csp, on_csp_report)
        self.views[handle] = view
        return view

    def unregister_view(self, handle: str) -> None:
        self.views.pop(handle, None)

    def proxy_url(self, handle: str) -> str:
        return f"{self.views[handle].origin}/proxy/{handle}"

    def start(self) -> None:
        """Connect the servers (in the background; their status reaches every tab)."""
        self.servers.start()

    async def stop(self) -> None:
        """Disconnect the servers and the model, then write what the audit trail still holds."""
        await self.servers.stop()
        if self.agent is not None:
            await self.agent.adapter.aclose()
        if self.audit is not None:
            await asyncio.to_thread(self.audit.close)
