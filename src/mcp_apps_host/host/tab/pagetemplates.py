"""Which templates the page of this tab already holds, by sha256: a view of one of them gets its
`sandbox-resource-ready` without the HTML, and the page puts its own copy in (static/templates.js).

Only the host decides that a view mounts (trust, pinning, audit); this saves carrying the same
hundreds of kilobytes through the WebSocket again for each view of a template.
"""

from __future__ import annotations

from typing import Any

from ...values.protocol import SANDBOX_RESOURCE_READY
from ...values.templates import Template
from . import frames as f


class PageTemplates:
    def __init__(self) -> None:
        self._held: set[str] = set()  # what this tab's page was sent (its copy lives as long as the tab)

    def ahead(self, template: Template, html: str) -> f.TemplateAhead | None:
        """The frame that gives the page ``template`` (its view's document ``html``) before a view of it mounts,
        or None when the page was given it already (or it has a shim: such a widget's document goes whole)."""
        if template.compat or template.sha256 in self._held:
            return None
        self._held.add(template.sha256)
        return f.TemplateAhead(sha256=template.sha256, html=html)

    def message(self, template: Template, message: dict[str, Any]) -> dict[str, Any]:
        """``message`` as the page should get it: without the HTML when the page has it already."""
        params = message.get("params")
        # A widget run with a shim gets a document other than the template's: always sent whole.
        if message.get("method") != SANDBOX_RESOURCE_READY or not isinstance(params, dict) or template.compat:
            return message
        if template.sha256 not in self._held:
            self._held.add(template.sha256)
            return message
        return {**message, "params": {k: v for k, v in params.items() if k != "html"}}
