"""Content-Security-Policy and permission policy for MCP App views.

A server declares, in a template's ``_meta.ui.csp``, the origins its view needs.
Every declared entry is checked here before it can reach a header: an entry must
be the source expression of one origin (``https://api.example.com``,
``wss://*.example.com:8443``), nothing else. Anything that could change the
meaning of the header (a ``;``, a quote, whitespace, a keyword, a scheme source
such as ``data:`` or ``https:``, a bare ``*``) is refused with a :class:`CspError`
rather than silently dropped, so the person running the host learns why a view
did not load.

A bare host such as ``api.example.com`` is refused, not normalised: in CSP it
would match the host over the page's own scheme, which is not what an author who
forgot the scheme can be assumed to mean, and guessing ``https://`` would make the
host the author of a policy it was only asked to enforce.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CspError",
    "ViewCsp",
    "allow_attribute",
    "build_view_csp",
    "granted_permissions",
    "host_page_csp",
]

VIEW_SCHEMES: tuple[str, ...] = ("https", "http", "wss", "ws")

# (attribute, key in _meta.ui.csp)
_FIELDS: tuple[tuple[str, str], ...] = (
    ("connect_domains", "connectDomains"),
    ("resource_domains", "resourceDomains"),
    ("frame_domains", "frameDomains"),
    ("base_uri_domains", "baseUriDomains"),
)

# (key in _meta.ui.permissions, Permissions-Policy feature), in the order they are emitted.
_PERMISSIONS: tuple[tuple[str, str], ...] = (
    ("camera", "camera"),
    ("microphone", "microphone"),
    ("geolocation", "geolocation"),
    ("clipboardWrite", "clipboard-write"),
)

# Characters that would end a source, a directive or the header, or turn the entry into a keyword.
_FORBIDDEN = re.compile(r"[;,'\"\s\x00-\x1f\x7f]")
_ORIGIN = re.compile(
    r"(?P<scheme>[a-z][a-z0-9+.-]*)://(?P<authority>[^/?#]*)(?P<rest>.*)",
    re.ASCII | re.DOTALL,
)
_SCHEME_SOURCE = re.compile(r"[a-z][a-z0-9+.-]*:", re.ASCII)
_BARE_HOST = re.compile(r"(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)*\.?(:(\d+|\*))?/?", re.ASCII)
_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", re.ASCII)


class CspError(ValueError):
    """A declared CSP entry (or the list holding it) that the host will not put in a policy.

    ``field`` names where it was found (``_meta.ui.csp.connectDomains[2]``) and
    ``entry`` is the offending value.
    """

    def __init__(self, field: str, entry: object, problem: str) -> None:
        self.field = field
        self.entry = entry
        self.problem = problem
        super().__init__(f"{field}: {_show(entry)} {problem}")


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _normalise_source(
    entry: object,
    field: str,
    *,
    schemes: tuple[str, ...] = VIEW_SCHEMES,
    single_label_wildcard: bool = False,
) -> str:
    """Check one origin source expression and return it lower-cased, without a trailing ``/``."""
    if not isinstance(entry, str):
        raise CspError(
            field, entry, f"is a {type(entry).__name__}, not a string origin like 'https://api.example.com'"
        )
    if not entry:
        raise CspError(field, entry, "is empty; give an origin like 'https://api.example.com'")
    if entry.startswith("'"):
        raise CspError(
            field, entry, "is a CSP keyword; only origins like 'https://api.example.com' may be declared"
        )
    bad = _FORBIDDEN.search(entry)
    if bad is not None:
        raise CspError(
            field,
            entry,
            f"contains {bad.group()!r} at position {bad.start()}; "
            "semicolons, commas, quotes, whitespace and control characters are not allowed",
        )
    if not entry.isascii():
        raise CspError(
            field, entry, "contains non-ASCII characters; write an international host in its xn-- form"
        )
    text = entry.lower()
    if text == "*":
        raise CspError(field, entry, "would allow every origin; list the origins the view needs")

    match = _ORIGIN.fullmatch(text)
    if match is None:
        if _BARE_HOST.fullmatch(text):
            raise CspError(field, entry, f"has no scheme; write it as 'https://{entry.rstrip('/')}'")
        if _SCHEME_SOURCE.fullmatch(text):
            raise CspError(
                field,
                entry,
                "is a scheme source, which would allow a whole scheme; list origins like 'https://host'",
            )
        prefix = _SCHEME_SOURCE.match(text)
        if prefix is not None:
            raise CspError(
                field,
                entry,
                f"uses scheme {prefix.group()!r}, which cannot be declared; "
                f"list origins with scheme {', '.join(schemes)}",
            )
        raise CspError(field, entry, "is not an origin of the form scheme://host[:port]")

    scheme = match.group("scheme")
    if scheme not in schemes:
        raise CspError(field, entry, f"uses scheme {scheme!r}; allowed: {', '.join(schemes)}")

    rest = match.group("rest")
    if rest not in ("", "/"):
        raise CspError(
            field, entry, "has a path, query or fragment; declare only the origin (scheme://host[:port])"
        )

    authority = match.group("authority")
    if "@" in authority:
        raise CspError(field, entry, "contains user info ('@'); declare only scheme://host[:port]")
    if "[" in authority or "]" in authority:
        raise CspError(field, entry, "is an IPv6 literal, which CSP cannot express; use a host name")
    host, sep, port = authority.partition(":")
    if sep:
        if port == "*":
            pass
        elif port.isdigit() and 0 < int(port) <= 65535:
            port = str(int(port))
        else:
            raise CspError(field, entry, f"has an invalid port {port!r}; use a number from 1 to 65535 or '*'")

    if host == "*":
        raise CspError(field, entry, f"would allow every host over {scheme}; list the hosts the view needs")
    wildcard = host.startswith("*.")
    if wildcard:
        host = host[2:]
    if not host:
        raise CspError(field, entry, "has no host")
    if "*" in host:
        raise CspError(
            field,
            entry,
            "has a '*' that is not a leading '*.' label (only 'https://*.example.com' is allowed)",
        )
    labels = host.split(".")
    if len(host) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise CspError(
            field,
            entry,
            "has an invalid host; use letters, digits, '-' and '.' (IPv6 literals cannot appear in CSP)",
        )
    # '*.com' would admit a whole top-level domain; hosts we configure ourselves may use '*.localhost'.
    if wildcard and len(labels) < 2 and not single_label_wildcard:
        raise CspError(
            field,
            entry,
            "puts a wildcard directly on a top-level domain; name the domain ('https://*.example.com')",
        )

    return f"{scheme}://{'*.' if wildcard else ''}{host}{':' + port if sep else ''}"


def _normalise_list(raw: object, field: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str) or not isinstance(raw, (list, tuple)):
        raise CspError(field, raw, f"is a {type(raw).__name__}; it must be a list of origins")
    out: dict[str, None] = {}  # ordered set: first occurrence wins
    for index, entry in enumerate(raw):
        out.setdefault(_normalise_source(entry, f"{field}[{index}]"), None)
    return tuple(out)


@dataclass(frozen=True)
class ViewCsp:
    """The origins a view declared, validated, normalised and deduplicated.

    Every instance is valid: construction runs the same checks as :meth:`from_meta`,
    so a ``ViewCsp`` built by hand cannot smuggle a bad entry into a header.
    """

    connect_domains: tuple[str, ...] = ()
    resource_domains: tuple[str, ...] = ()
    frame_domains: tuple[str, ...] = ()
    base_uri_domains: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for attr, key in _FIELDS:
            object.__setattr__(self, attr, _normalise_list(getattr(self, attr), f"_meta.ui.csp.{key}"))

    @classmethod
    def from_meta(cls, meta: object) -> ViewCsp:
        """Parse ``_meta.ui.csp`` (camelCase keys).

        ``None`` means nothing declared; unknown keys are ignored.
        """
        if meta is None:
            return cls()
        if not isinstance(meta, dict):
            raise CspError("_meta.ui.csp", meta, f"is a {type(meta).__name__}; it must be an object")
        values: dict[str, Any] = {}
        for attr, key in _FIELDS:
            raw = meta.get(key)
            if raw is not None and not isinstance(raw, list):
                raise CspError(
                    f"_meta.ui.csp.{key}", raw, f"is a {type(raw).__name__}; it must be a list of origins"
                )
            values[attr] = tuple(raw) if raw is not None else ()
        return cls(**values)

    def to_json(self) -> dict[str, list[str]]:
        """camelCase, non-empty lists only: the shape of ``hostCapabilities.sandbox.csp``."""
        return {key: list(getattr(self, attr)) for attr, key in _FIELDS if getattr(self, attr)}


def _directive(name: str, sources: list[str] | tuple[str, ...]) -> str:
    return f"{name} {' '.join(sources)}"


def build_view_csp(csp: ViewCsp, *, report_uri: str | None = None) -> str:
    """The Content-Security-Policy header value for a view's sandbox proxy document.

    The inner view document (``srcdoc``) inherits this policy, and ``frame-src`` here
    also decides where the inner frame may navigate itself. Declared domains widen
    only the directives they belong to.
    """
    res = list(csp.resource_domains)
    directives = [
        _directive("default-src", ["'none'"]),
        # 'unsafe-eval' is allowed on purpose: real app bundles (Excalidraw and other
        # libraries that compile code with new Function) render blank without it, and
        # the reference host allows it too. It opens no new origin: the view's own
        # inline script can already run, and what this policy bounds is where the view
        # may load from and talk to.
        # blob:/data: scripts are code the view already holds (PDF viewers load their worker
        # code with import('data:…')); with 'unsafe-inline' they open no new origin.
        _directive("script-src", ["'self'", "'unsafe-inline'", "'unsafe-eval'", "blob:", "data:", *res]),
        _directive("style-src", ["'self'", "'unsafe-inline'", *res]),
        _directive("img-src", ["'self'", "data:", "blob:", *res]),
        _directive("font-src", ["'self'", "data:", *res]),
        _directive("media-src", ["'self'", "data:", "blob:", *res]),
        # No 'self': the view shares the sandbox origin, whose server is the host.
        _directive("connect-src", list(csp.connect_domains) or ["'none'"]),
        _directive("frame-src", list(csp.frame_domains) or ["'none'"]),
        _directive("base-uri", list(csp.base_uri_domains) or ["'self'"]),
        _directive("object-src", ["'none'"]),
        _directive("form-action", ["'none'"]),
        # Bundled apps (PDF viewers among them) start their workers from blob: or data: URLs; a
        # worker's own requests are still bound by connect-src.
        _directive("worker-src", ["'self'", "blob:", "data:", *res]),
    ]
    if report_uri is not None:
        if not isinstance(report_uri, str) or not report_uri or _FORBIDDEN.search(report_uri):
            raise CspError(
                "report_uri", report_uri, "must be a URL without ; , quotes, whitespace or control characters"
            )
        directives.append(_directive("report-uri", [report_uri]))
    return "; ".join(directives)


def _requested(permissions: object, granted: frozenset[str]) -> list[tuple[str, str]]:
    """(key, feature) pairs both requested by the view and granted by host policy.

    ``granted`` may name a permission by its ``_meta`` key (``clipboardWrite``) or
    its feature name (``clipboard-write``).
    """
    if not isinstance(permissions, dict):
        return []
    out: list[tuple[str, str]] = []
    for key, feature in _PERMISSIONS:
        value = permissions.get(key)
        # The spec's shape is an empty object; tolerate `true`, ignore false/null.
        if not (isinstance(value, dict) or value is True):
            continue
        if key in granted or feature in granted:
            out.append((key, feature))
    return out


def allow_attribute(permissions: object, granted: frozenset[str]) -> str:
    """The inner iframe's ``allow`` value for ``_meta.ui.permissions``, e.g. ``"camera; clipboard-write"``."""
    return "; ".join(feature for _, feature in _requested(permissions, granted))


def granted_permissions(permissions: object, granted: frozenset[str]) -> dict[str, dict[str, Any]]:
    """What was granted, camelCase: the shape of ``hostCapabilities.sandbox.permissions``."""
    return {key: {} for key, _ in _requested(permissions, granted)}


def host_page_csp(sandbox_origins: list[str]) -> str:
    """The host page's own policy: its own scripts only, and frames only from the sandbox origin(s).

    ``sandbox_origins`` are http(s) origins; a wildcard form such as
    ``http://*.localhost:8766`` is accepted for per-view sandbox subdomains.
    """
    if isinstance(sandbox_origins, str) or not isinstance(sandbox_origins, (list, tuple)):
        raise CspError("sandbox_origins", sandbox_origins, "must be a list of origins")
    frames: dict[str, None] = {}
    for index, origin in enumerate(sandbox_origins):
        source = _normalise_source(
            origin, f"sandbox_origins[{index}]", schemes=("https", "http"), single_label_wildcard=True
        )
        frames.setdefault(source, None)
    directives = [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        # 'self' also covers the page's same-origin WebSocket in current Chromium.
        "connect-src 'self'",
        _directive("frame-src", list(frames) or ["'none'"]),
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
    return "; ".join(directives)
