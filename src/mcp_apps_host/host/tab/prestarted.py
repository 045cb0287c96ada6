"""Sandbox proxies a tab's page loads ahead: one per server origin and policy its views need, so a
view starts on a proxy that is already up (its renderer process too) instead of loading one.

The host signs each proxy's address ahead (`Host.prestart_proxy`); a mount takes the one whose
origin, policy and `allow` fit its template, and another is prestarted for the next view. A prestarted
proxy holds no HTML: the view's template goes to it only after the mount was decided (trust,
pins, audit), as for any view.
"""

from __future__ import annotations

from ...policy.csp import allow_attribute
from ...values.templates import Template
from ..process.core import Host, PrestartedProxy, proxy_key
from . import frames as f
from .page import Page


class PrestartedProxies:
    def __init__(self, host: Host, page: Page) -> None:
        self.host = host
        self.page = page
        self.ready: dict[str, PrestartedProxy] = {}  # by what a view needs of its proxy (`need`)

    def refresh(self) -> None:
        """Prepare a proxy for each origin and policy the ready servers' known templates need, up to the limit."""
        for conn in self.host.servers.connections.values():
            if str(conn.status) != "ready":
                continue
            for tool in conn.tools.values():
                template = conn.templates.get(tool.resource_uri) if tool.resource_uri else None
                if isinstance(template, Template):
                    self.prepare(template)

    def prepare(self, template: Template) -> None:
        need = self.need(template)
        if need in self.ready or len(self.ready) >= self.host.limits.prestarted_proxies_per_tab:
            return
        if self.host.hung_lately(template):
            return
        prestarted = self.host.prestart_proxy(template)
        self.ready[need] = prestarted
        self.page.send(f.ViewPrestart(key=prestarted.handle, proxy_url=self.host.prestarted_url(prestarted),
                                      sandbox_origin=prestarted.origin, permissions=self._allow(template),
                                      keep=[p.handle for p in self.ready.values()]))

    def take(self, template: Template) -> PrestartedProxy | None:
        """The prestarted proxy this template's view can run in, or None. Prepare the next one after the
        view's mount: a `view-prestart` lists every proxy the page should keep, and this one is gone."""
        return self.ready.pop(self.need(template), None)

    def drop_origin(self, origin: str) -> None:
        """Forget the proxies prestarted on ``origin`` (its renderer may hang); the page lets them go."""
        dropped = [need for need, p in self.ready.items() if p.origin == origin]
        for need in dropped:
            del self.ready[need]
        if dropped:
            # A `view-prestart` with no key only says which proxies the page should keep.
            self.page.send(f.ViewPrestart(key="", proxy_url="", sandbox_origin="", permissions="",
                                          keep=[p.handle for p in self.ready.values()]))

    def _allow(self, template: Template) -> str:
        return allow_attribute(template.permissions, self.host.granted_permissions)

    def need(self, template: Template) -> str:
        """What a view of ``template`` needs of its proxy: origin, policy and `allow`."""
        origin = self.host.sandbox.origin_for(template.server, template.domain)
        return f"{proxy_key(origin, template)} allow={self._allow(template)}"
