"""The host: servers, the views that are mounted now, and where the sandbox lives."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from ..policy.csp import build_view_csp
from ..servers.manager import ServerManager
from ..servers.templates import Template
from ..settings import Limits
from ..store.db import Store

# Browser features a view may be granted through the iframe `allow` attribute when it asks.
DEFAULT_GRANTED_PERMISSIONS = frozenset({"clipboard-write"})


@dataclass
class MountedView:
    handle: str
    owner: object  # the tab's ViewHost that mounted it
    template: Template
    csp_header: str


@dataclass
class Host:
    servers: ServerManager
    limits: Limits
    host_origin: str
    sandbox_origin: str
    store: Store | None = None
    granted_permissions: frozenset[str] = DEFAULT_GRANTED_PERMISSIONS
    views: dict[str, MountedView] = field(default_factory=dict)
    saved_templates: set[str] = field(default_factory=set)  # hashes already in the store

    def register_view(self, owner: object, template: Template) -> MountedView:
        # The handle is the only key to the proxy page and its CSP: unguessable, never reused.
        handle = secrets.token_urlsafe(18)
        csp = build_view_csp(template.csp) + f"; frame-ancestors {self.host_origin}"
        view = MountedView(handle, owner, template, csp)
        self.views[handle] = view
        return view

    def unregister_view(self, handle: str) -> None:
        self.views.pop(handle, None)

    def proxy_url(self, handle: str) -> str:
        return f"{self.sandbox_origin}/proxy/{handle}"
