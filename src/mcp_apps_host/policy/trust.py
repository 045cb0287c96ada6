"""Template trust: pin each template's hash on first use, hold back changed ones.

A server may change the HTML behind a ``ui://`` URI at any time, and a view runs
with whatever the person already allowed that server to do. So the first template
seen for a (server, URI) is pinned by its SHA-256; a later, different template is
reported as ``changed`` and must not render until the person has seen the old and
new hash and accepted (:meth:`TemplateTrust.accept`). Configured lists override
pinning: a blocked hash or server never renders, an allowed hash or server always
does (block wins over allow). Where pins are kept is the store's business
(:class:`PinStore`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..config.policies import sha256_set
from ..values.templates import Template

__all__ = ["PinStore", "TemplateTrust", "TrustStatus", "TrustVerdict"]

TrustStatus = Literal["new", "trusted", "changed", "blocked", "allowed"]
_SHA256 = re.compile(r"[0-9a-f]{64}")


class PinStore(Protocol):
    """Pins by (server, URI): dicts with at least ``sha256`` and ``size``."""

    def get(self, server: str, uri: str) -> dict[str, Any] | None: ...

    def pin_first(self, server: str, uri: str, sha256: str, size: int) -> tuple[dict[str, Any], bool]:
        """The pin, taking this hash if there is none yet; True when this call took it."""
        ...

    def accept(self, server: str, uri: str, sha256: str, size: int) -> None: ...


@dataclass(frozen=True)
class TrustVerdict:
    """What to do with a template. ``render`` is False for ``changed`` and ``blocked``."""

    status: TrustStatus
    pinned_sha256: str | None
    pinned_size: int | None
    reason: str
    sha256: str = ""
    size: int = 0

    @property
    def render(self) -> bool:
        return self.status in ("new", "trusted", "allowed")


class TemplateTrust:
    """Pins per (server, URI), plus allow- and block-lists."""

    def __init__(
        self,
        pins: PinStore,
        allow_hashes: Iterable[str] = (),
        block_hashes: Iterable[str] = (),
        allow_servers: Iterable[str] = (),
        block_servers: Iterable[str] = (),
    ) -> None:
        self.pins = pins
        self.allow_hashes = sha256_set("allow_hashes", list(allow_hashes))
        self.block_hashes = sha256_set("block_hashes", list(block_hashes))
        self.allow_servers = frozenset(allow_servers)
        self.block_servers = frozenset(block_servers)

    def check(self, template: Template) -> TrustVerdict:
        """Decide whether the template may render; records the pin on first use."""
        server, uri, sha, size = template.server, template.uri, template.sha256.lower(), template.size

        def verdict(status: TrustStatus, pin: dict[str, Any] | None, reason: str) -> TrustVerdict:
            return TrustVerdict(status, pin["sha256"] if pin else None, pin["size"] if pin else None, reason, sha, size)

        if sha in self.block_hashes:
            return verdict("blocked", None, f"template hash {sha} is on the block-list")
        if server in self.block_servers:
            return verdict("blocked", None, f"server {server!r} is on the block-list")
        pin, first_use = self.pins.pin_first(server, uri, sha, size)
        listed = sha in self.allow_hashes or server in self.allow_servers
        if listed:
            # A pin taken now is this hash; an older one stays as it was: what the person last accepted.
            return verdict("allowed", pin, self._allow_reason(server, sha))
        if pin["sha256"] == sha:
            if first_use:
                return verdict("new", pin, f"first use of {uri} from {server!r}; hash pinned")
            return verdict("trusted", pin, f"matches the hash pinned for {uri} from {server!r}")
        return verdict("changed", pin, _change_text(server, uri, pin["sha256"], pin["size"], sha, size))

    def blocked(self, template: Template) -> bool:
        """On a block-list (its hash, or its server); no pin is read or taken."""
        return template.sha256.lower() in self.block_hashes or template.server in self.block_servers

    def accepted(self, template: Template) -> bool:
        """Would render without asking, and pins nothing: its hash is the one pinned, or a list allows it."""
        return self._unasked(template, first_use=False)

    def renders_unasked(self, template: Template) -> bool:
        """Would render without asking when called, and pins nothing: accepted, or never seen (a first use
        is pinned, not asked about)."""
        return self._unasked(template, first_use=True)

    def _unasked(self, template: Template, first_use: bool) -> bool:
        if self.blocked(template):
            return False
        sha = template.sha256.lower()
        if sha in self.allow_hashes or template.server in self.allow_servers:
            return True
        pin = self.pins.get(template.server, template.uri)
        return first_use if pin is None else pin["sha256"] == sha

    def _allow_reason(self, server: str, sha: str) -> str:
        if sha in self.allow_hashes:
            return f"template hash {sha} is on the allow-list"
        return f"server {server!r} is on the allow-list"

    def accept(self, server: str, uri: str, sha256: str, size: int) -> None:
        """The person saw the change notice and accepted this template: pin it."""
        sha = sha256.strip().lower()
        if not _SHA256.fullmatch(sha):
            raise ValueError(f"sha256: {sha256!r} is not a hex SHA-256")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ValueError(f"size: {size!r} is not a byte count")
        self.pins.accept(server, uri, sha, size)


def _change_text(server: str, uri: str, old_sha: str, old_size: int, new_sha: str, new_size: int) -> str:
    diff = new_size - old_size
    return (
        f"server {server!r} now serves a different template for {uri}: "
        f"pinned sha256 {old_sha} ({old_size} bytes), new sha256 {new_sha} "
        f"({new_size} bytes, {diff:+d} bytes); it will not render until accepted"
    )
