"""A static look at a template, and which `_meta.ui.csp` entry would admit a blocked URL.

:func:`review_html` runs when a template is first used. It finds patterns a person
should know about before trusting a view; its warnings are shown next to the view and
block nothing. :func:`csp_entry_for` turns a CSP violation report into the declaration
the view's author would need.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from html.parser import HTMLParser
from typing import Final
from urllib.parse import urljoin, urlsplit

from ..values.csp import ViewCsp
from ..values.links import describe_link

__all__ = ["csp_entry_for", "origin_allowed", "review_html"]

MAX_WARNINGS: Final = 50
# The host takes WebRTC away from views (no CSP directive covers where ICE connects).
_WEBRTC = re.compile(r"\b(?:webkit)?RTCPeerConnection\b")


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
    outside the declared ``resourceDomains``, ``<meta http-equiv="refresh">``, ``<base href>`` and
    WebRTC, which views do not get.

    Each warning names the element and the URL. Parsed with the stdlib HTML parser, so
    text inside ``<script>`` is not mistaken for tags.
    """
    reviewer = _Reviewer(csp)
    reviewer.feed(html)
    reviewer.close()
    warnings = reviewer.warnings
    if _WEBRTC.search(html):
        warnings.append("RTCPeerConnection: views get no WebRTC (no CSP covers where it connects), "
                        "so this part of the view will not work")
    if len(warnings) > MAX_WARNINGS:
        warnings = [*warnings[:MAX_WARNINGS], f"... and {len(warnings) - MAX_WARNINGS} more warnings"]
    return warnings
