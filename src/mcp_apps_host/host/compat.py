"""OpenAI Apps SDK widgets: the `window.openai` shim, put first in the widget's own document.

The shim only speaks MCP Apps to the host, so what a widget does is checked like any view's.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

from ..values.templates import Template

_HEAD = re.compile(r"<head\b[^>]*>", re.IGNORECASE)
_HTML = re.compile(r"<html\b[^>]*>", re.IGNORECASE)


@functools.cache
def _shim() -> str:
    text = (resources.files("mcp_apps_host") / "host" / "openai_shim.js").read_text(encoding="utf-8")
    return "<script>" + text.replace("</script", "<\\/script") + "</script>"


def view_html(template: Template) -> str:
    """The document the view gets: the template as served, with the shim first when it needs one."""
    if template.compat != "openai":
        return template.html
    html = template.html
    for tag in (_HEAD, _HTML):
        found = tag.search(html)
        if found:
            return html[:found.end()] + _shim() + html[found.end():]
    return _shim() + html
