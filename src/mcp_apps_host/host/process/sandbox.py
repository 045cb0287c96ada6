"""Where views run: the sandbox origin(s), kept apart from the host page's.

The origin is a template: with ``{label}`` in its host, each server gets an origin of
its own (``http://{label}.localhost:8766``; browsers resolve ``*.localhost`` to
loopback), so one server's views cannot read another's storage; without it, all views
share one sandbox origin.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

LABEL = "{label}"


@dataclass(frozen=True)
class Sandbox:
    template: str

    @classmethod
    def on_port(cls, scheme: str, host: str, port: int, per_server: bool) -> Sandbox:
        """A sandbox on a port of its own: one origin per server under ``host``, or one for all."""
        return cls(f"{scheme}://{LABEL + '.' if per_server else ''}{host}:{port}")

    @property
    def per_server(self) -> bool:
        return LABEL in self.template

    @property
    def page_sources(self) -> list[str]:
        """What the host page's `frame-src` admits: the sandbox origin(s) and nothing else."""
        return [self.template.replace(LABEL, "*")]

    def origin_for(self, server: str, domain: str | None = None) -> str:
        return self.template.replace(LABEL, self.label(server, domain))

    @staticmethod
    def label(server: str, domain: str | None = None) -> str:
        """A stable DNS label per server (and per requested `_meta.ui.domain`), readable where possible."""
        readable = re.sub(r"[^a-z0-9-]+", "-", server.lower()).strip("-")[:40] or "server"
        digest = hashlib.sha256(f"{server}\0{domain or ''}".encode()).hexdigest()[:8]
        return f"{readable}-{digest}"

    def host_allowed(self, host_header: str | None) -> bool:
        """A Host header naming the sandbox (or, per server, one of its labels), port included."""
        if not host_header:
            return False
        netloc = urlsplit(self.template.replace(LABEL, "label")).netloc
        pattern = re.escape(netloc).replace("label", "[a-z0-9]([a-z0-9-]*[a-z0-9])?", 1) if self.per_server \
            else re.escape(netloc)
        return re.fullmatch(pattern, host_header.lower()) is not None
