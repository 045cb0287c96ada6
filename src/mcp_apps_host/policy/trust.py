"""Template trust: pin each template's hash on first use, hold back changed ones, review risky HTML.

A server may change the HTML behind a ``ui://`` URI at any time, and a view runs
with whatever the person already allowed that server to do. So the first template
seen for a (server, URI) is pinned by its SHA-256; a later, different template is
reported as ``changed`` and must not render until the person has seen the old and
new hash and accepted (:meth:`TemplateTrust.accept`). Configured lists override
pinning: a blocked hash or server never renders, an allowed hash or server always
does (block wins over allow).

:func:`review_html` is a static look at a template when it is prefetched. It finds
patterns a person should know about before trusting a view; its warnings are shown
next to the view and block nothing.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any, Final, Literal
from urllib.parse import urljoin, urlsplit

from sqlalchemy import (
    Column,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    create_engine,
    delete,
    insert,
    select,
    update,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from .csp import ViewCsp
from .links import describe_link

if TYPE_CHECKING:
    from ..servers.templates import Template

__all__ = [
    "TemplateTrust",
    "TrustStatus",
    "TrustVerdict",
    "csp_entry_for",
    "origin_allowed",
    "review_html",
]

TrustStatus = Literal["new", "trusted", "changed", "blocked", "allowed"]
_SHA256 = re.compile(r"[0-9a-f]{64}")
MAX_WARNINGS: Final = 50

metadata = MetaData()

template_pins = Table(
    "template_pins",
    metadata,
    Column("server", String(128), primary_key=True),
    Column("uri", String(1024), primary_key=True),
    Column("sha256", String(64), nullable=False),
    Column("size", Integer, nullable=False),
    Column("first_seen", Float, nullable=False),
    # When the person accepted the pinned hash; NULL for a pin taken on first use.
    Column("accepted_at", Float, nullable=True),
)


def _hashes(name: str, values: Iterable[str]) -> frozenset[str]:
    out = set()
    for value in values:
        text = value.strip().lower() if isinstance(value, str) else value
        if not isinstance(text, str) or not _SHA256.fullmatch(text):
            raise ValueError(f"{name}: {value!r} is not a hex SHA-256")
        out.add(text)
    return frozenset(out)


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

    @property
    def size_diff(self) -> int | None:
        return None if self.pinned_size is None else self.size - self.pinned_size


class TemplateTrust:
    """Pins per (server, URI) in the ``template_pins`` table, plus allow- and block-lists."""

    def __init__(
        self,
        engine: Engine | str,
        allow_hashes: Iterable[str] = (),
        block_hashes: Iterable[str] = (),
        allow_servers: Iterable[str] = (),
        block_servers: Iterable[str] = (),
    ) -> None:
        self.engine = create_engine(engine) if isinstance(engine, str) else engine
        self.allow_hashes = _hashes("allow_hashes", allow_hashes)
        self.block_hashes = _hashes("block_hashes", block_hashes)
        self.allow_servers = frozenset(allow_servers)
        self.block_servers = frozenset(block_servers)
        self._lock = threading.Lock()
        metadata.create_all(self.engine, tables=[template_pins])

    def pin(self, server: str, uri: str) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(template_pins).where(template_pins.c.server == server, template_pins.c.uri == uri)
            ).first()
        return dict(row._mapping) if row is not None else None

    def check(self, template: Template) -> TrustVerdict:
        """Decide whether the template may render; records the pin on first use."""
        server, uri, sha, size = template.server, template.uri, template.sha256.lower(), template.size

        def verdict(status: TrustStatus, pin: dict[str, Any] | None, reason: str) -> TrustVerdict:
            return TrustVerdict(
                status,
                pin["sha256"] if pin else None,
                pin["size"] if pin else None,
                reason,
                sha,
                size,
            )

        if sha in self.block_hashes:
            return verdict("blocked", None, f"template hash {sha} is on the block-list")
        if server in self.block_servers:
            return verdict("blocked", None, f"server {server!r} is on the block-list")
        with self._lock:
            pin = self.pin(server, uri)
            if pin is None:
                pin = self._insert_pin(server, uri, sha, size)
                if pin["sha256"] == sha:  # ours, or an identical one written at the same time
                    if sha in self.allow_hashes or server in self.allow_servers:
                        return verdict("allowed", pin, self._allow_reason(server, sha))
                    return verdict("new", pin, f"first use of {uri} from {server!r}; hash pinned")
        if sha in self.allow_hashes or server in self.allow_servers:
            # The pin stays as it was: it is what the person last saw and accepted.
            return verdict("allowed", pin, self._allow_reason(server, sha))
        if pin["sha256"] == sha:
            return verdict("trusted", pin, f"matches the hash pinned for {uri} from {server!r}")
        return verdict("changed", pin, _change_text(server, uri, pin["sha256"], pin["size"], sha, size))

    def _allow_reason(self, server: str, sha: str) -> str:
        if sha in self.allow_hashes:
            return f"template hash {sha} is on the allow-list"
        return f"server {server!r} is on the allow-list"

    def _insert_pin(self, server: str, uri: str, sha: str, size: int) -> dict[str, Any]:
        row = {
            "server": server,
            "uri": uri,
            "sha256": sha,
            "size": size,
            "first_seen": time.time(),
            "accepted_at": None,
        }
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(template_pins), [row])
        except IntegrityError:
            # Another process pinned it first: its pin is the one that counts.
            existing = self.pin(server, uri)
            if existing is not None:
                return existing
            raise
        return row

    def accept(self, server: str, uri: str, sha256: str, size: int) -> None:
        """The person saw the change notice and accepted this template: pin it."""
        sha = sha256.strip().lower()
        if not _SHA256.fullmatch(sha):
            raise ValueError(f"sha256: {sha256!r} is not a hex SHA-256")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ValueError(f"size: {size!r} is not a byte count")
        now = time.time()
        with self._lock, self.engine.begin() as conn:
            key = (template_pins.c.server == server) & (template_pins.c.uri == uri)
            changed = conn.execute(
                update(template_pins).where(key).values(sha256=sha, size=size, accepted_at=now)
            ).rowcount
            if changed == 0:
                conn.execute(
                    insert(template_pins),
                    [
                        {
                            "server": server,
                            "uri": uri,
                            "sha256": sha,
                            "size": size,
                            "first_seen": now,
                            "accepted_at": now,
                        }
                    ],
                )

    def forget(self, server: str, uri: str | None = None) -> None:
        """Drop pins (all of a server's, or one URI's): the next template is treated as new."""
        with self._lock, self.engine.begin() as conn:
            cond = template_pins.c.server == server
            if uri is not None:
                cond = cond & (template_pins.c.uri == uri)
            conn.execute(delete(template_pins).where(cond))


def _change_text(server: str, uri: str, old_sha: str, old_size: int, new_sha: str, new_size: int) -> str:
    diff = new_size - old_size
    return (
        f"server {server!r} now serves a different template for {uri}: "
        f"pinned sha256 {old_sha} ({old_size} bytes), new sha256 {new_sha} "
        f"({new_size} bytes, {diff:+d} bytes); it will not render until accepted"
    )


# -- origin matching for declared CSP sources -------------------------------------------------------

_DEFAULT_PORTS: Final = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def _source_matches(source: str, scheme: str, host: str, port: int) -> bool:
    """Whether one normalised ``ViewCsp`` source (``https://*.example.com:8443``) admits the origin."""
    src_scheme, _, rest = source.partition("://")
    src_host, sep, src_port = rest.partition(":")
    # CSP lets an http source also match https (and ws match wss): a secure upgrade.
    if not (scheme == src_scheme or (src_scheme, scheme) in (("http", "https"), ("ws", "wss"))):
        return False
    if src_host.startswith("*."):
        if not host.endswith(src_host[1:]):  # a strict subdomain; '*.example.com' not 'example.com'
            return False
    elif host != src_host:
        return False
    if sep and src_port == "*":
        return True
    if sep:
        return port == int(src_port)
    return port == _DEFAULT_PORTS.get(src_scheme) or (
        src_scheme == "http" and scheme == "https" and port == 443
    )


def origin_allowed(url: str, sources: Iterable[str]) -> bool:
    """Whether an absolute http(s)/ws(s) URL's origin is admitted by any of the sources."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in ("http", "https"):
        info = describe_link(url)
        host = info.host_ascii.rstrip(".")
        port = info.port if info.port is not None else _DEFAULT_PORTS[scheme]
    elif scheme in ("ws", "wss"):
        host = (parts.hostname or "").rstrip(".")
        port = parts.port if parts.port is not None else _DEFAULT_PORTS[scheme]
    else:
        return False
    return any(_source_matches(src, scheme, host, port) for src in sources)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = parts.hostname or ""
    try:
        host = describe_link(url).host_ascii if scheme in ("http", "https") else host
    except ValueError:
        pass
    default = _DEFAULT_PORTS.get(scheme)
    port = parts.port
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}" + (f":{port}" if port is not None and port != default else "")


_DIRECTIVE_KEYS: Final = {
    "connect-src": "connectDomains",
    "script-src": "resourceDomains",
    "script-src-elem": "resourceDomains",
    "style-src": "resourceDomains",
    "style-src-elem": "resourceDomains",
    "img-src": "resourceDomains",
    "font-src": "resourceDomains",
    "media-src": "resourceDomains",
    "frame-src": "frameDomains",
    "child-src": "frameDomains",
    "base-uri": "baseUriDomains",
}


def csp_entry_for(blocked_url: str, directive: str) -> tuple[str, str] | None:
    """For a CSP violation report: the ``_meta.ui.csp`` key and origin that would allow the URL.

    ``("resourceDomains", "https://cdn.example.com")``; None when no declaration can
    allow it (inline code, eval, ``data:``, a directive views cannot widen).
    """
    key = _DIRECTIVE_KEYS.get(directive.strip().lower())
    if key is None or not isinstance(blocked_url, str):
        return None
    parts = urlsplit(blocked_url.strip())
    scheme = parts.scheme.lower()
    allowed = ("http", "https", "ws", "wss") if key == "connectDomains" else ("http", "https")
    if scheme not in allowed or not parts.hostname:
        return None
    try:
        return key, _origin(blocked_url.strip())
    except ValueError:
        return None


# -- static review ----------------------------------------------------------------------------------

_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
_CSS_IMPORT = re.compile(
    r"@import\s+(?:url\(\s*(?P<q1>['\"]?)(?P<u1>[^'\")]*)(?P=q1)\s*\)|(?P<q2>['\"])(?P<u2>.*?)(?P=q2))",
    re.IGNORECASE | re.DOTALL,
)


def _show(url: str) -> str:
    return url if len(url) <= 200 else url[:197] + "..."


class _Reviewer(HTMLParser):
    def __init__(self, csp: ViewCsp) -> None:
        super().__init__(convert_charrefs=True)
        self.csp = csp
        self.base: str | None = None
        self._base_seen = False
        self.warnings: list[str] = []
        self._style: list[str] | None = None

    def warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)

    def external(self, element: str, raw: str, kind: str) -> None:
        """Warn when ``raw`` resolves to an http(s) origin the declared resourceDomains do not cover."""
        url = raw.strip()
        if not url:
            return
        if url.startswith("//"):
            url = "https:" + url  # protocol-relative: judged as the https a deployed view would use
        elif self.base is not None:
            url = urljoin(self.base, url)
        if urlsplit(url).scheme.lower() not in ("http", "https"):
            return  # relative ('self'), data:, blob: and the like are not external origins
        try:
            covered = origin_allowed(url, self.csp.resource_domains)
        except ValueError as exc:
            self.warn(f"{element} loads {kind} from {_show(url)}, a URL the host cannot parse ({exc})")
            return
        if not covered:
            self.warn(
                f"{element} loads {kind} from {_show(url)}: origin {_origin(url)} is not covered by "
                f"_meta.ui.csp.resourceDomains, so the view's CSP will block it"
            )

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {name.lower(): (value or "") for name, value in attrs}
        if tag == "input" and a.get("type", "").strip().lower() == "password":
            named = f' name="{a["name"]}"' if a.get("name") else ""
            self.warn(f'<input type="password"{named}>: the view asks for a password')
        elif tag == "script":
            src = a.get("src") or a.get("href") or a.get("xlink:href")
            if src:
                self.external(f'<script src="{_show(src.strip())}">', src, "a script")
        elif tag == "link":
            rel = a.get("rel", "").lower().split()
            href = a.get("href", "")
            kind = None
            if "stylesheet" in rel:
                kind = "a stylesheet"
            elif "modulepreload" in rel or (
                "preload" in rel and a.get("as", "").lower() in ("script", "style")
            ):
                kind = "a script" if a.get("as", "script").lower() == "script" else "a stylesheet"
            if kind and href:
                self.external(f'<link rel="{a.get("rel", "")}" href="{_show(href.strip())}">', href, kind)
        elif tag == "meta" and a.get("http-equiv", "").strip().lower() == "refresh":
            content = a.get("content", "")
            target = ""
            match = re.search(r"url\s*=\s*['\"]?([^'\"]*)", content, re.IGNORECASE)
            if match:
                target = f" to {_show(match.group(1).strip())}"
            self.warn(
                f'<meta http-equiv="refresh" content="{_show(content)}">: the view navigates itself{target}'
            )
        elif tag == "base" and "href" in a:
            href = a["href"].strip()
            allowed = False
            note = ""
            if urlsplit(href).scheme.lower() in ("http", "https"):
                try:
                    allowed = origin_allowed(href, self.csp.base_uri_domains)
                except ValueError:
                    allowed = False
                note = (
                    " (declared in baseUriDomains)"
                    if allowed
                    else " (not in baseUriDomains, so the view's CSP will block it)"
                )
            self.warn(f'<base href="{_show(href)}">: changes where every relative URL points{note}')
            # Only the first <base> counts, and only if the CSP lets it take effect.
            if not self._base_seen and allowed:
                self.base = href
            self._base_seen = True
        elif tag == "style":
            self._style = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "style" and self._style is not None:
            self._css("".join(self._style))
            self._style = None

    def handle_data(self, data: str) -> None:
        if self._style is not None:
            self._style.append(data)

    def close(self) -> None:
        super().close()
        if self._style is not None:  # an unclosed <style> still applies
            self._css("".join(self._style))
            self._style = None

    def _css(self, css: str) -> None:
        for match in _CSS_IMPORT.finditer(_CSS_COMMENT.sub("", css)):
            url = (match.group("u1") if match.group("u1") is not None else match.group("u2")) or ""
            if url.strip():
                self.external(f'@import url("{_show(url.strip())}") in <style>', url, "a stylesheet")


def review_html(html: str, csp: ViewCsp) -> list[str]:
    """Static warnings for a template: password inputs, external scripts or stylesheets
    outside the declared ``resourceDomains``, ``<meta http-equiv="refresh">`` and ``<base href>``.

    Each warning names the element and the URL. Parsed with the stdlib HTML parser, so
    text inside ``<script>`` is not mistaken for tags.
    """
    reviewer = _Reviewer(csp)
    reviewer.feed(html)
    reviewer.close()
    warnings = reviewer.warnings
    if len(warnings) > MAX_WARNINGS:
        warnings = warnings[:MAX_WARNINGS] + [f"... and {len(warnings) - MAX_WARNINGS} more warnings"]
    return warnings
