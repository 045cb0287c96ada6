"""Where views run: the sandbox origin(s), kept apart from the host page's."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Sandbox:
    """With `per_server`, each server gets its own origin under `*.localhost` (which browsers
    resolve to loopback), so one server's views cannot read another's storage."""

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
        """A Host header naming the sandbox (or, per server, one of its subdomains) on its port."""
        if not host_header:
            return False
        name, _, port = host_header.lower().rpartition(":")
        if port != str(self.port):
            return False
        return name == self.host or (self.per_server and name.endswith("." + self.host))
