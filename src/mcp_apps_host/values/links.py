"""What a person is shown before the host follows ``ui/open-link`` or saves ``ui/download-file``.

:func:`describe_link` accepts only http and https, and works out the host the browser
would really go to: ``xn--`` labels are decoded for display, a Unicode host is
encoded for comparison, numeric IPv4 spellings (``0x7f.1``) are resolved, and a
host whose display could be mistaken for another (mixed scripts, letters that look
like Latin ones, a user name before ``@``) is flagged so the dialog can highlight it.

:func:`sanitize_filename` turns a resource URI or a suggested name into a file name
that is safe to offer on any desktop system.
"""

from __future__ import annotations

import encodings.idna as std_idna
import ipaddress
import re
import unicodedata
from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote, urlsplit

try:  # IDNA 2008 / UTS 46, as browsers do; the stdlib codec (IDNA 2003) is the fallback.
    import idna as _idna
except ImportError:  # pragma: no cover - depends on the environment
    _idna = None  # type: ignore[assignment]

__all__ = ["LinkInfo", "describe_link", "sanitize_filename"]

MAX_URL_CHARS: Final = 8192
SCHEMES: Final = ("http", "https")

# Characters WHATWG URL forbids in a host; urlsplit lets some of them through.
_FORBIDDEN_HOST = set(" #%/:<>?@[\\]^|\"'`{}")

# Letters of other scripts (or unusual Latin letters) that read as an ASCII letter.
# Deliberately small: the aim is to flag the common look-alike spellings, not to be UTS 39.
_LOOKALIKE: Final[dict[str, str]] = {
    # Cyrillic
    "а": "a",
    "с": "c",
    "ԁ": "d",
    "е": "e",
    "һ": "h",
    "і": "i",
    "ј": "j",
    "ӏ": "l",
    "о": "o",
    "р": "p",
    "ԛ": "q",
    "ѕ": "s",
    "ѵ": "v",
    "ԝ": "w",
    "х": "x",
    "у": "y",
    "ү": "y",
    # Greek
    "α": "a",
    "ϲ": "c",
    "ι": "i",
    "ϳ": "j",
    "κ": "k",
    "ν": "v",
    "ο": "o",
    "ρ": "p",
    "υ": "u",
    "χ": "x",
    # Armenian
    "ց": "g",
    "հ": "h",
    "ո": "n",
    "օ": "o",
    "զ": "q",
    "ս": "u",
    # Latin letters outside ASCII
    "ı": "i",
    "ɩ": "i",
    "ɪ": "i",
    "ȷ": "j",
    "ɑ": "a",
    "ɡ": "g",
    "ʀ": "r",
    "ʏ": "y",
}

# Script mixes that are normal within one label (Japanese, Chinese, Korean with Latin).
_NORMAL_MIXES: Final = (
    frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "HAN", "BOPOMOFO"}),
    frozenset({"LATIN", "HAN", "HANGUL"}),
)


@dataclass(frozen=True)
class LinkInfo:
    """A link as the consent dialog shows it.

    ``url``: as the view sent it. ``href``: the same target with an ASCII host, the
    one to open. ``display``: the full URL with the host as a person reads it.
    ``differs``: highlight the host and show ``host_ascii`` and ``warnings`` beside it.
    """

    url: str
    scheme: str
    host_ascii: str
    host_unicode: str
    differs: bool
    display: str
    href: str = ""
    port: int | None = None
    warnings: tuple[str, ...] = ()


def _script(ch: str) -> str | None:
    if not unicodedata.category(ch).startswith("L"):
        return None  # digits, hyphens, combining marks: shared by every script
    name = unicodedata.name(ch, "")
    first = name.split(" ", 1)[0] if name else ""
    if first == "CJK":
        return "HAN"
    if first.startswith("KATAKANA"):
        return "KATAKANA"
    if first in ("MODIFIER", "SMALL", "FULLWIDTH", "HALFWIDTH", ""):
        return None  # not a script name; such letters do not make a label mixed
    return first


def _decode_label(label: str) -> tuple[str, str, str | None]:
    """(ascii, unicode, warning) for one host label; ValueError if it cannot be a host label."""
    if not label:
        return "", "", None
    if label.isascii():
        ascii_label = label.lower()
        if not ascii_label.startswith("xn--"):
            return ascii_label, ascii_label, None
        if _idna is not None:
            try:
                return ascii_label, _idna.decode(ascii_label), None
            except _idna.IDNAError:
                pass
        try:
            # Not valid IDNA 2008 (an emoji, say); browsers may still open it, so show what it spells.
            unicode_label = ascii_label[4:].encode("ascii").decode("punycode")
        except UnicodeError as exc:
            raise ValueError(f"host label {label!r} is not valid punycode") from exc
        return ascii_label, unicode_label, f"host label {ascii_label} is not a valid internationalised name"
    try:
        if _idna is not None:
            ascii_label = _idna.encode(label, uts46=True).decode("ascii")
        else:  # pragma: no cover - depends on the environment
            ascii_label = std_idna.ToASCII(label).decode("ascii")
    except (UnicodeError, ValueError) as exc:
        raise ValueError(f"host label {label!r} is not a valid internationalised name ({exc})") from exc
    _same, unicode_label, warning = _decode_label(ascii_label)
    return ascii_label, unicode_label, warning


