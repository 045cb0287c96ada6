"""Every limit the host enforces, with its default, in one place.

Each limit is named in the error message a person sees when it is hit, so the
name here is the name to look for.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from typing import Any, TypeVar


@dataclass(frozen=True)
class Limits:
    # A template larger than this is refused at prefetch (bytes of decoded HTML).
    max_template_bytes: int = 8 * 1024 * 1024
    # A single JSON-RPC message from a view larger than this is dropped (bytes of JSON).
    max_view_message_bytes: int = 4 * 1024 * 1024
    # ... or nested deeper than this (objects and arrays) is refused. At most 200: deeper frames
    # are cut at 256 levels before they are parsed (Python's parser stops near 1,000).
    max_view_message_depth: int = 100
    # The JSON value a view may keep in the host per view instance and person (mcp-apps-host/state/set).
    max_view_state_bytes: int = 64 * 1024
    # One WebSocket frame from the page larger than this closes nothing; the frame is dropped.
    max_ws_frame_bytes: int = 12 * 1024 * 1024
    # Size a view may ask for with ui/notifications/size-changed, in CSS pixels.
    max_view_height: int = 6000
    max_view_width: int = 4000
    # Inline container: the view grows with its content up to this height.
    inline_max_height: int = 800
    # Seconds to wait for a server to connect (initialize + first listings).
    server_connect_timeout: float = 30.0
    # Seconds a tool call may run before it is cancelled.
    tool_call_timeout: float = 300.0
    # Seconds to wait for a resources/read of a template.
    template_read_timeout: float = 60.0
    # Seconds a view has between its mount and ui/notifications/initialized.
    view_init_timeout: float = 30.0
    # Sandbox proxies a tab's page loads ahead, hidden, one per server origin and policy its views
    # need: the next view there starts on a proxy that is ready (0: none, every view loads its own).
    prestarted_proxies_per_tab: int = 4
    # Views a tab's page boots ahead, hidden, for templates the person has already been shown (one per
    # template, held at ui/initialize until a call takes one), and the template bytes they may hold in all.
    prebooted_views_per_tab: int = 2
    prebooted_views_max_bytes: int = 8 * 1024 * 1024
    # Seconds a booted-ahead view waits for a call before it lapses (less than the 60 s an app SDK waits for
    # its ui/initialize answer); it boots again when the person is about to call a tool (`intent`).
    prebooted_view_max_age: float = 45.0
    # Seconds to wait for a view's reply to ui/resource-teardown.
    teardown_timeout: float = 3.0
    # Views a tab keeps running at once: beyond this, views far out of sight are torn down and leave a
    # placeholder, mounted again (given their input and result) when scrolled back into sight.
    max_live_views: int = 12
    # Reconnect backoff for a server that failed or crashed (seconds, doubled each try).
    reconnect_initial_delay: float = 1.0
    reconnect_max_delay: float = 60.0
    # How long a call to a server that needs the person to sign in waits for them (seconds).
    signin_timeout: float = 600.0
    # Messages one view may send the host in one second; past it requests get an error, other
    # messages are dropped, and the burst is audited once.
    max_view_messages_per_second: int = 200
    # Requests one view may have in flight at once (tools/call, resources/read, ...).
    max_pending_requests_per_view: int = 32
    # A file a view offers with ui/download-file (bytes), and how many files one request may name.
    max_download_bytes: int = 20 * 1024 * 1024
    max_download_files: int = 20
    # CSP violation reports: a larger body is dropped (bytes).
    max_csp_report_bytes: int = 64 * 1024
    # Seconds a view's signed handle (its proxy page and CSP report address) stays valid.
    view_token_max_age: float = 24 * 3600
    # Progress of one call reaches the page and the view at most once per this many seconds (a flood
    # of notifications/progress is thinned; the last word is the call's result).
    progress_interval: float = 0.1
    # Log messages (notifications/message) one server may write to the host's log per minute; the
    # rest are dropped and counted.
    max_server_log_lines_per_minute: int = 600
    # Seconds between health checks of a ready server (ping, or server/discover on 2026-07-28 servers),
    # and how many missed checks in a row end the connection.
    server_health_interval: float = 10.0
    server_missed_health_checks: int = 3
    # Tools a view may offer of its own (app-provided tools, answered to the host's tools/list).
    max_app_tools_per_view: int = 50
    # Seconds a view has to answer the host's tools/call or tools/list for its own tools.
    app_tool_call_timeout: float = 30.0
    # A view's answer to the host's tools/call for one of its tools (bytes of JSON).
    max_app_tool_result_bytes: int = 10 * 1024 * 1024
    # An app-provided tool's description is cut to this many characters before the model sees it.
    max_app_tool_description_chars: int = 2000
    # Seconds a server's elicitation/create waits for the person before it is answered "cancel".
    elicitation_timeout: float = 600.0
    # Fields an elicitation form may have (properties of its requestedSchema).
    max_elicitation_fields: int = 50
    # Seconds a reply that waits for its audit record waits for a database that cannot take writes
    # (restarting, unreachable, full, read-only) before the view is answered with an error instead.
    database_wait_timeout: float = 30.0
    # Audit events kept in memory while the database cannot take them, written once it is back; past
    # this many the oldest are dropped (and the drop logged).
    max_audit_backlog: int = 100_000


DEFAULT_LIMITS = Limits()

# A sign-in's authorization URL is good this long; one the person has not used by then is made afresh.
SIGNIN_FLOW_MAX_AGE = 15 * 60.0


@dataclass(frozen=True)
class CheckSettings:
    """What `mcp-apps-host check` and `serve --watch` use besides the host's limits."""

    # The Chromium that `check` drives (headless); Debian's by default.
    chromium: str = "/usr/bin/chromium"
    # Seconds a view has in `check` for its handshake, and then again for its tool result.
    check_timeout: float = 30.0
    # Seconds without a ui/notifications/size-changed before `check` takes a screenshot ...
    check_settle: float = 1.0
    # ... but no longer than this; a view still resizing then is reported.
    check_settle_max: float = 8.0
    # A view whose height turns from growing to shrinking (or back) this often while it settles is in a loop.
    size_loop_reversals: int = 4
    # `serve --watch`: milliseconds of quiet after a file change before the server restarts.
    watch_debounce_ms: int = 300


