"""Who may talk to the host: the access token and its session cookie, and which Host names
and Origins are the host page's own.

The Host check stops DNS rebinding (a hostile site whose name resolves to 127.0.0.1);
the Origin check stops any other site — including the sandbox origin, where views
run — from using the API or the WebSocket.
"""

from __future__ import annotations

import ipaddress
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

COOKIE = "mah_session"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Access:
    token: str
    bind_host: str
    port: int

    def allowed_hosts(self) -> set[str]:
        names = {self.bind_host}
        if is_loopback(self.bind_host) or self.bind_host in ("0.0.0.0", "::"):
            names |= {"127.0.0.1", "localhost", "[::1]"}
        return {f"{n}:{self.port}" for n in names}

    def host_ok(self, host_header: str | None) -> bool:
        return host_header is not None and host_header.lower() in self.allowed_hosts()

    def origin_ok(self, origin: str | None, host_header: str | None) -> bool:
        """The request comes from the host page itself (same scheme, host and port)."""
        if origin is None or not self.host_ok(host_header):
            return False
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and parts.netloc.lower() == (host_header or "").lower()

    def token_ok(self, value: str | None) -> bool:
        return value is not None and secrets.compare_digest(value.encode(), self.token.encode())