def _parse_ipv4_number(part: str) -> int:
    if part.startswith(("0x", "0X")):
        digits, base = part[2:], 16
    elif len(part) > 1 and part.startswith("0"):
        digits, base = part[1:], 8
    else:
        digits, base = part, 10
    if digits == "":
        return 0
    return int(digits, base)


def _numeric_ipv4(host: str) -> str | None:
    """The dotted IPv4 address a browser makes of a host that ends in a number, else None.

    Browsers read ``2130706433``, ``0x7f.1`` and ``0177.0.0.1`` all as ``127.0.0.1``.
    """
    parts = host.split(".")
    if parts and parts[-1] == "" and len(parts) > 1:
        parts = parts[:-1]
    last = parts[-1]
    if not (re.fullmatch(r"[0-9]+", last) or re.fullmatch(r"0[xX][0-9a-fA-F]*", last)):
        return None
    if len(parts) > 4:
        raise ValueError(f"host {host!r} looks like an IPv4 address but has more than four parts")
    try:
        numbers = [_parse_ipv4_number(p) for p in parts]
    except ValueError as exc:
        raise ValueError(f"host {host!r} looks like an IPv4 address but is not one") from exc
    if any(n > 255 for n in numbers[:-1]) or numbers[-1] >= 256 ** (5 - len(numbers)):
        raise ValueError(f"host {host!r} is an IPv4 address out of range")
    value = numbers[-1]
    for index, n in enumerate(numbers[:-1]):
        value += n * 256 ** (3 - index)
    return str(ipaddress.IPv4Address(value))


def _check_text(url: str) -> None:
    if len(url) > MAX_URL_CHARS:
        raise ValueError(f"the URL is longer than {MAX_URL_CHARS} characters")
    for ch in url:
        if ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            raise ValueError(
                f"the URL contains {unicodedata.name(ch, 'a control character')} (U+{ord(ch):04X}); "
                "whitespace and invisible characters must be percent-encoded"
            )
    if "\\" in url:
        # Browsers read a backslash as '/', urlsplit does not: the two would disagree on the host.
        raise ValueError("the URL contains a backslash, which browsers read as '/'")


def _read_host(hostport: str, port: int | None) -> tuple[str, str, str, list[str], bool]:
    """The host as the browser will use it (ASCII), as a person reads it, and as it goes in the URL,
    with what a person should be warned of and whether the two readings differ."""
    warnings: list[str] = []
    differs = False
    if hostport.startswith("["):
        raw_host = hostport[1 : hostport.index("]")] if "]" in hostport else ""
        try:
            address = ipaddress.IPv6Address(raw_host)
        except ValueError as exc:
            raise ValueError(f"host [{raw_host}] is not an IPv6 address") from exc
        return str(address), str(address), f"[{address}]", warnings, differs
    raw_host = hostport.rsplit(":", 1)[0] if port is not None or hostport.endswith(":") else hostport
    if not raw_host:
        raise ValueError("the URL has an empty host")
    bad = sorted({c for c in raw_host if c in _FORBIDDEN_HOST})
    if bad:
        raise ValueError(f"host {raw_host!r} contains {''.join(bad)!r}, not allowed in a host")
    # UTS 46 maps full-width dots to '.', so split on them too.
    ascii_labels: list[str] = []
    unicode_labels: list[str] = []
    for label in re.split("[.\u3002\uff0e\uff61]", raw_host):
        a, u, warning = _decode_label(label)
        ascii_labels.append(a)
        unicode_labels.append(u)
        if warning:
            warnings.append(warning)
    host_ascii = ".".join(ascii_labels)
    host_unicode = ".".join(unicode_labels)
    if "" in ascii_labels[:-1]:
        raise ValueError(f"host {raw_host!r} has an empty label")
    numeric = _numeric_ipv4(host_ascii)
    if numeric is not None:
        if numeric != host_ascii:
            warnings.append(f"the numeric host {raw_host} is the IP address {numeric}")
            differs = True
        host_ascii = host_unicode = numeric
    return host_ascii, host_unicode, host_ascii, warnings, differs


