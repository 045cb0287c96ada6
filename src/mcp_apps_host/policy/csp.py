"""Content-Security-Policy headers and iframe permissions for views and the host page.

The origins come from a view's declaration (:class:`~mcp_apps_host.values.csp.ViewCsp`,
already checked); this module only turns them into policies.
"""

from __future__ import annotations

from typing import Any

from ..errors import CspError
from ..values.csp import FORBIDDEN_CHARS, ViewCsp, normalise_source

__all__ = ["allow_attribute", "build_view_csp", "granted_permissions", "host_page_csp"]

# (key in _meta.ui.permissions, Permissions-Policy feature), in the order they are emitted.
_PERMISSIONS: tuple[tuple[str, str], ...] = (
    ("camera", "camera"),
    ("microphone", "microphone"),
    ("geolocation", "geolocation"),
    ("clipboardWrite", "clipboard-write"),
)


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
        if not isinstance(report_uri, str) or not report_uri or FORBIDDEN_CHARS.search(report_uri):
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
        source = normalise_source(
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
