"""The host: servers, policies, the views that are mounted now, and where the sandbox lives."""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, field

from ..chat.agent import AgentLoop
from ..policy.consent import ConsentPolicy, SamplingPolicy
from ..policy.csp import build_view_csp
from ..policy.trust import TemplateTrust
from ..servers.manager import ServerManager
from ..servers.templates import Template
from ..settings import Limits
from ..store.audit import AuditLog
from ..store.db import Store

# Browser features a view may be granted through the iframe `allow` attribute when it asks.
DEFAULT_GRANTED_PERMISSIONS = frozenset({"clipboard-write"})


@dataclass
class MountedView:
    handle: str
    owner: object  # the tab's ViewHost that mounted it
    template: Template
    origin: str  # the sandbox origin this view runs on
    csp_header: str


@dataclass
class Sandbox:
    """Where views run. With `per_server`, each server gets its own origin under `*.localhost`
    (which browsers resolve to loopback), so one server's views cannot read another's storage."""

    scheme: str
    host: str
    port: int
    per_server: bool

    @property
    def shared_origin(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    @property
    def page_sources(self) -> list[str]:
        """What the host page's `frame-src` admits: the sandbox origin(s) and nothing else."""
        if self.per_server:
            return [f"{self.scheme}://*.{self.host}:{self.port}"]
        return [self.shared_origin]

    def origin_for(self, server: str, domain: str | None = None) -> str:
        if not self.per_server:
            return self.shared_origin
        return f"{self.scheme}://{self.label(server, domain)}.{self.host}:{self.port}"

    @staticmethod
    def label(server: str, domain: str | None = None) -> str:
        """A stable DNS label per server (and per requested `_meta.ui.domain`), readable where possible."""
        readable = re.sub(r"[^a-z0-9-]+", "-", server.lower()).strip("-")[:40] or "server"
        digest = hashlib.sha256(f"{server}\0{domain or ''}".encode()).hexdigest()[:8]
        return f"{readable}-{digest}"

    def host_allowed(self, host_header: str | None) -> bool:
        if not host_header:
            return False
        name, _, port = host_header.lower().rpartition(":")
        if port != str(self.port):
            return False
        return name == self.host or (self.per_server and name.endswith("." + self.host))


@dataclass
class Host:
    servers: ServerManager
    limits: Limits
    host_origin: str
    sandbox: Sandbox
    store: Store | None = None
    audit: AuditLog | None = None
    consent: ConsentPolicy = field(default_factory=ConsentPolicy)
    sampling: SamplingPolicy = field(default_factory=lambda: SamplingPolicy({}))
    trust: TemplateTrust | None = None
    agent: AgentLoop | None = None  # None: no model, tools are called directly
    granted_permissions: frozenset[str] = DEFAULT_GRANTED_PERMISSIONS
    views: dict[str, MountedView] = field(default_factory=dict)
    saved_templates: set[str] = field(default_factory=set)  # hashes already in the store

    @property
    def sandbox_origin(self) -> str:
        return self.sandbox.shared_origin

    def register_view(self, owner: object, template: Template) -> MountedView:
        # The handle is the only key to the proxy page and its CSP: unguessable, never reused.
        handle = secrets.token_urlsafe(18)
        origin = self.sandbox.origin_for(template.server, template.domain)
        csp = (build_view_csp(template.csp, report_uri=f"/csp-report/{handle}")
               + f"; frame-ancestors {self.host_origin}")
        view = MountedView(handle, owner, template, origin, csp)
        self.views[handle] = view
        return view

    def unregister_view(self, handle: str) -> None:
        self.views.pop(handle, None)

    def proxy_url(self, handle: str) -> str:
        return f"{self.views[handle].origin}/proxy/{handle}"
