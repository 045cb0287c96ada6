"""Validate what `resources/read` returned for a tool's `ui://` template, and hash it."""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any

from ..errors import CspError, TemplateError
from ..values.csp import ViewCsp
from ..values.protocol import APP_MIME_TYPE, OPENAI_MIME_TYPE
from ..values.templates import Template


def _normalise_mime(mime: Any) -> str:
    if not isinstance(mime, str):
        return ""
    return ";".join(part.strip() for part in mime.lower().split(";"))


def _ui_meta(item: Any) -> dict[str, Any] | None:
    meta = item.get("_meta") if isinstance(item, dict) else None
    ui = meta.get("ui") if isinstance(meta, dict) else None
    return ui if isinstance(ui, dict) else None


def _content_bytes(item: dict[str, Any], where: str, max_bytes: int) -> bytes:
    if isinstance(item.get("text"), str):
        return bytes(item["text"].encode("utf-8"))
    if isinstance(item.get("blob"), str):
        # The base64 text is about 4/3 of the bytes: refuse before decoding a huge blob.
        if len(item["blob"]) > max_bytes * 4 // 3 + 8:
            raise TemplateError(f"{where}: larger than max_template_bytes ({max_bytes} bytes)")
        try:
            return base64.b64decode(item["blob"], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise TemplateError(f"{where}: blob is not valid base64 ({exc})") from exc
    raise TemplateError(f"{where}: the content has neither text nor blob")


def _openai_meta(item: Any) -> dict[str, Any]:
    """What an OpenAI Apps SDK template declares (`openai/widgetCSP`, …), as `_meta.ui` keys."""
    meta = item.get("_meta") if isinstance(item, dict) else None
    if not isinstance(meta, dict):
        return {}
    ui: dict[str, Any] = {}
    csp = meta.get("openai/widgetCSP")
    if isinstance(csp, dict):
        ui["csp"] = {key: csp[name] for name, key in (("connect_domains", "connectDomains"),
                                                      ("resource_domains", "resourceDomains"),
                                                      ("frame_domains", "frameDomains")) if name in csp}
    elif csp is not None:
        ui["csp"] = csp  # refused below, with its name
    if isinstance(meta.get("openai/widgetDomain"), str):
        ui["domain"] = meta["openai/widgetDomain"]
    if isinstance(meta.get("openai/widgetPrefersBorder"), bool):
        ui["prefersBorder"] = meta["openai/widgetPrefersBorder"]
    return ui


def parse_template(
    server: str,
    uri: str,
    read_result: dict[str, Any],
    list_entry: dict[str, Any] | None,
    max_bytes: int,
) -> Template:
    """Validate a `resources/read` result (camelCase JSON) for a view template.

    `_meta.ui` may sit on the `resources/list` entry, on the content item, or
    both: the content item's replaces the entry's as a whole (the spec's "Metadata
    Location" rule), so a server that drops a CSP domain at read time is not widened
    again by its listing.
    """
    where = f"template {uri} of server {server!r}"
    if not uri.startswith("ui://"):
        raise TemplateError(f"{where}: the URI must start with ui://")
    contents = read_result.get("contents")
    if not isinstance(contents, list) or not contents:
        raise TemplateError(f"{where}: resources/read returned no contents")
    item = next((c for c in contents if isinstance(c, dict) and c.get("uri") == uri), contents[0])
    if not isinstance(item, dict):
        raise TemplateError(f"{where}: the content item is not an object")
    mime = _normalise_mime(item.get("mimeType"))
    if mime not in (APP_MIME_TYPE, OPENAI_MIME_TYPE):
        raise TemplateError(f"{where}: mimeType is {item.get('mimeType')!r}, expected {APP_MIME_TYPE!r} "
                            f"(or {OPENAI_MIME_TYPE!r} for an OpenAI Apps SDK widget)")
    raw = _content_bytes(item, where, max_bytes)
    if len(raw) > max_bytes:
        raise TemplateError(f"{where}: {len(raw)} bytes is larger than max_template_bytes ({max_bytes} bytes)")
    try:
        html = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TemplateError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    if not html.strip():
        raise TemplateError(f"{where}: the HTML is empty")
    # The content item's _meta.ui replaces the listing entry's as a whole (the spec's Metadata Location rule).
    ui = _ui_meta(item)
    if ui is None:
        ui = _ui_meta(list_entry) or {}
    compat = "openai" if mime == OPENAI_MIME_TYPE else None
    if compat:
        ui = {**_openai_meta(list_entry), **_openai_meta(item), **ui}
    try:
        csp = ViewCsp.from_meta(ui.get("csp"))
    except CspError as exc:
        raise TemplateError(f"{where}: _meta.ui.csp: {exc}") from exc
    permissions = ui.get("permissions")
    domain = ui.get("domain")
    border = ui.get("prefersBorder")
    return Template(
        server=server,
        uri=uri,
        html=html,
        sha256=hashlib.sha256(raw).hexdigest(),
        csp=csp,
        permissions=permissions if isinstance(permissions, dict) else {},
        domain=domain if isinstance(domain, str) else None,
        prefers_border=border if isinstance(border, bool) else None,
        compat=compat,
    )