def describe_link(url: str) -> LinkInfo:
    """Check a ``ui/open-link`` URL (http/https only) and describe its real target.

    Raises ValueError, naming the problem, for anything else.
    """
    if not isinstance(url, str) or not url:
        raise ValueError("the URL is empty or not a string")
    _check_text(url)
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # e.g. a bracketed host that is not an IP address
        raise ValueError(f"the URL cannot be parsed ({exc})") from exc
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        shown = f"{parts.scheme!r}" if parts.scheme else "none"
        raise ValueError(f"scheme {shown} is not allowed; only http and https links can be opened")
    if not url[len(parts.scheme) + 1 :].startswith("//") or not parts.netloc:
        raise ValueError("the URL has no host (expected scheme://host/...)")
    userinfo, _, hostport = parts.netloc.rpartition("@")
    try:
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"invalid port in {hostport!r}") from exc
    host_ascii, host_unicode, host_for_url, warnings, differs = _read_host(hostport, port)

    if host_unicode != host_ascii:
        differs = True
        warnings.extend(_host_warnings(host_unicode))
    if userinfo:
        differs = True
        warnings.append(
            f"the text before '@' ({userinfo}) is a user name, not the site; the site is {host_unicode}"
        )

    authority_tail = f":{port}" if port is not None else ""
    user_part = f"{userinfo}@" if userinfo else ""
    rest = url[len(parts.scheme) + 3 + len(parts.netloc) :]
    shown_host = f"[{host_unicode}]" if host_for_url.startswith("[") else host_unicode
    return LinkInfo(
        url=url,
        scheme=scheme,
        host_ascii=host_ascii,
        host_unicode=host_unicode,
        differs=differs,
        display=f"{scheme}://{user_part}{shown_host}{authority_tail}{rest}",
        href=f"{scheme}://{user_part}{host_for_url}{authority_tail}{rest}",
        port=port,
        warnings=tuple(warnings),
    )


def _host_warnings(host_unicode: str) -> list[str]:
    out: list[str] = []
    labels = host_unicode.split(".")
    for label in labels:
        scripts = {s for s in map(_script, label) if s is not None}
        if len(scripts) > 1 and not any(scripts <= mix for mix in _NORMAL_MIXES):
            names = ", ".join(s.title() for s in sorted(scripts))
            out.append(f"host label {label!r} mixes scripts ({names})")
    skeleton = "".join(_LOOKALIKE.get(ch, ch) for ch in host_unicode)
    if skeleton != host_unicode and skeleton.isascii():
        out.append(f"host {host_unicode} looks like {skeleton} but is a different name")
    return out


# -- file names ----------------------------------------------------------------------------------

_WINDOWS_RESERVED: Final = frozenset(
    ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"]
    + [f"{p}{n}" for p in ("COM", "LPT") for n in [*"0123456789", "\u00b9", "\u00b2", "\u00b3"]]
)
_REPLACED: Final = set('<>:"|?*/\\')
_DROPPED_CATEGORIES: Final = ("Cc", "Cf", "Cs", "Co", "Cn")
_URI: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")  # two letters or more: 'C:' is a drive


def _last_segment(name_or_uri: str) -> str:
    if _URI.match(name_or_uri):
        parts = urlsplit(name_or_uri)
        if parts.scheme.lower() == "data":
            return ""
        segments = [s for s in parts.path.split("/") if s]
        raw = segments[-1] if segments else parts.netloc.rpartition("@")[2]
        return unquote(raw)
    segments = [s for s in re.split(r"[/\\]", name_or_uri) if s]
    return segments[-1] if segments else ""


def sanitize_filename(name_or_uri: str, fallback: str = "download", max_chars: int = 120) -> str:
    """A file name that is safe to save on Windows, macOS and Linux.

    Takes the last path segment of a URI (percent-decoded) or of a path, drops control
    and invisible characters (including bidirectional overrides that disguise an
    extension), replaces path separators and characters Windows forbids with ``_``,
    strips leading dots (no hidden files, no ``..``) and trailing dots and spaces,
    prefixes reserved Windows device names with ``_`` and shortens the name to
    ``max_chars`` characters, keeping a short extension. Falls back to ``fallback``.
    """
    name = _last_segment(name_or_uri if isinstance(name_or_uri, str) else "")
    name = unicodedata.normalize("NFC", name)
    cleaned: list[str] = []
    for ch in name:
        category = unicodedata.category(ch)
        if category in _DROPPED_CATEGORIES or category in ("Zl", "Zp"):
            continue
        if ch in _REPLACED:
            cleaned.append("_")
        elif category == "Zs" or ch.isspace():
            cleaned.append(" ")
        else:
            cleaned.append(ch)
    name = re.sub(" {2,}", " ", "".join(cleaned)).strip(" .")
    if name.split(".", 1)[0].rstrip(" ").upper() in _WINDOWS_RESERVED:
        name = "_" + name
    if len(name) > max_chars:
        stem, dot, ext = name.rpartition(".")
        if dot and stem and 1 <= len(ext) <= 16 and ext.isalnum():
            name = stem[: max_chars - len(ext) - 1].rstrip(" .") + "." + ext
        else:
            name = name[:max_chars].rstrip(" .")
    if not name:
        # The fallback is cleaned too; "download" ends the recursion.
        return (
            sanitize_filename(fallback, "download", max_chars)
            if fallback not in ("", "download")
            else "download"
        )
    return name
