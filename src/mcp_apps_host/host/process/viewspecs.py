"""What a mounted view is given: its `ViewSpec`, built from the host's policies for its server.

The spec carries the decisions a view session asks for (may it call this tool, may it sample)
as functions, so they are read when the view asks, not when it was mounted.
"""

from __future__ import annotations

from typing import Any

from ...config.serverpolicy import ViewRules
from ...policy.csp import allow_attribute, granted_permissions
from ...policy.tools import tool_refusal
from ...values.templates import Template
from ...values.tools import ToolEntry
from ...views.context import ViewSpec
from .compat import view_html
from .core import Host


def view_spec(host: Host, call_id: int | None, entry: ToolEntry, template: Template,
              widget_state: dict[str, Any] | None) -> ViewSpec:
    server = entry.server
    return ViewSpec(
        server=server,
        tool=entry,
        html=view_html(template),
        call_id=call_id,
        csp=template.csp.to_json(),
        permissions=granted_permissions(template.permissions, host.granted_permissions),
        allow=allow_attribute(template.permissions, host.granted_permissions),
        **server_tools(host, server),
        decide_tool_call=lambda name: _decide_tool_call(host, server, name),
        max_download_bytes=host.limits.max_download_bytes,
        max_download_files=host.limits.max_download_files,
        decide_sampling=lambda: _decide_sampling(host, server),
        sampling_enabled=_sampling_enabled(host, server),
        compat=template.compat,
        widget_state=widget_state,
        view_rules=_view_rules(host, server),
        state_max_bytes=host.limits.max_view_state_bytes if host.view_states is not None else 0,
    )


def server_tools(host: Host, server: str) -> dict[str, Any]:
    """What a view of ``server`` may call, as `ViewSpec` fields (read again when the server's tools change)."""
    conn = host.servers.connections.get(server)
    tools = list(conn.tools.values()) if conn else []
    return {"app_tools": frozenset(t.name for t in tools if t.app_visible),
            "all_tools": frozenset(t.name for t in tools),
            "server_tools": tuple(t.definition for t in tools if t.app_visible),
            "view_tools": frozenset(t.name for t in tools if t.resource_uri and t.model_visible)}


def _decide_tool_call(host: Host, server: str, name: str) -> tuple[str, str, bool]:
    entry = host.servers.tool(server, name)
    if entry is None:
        return "deny", f"server {server!r} has no tool {name!r}", False
    conn = host.servers.connections.get(server)
    refused = tool_refusal(conn.spec.tools, entry) if conn is not None else None
    if refused is not None:
        return "deny", refused, False
    decision, reason = host.consent.decide(server, entry, "view")
    return decision, reason, decision == "ask" and host.consent.can_remember(server, name)


def _view_rules(host: Host, server: str) -> ViewRules:
    conn = host.servers.connections.get(server)
    return conn.spec.views if conn is not None else ViewRules()


def _sampling_enabled(host: Host, server: str) -> bool:
    settings = host.sampling.settings.get(server)
    return host.agent is not None and settings is not None and settings.enabled


def _decide_sampling(host: Host, server: str) -> tuple[str, str]:
    if host.agent is None:
        return "deny", "no model is configured (--model)"
    return host.sampling.check(server)
