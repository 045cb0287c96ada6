"""What the view's document gets before its own markup: the guard every view gets (no WebRTC,
see view_guard.js) and, for OpenAI Apps SDK widgets, the `window.openai` shim.

The shim only speaks MCP Apps to the host, so what a widget does is checked like any view's.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

from ...values.templates import Template

_HEAD = re.compile(r"<head\b[^>]*>", re.IGNORECASE)
_HTML = re.compile(r"<html\b[^>]*>", re.IGNORECASE)
_DOCTYPE = re.compile(r"\s*<!doctype\b[^>]*>", re.IGNORECASE)


@functools.cache
def _script(name: str) -> str:
    text = (resources.files("mcp_apps_host") / "host" / "process" / name).read_text(encoding="utf-8")
    return "<script>" + text.replace("</script", "<\\/script") + "</script>"


def view_html(template: Template) -> str:
    """The document the view gets: the template as served, with the guard (and the shim, when it
    needs one) first, so they run before any of the template's own scripts."""
    first = _script("view_guard.js") + (_script("openai_shim.js") if template.compat == "openai" else "")
    html = template.html
    for tag in (_HEAD, _HTML):
        found = tag.search(html)
        if found:
            return html[:found.end()] + first + html[found.end():]
    # Before the doctype a script would put the document in quirks mode: after it, then.
    doctype = _DOCTYPE.match(html)
    at = doctype.end() if doctype else 0
    return html[:at] + first + html[at:]