def check_settings_from_env(environ: dict[str, str] | None = None) -> CheckSettings:
    """Override any check setting with `MCP_APPS_HOST_<NAME>` (e.g. MCP_APPS_HOST_CHROMIUM=/opt/chrome/chrome)."""
    return _from_env(CheckSettings(), environ)


def limits_from_env(base: Limits = DEFAULT_LIMITS, environ: dict[str, str] | None = None) -> Limits:
    """Override any limit with `MCP_APPS_HOST_<NAME>` (e.g. MCP_APPS_HOST_MAX_TEMPLATE_BYTES=1000000)."""
    return _from_env(base, environ)


_T = TypeVar("_T", Limits, CheckSettings)


def _from_env(base: _T, environ: dict[str, str] | None) -> _T:
    env = os.environ if environ is None else environ
    changes: dict[str, Any] = {}
    for f in fields(base):
        raw = env.get(f"MCP_APPS_HOST_{f.name.upper()}")
        if raw is None:
            continue
        current = getattr(base, f.name)
        if isinstance(current, str):
            if not raw.strip():
                raise ValueError(f"MCP_APPS_HOST_{f.name.upper()} must not be empty")
            changes[f.name] = raw
            continue
        kind = int if isinstance(current, int) else float
        try:
            value = kind(raw)
        except ValueError:
            raise ValueError(f"MCP_APPS_HOST_{f.name.upper()}={raw!r} is not a valid {kind.__name__}") from None
        if value <= 0:
            raise ValueError(f"MCP_APPS_HOST_{f.name.upper()}={raw!r} must be positive")
        changes[f.name] = value
    return replace(base, **changes)
