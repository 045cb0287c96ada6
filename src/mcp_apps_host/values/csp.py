"""A view's declared origins (`_meta.ui.csp`), checked and normalised: a plain value.

A server declares, in a template's ``_meta.ui.csp``, the origins its view needs.
Every entry is checked here before it can reach a header: it must be the source
expression of one origin (``https://api.example.com``, ``wss://*.example.com:8443``),
nothing else. Anything that could change the meaning of a header (a ``;``, a quote,
whitespace, a keyword, a scheme source such as ``data:`` or ``https:``, a bare ``*``)
is refused with a :class:`~mcp_apps_host.errors.CspError` rather than silently
dropped, so the person running the host learns why a view did not load.

A bare host such as ``api.example.com`` is refused, not normalised: in CSP it would
match the host over the page's own scheme, which is not what an author who forgot the
scheme can be assumed to mean, and guessing ``https://`` would make the host the author
of a policy it was only asked to enforce.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import CspError

__all__ = ["FORBIDDEN_CHARS", "VIEW_SCHEMES", "ViewCsp", "normalise_source"]

VIEW_SCHEMES: tuple[str, ...] = ("https", "http", "wss", "ws")

# (attribute, key in _meta.ui.csp)
_FIELDS: tuple[tuple[str, str], ...] = (
    ("connect_domains", "connectDomains"),
    ("resource_domains", "resourceDomains"),
    ("frame_domains", "frameDomains"),
    ("base_uri_domains", "baseUriDomains"),
)

# Characters that would end a source, a directive or the header, or turn the entry into a keyword.
FORBIDDEN_CHARS = re.compile(r"[;,'\"\s\x00-\x1f\x7f]")
_ORIGIN = re.compile(
    r"(?P<scheme>[a-z][a-z0-9+.-]*)://(?P<authority>[^/?#]*)(?P<rest>.*)",
    re.ASCII | re.DOTALL,
)
_SCHEME_SOURCE = re.compile(r"[a-z][a-z0-9+.-]*:", re.ASCII)
_BARE_HOST = re.compile(r"(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)*\.?(:(\d+|\*))?/?", re.ASCII)
_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", re.ASCII)


def normalise_source(
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
    bad = FORBIDDEN_CHARS.search(entry)
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
    scheme, authority = _scheme_and_authority(entry, text, field, schemes)
    return _origin_source(entry, field, scheme, authority, single_label_wildcard)


def _scheme_and_authority(entry: str, text: str, field: str, schemes: tuple[str, ...]) -> tuple[str, str]:
    """``scheme://authority`` with nothing after it, or the reason it is not."""
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

    return scheme, match.group("authority")


def _origin_source(entry: str, field: str, scheme: str, authority: str, single_label_wildcard: bool) -> str:
    """The host and port of an origin, checked one label at a time, as a normalised source."""
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
        out.setdefault(normalise_source(entry, f"{field}[{index}]"), None)
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
