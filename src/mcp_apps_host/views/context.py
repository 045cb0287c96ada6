"""What is fixed when a view is mounted, what the host knows of the page, and the
`hostCapabilities` and `hostContext` a view receives in its `ui/initialize` result."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..config.serverpolicy import ViewRules
from ..settings import Limits
from ..values.protocol import DISPLAY_MODES, LATER_RESULTS, MODALITY_OF_BLOCK, OPEN_VIEW, VIEW_STATE
from ..values.tools import ToolEntry
from ..version import __version__
from .jsonrpc import RequestId

# hostContext key of the person's display preferences (the spec has none for them).
ACCESSIBILITY_KEY = "mcp-apps-host/accessibility"


@dataclass
class HostEnvironment:
    """What the host knows about the page the view is shown in."""

    theme: str = "light"
    styles: dict[str, Any] = field(default_factory=dict)
    locale: str = "en-US"
    time_zone: str = "UTC"
    user_agent: str = f"mcp-apps-host/{__version__}"
    touch: bool = False
    hover: bool = True
    max_width: int | None = None
    platform: str = "web"
    # The person's prefers-reduced-motion, prefers-contrast and forced-colors, as their browser says.
    reduced_motion: bool = False
    contrast: str = "no-preference"
    forced_colors: bool = False
    # A fixed container size (the inspector's controls); None: flexible, up to the limits.
    container_width: int | None = None
    container_height: int | None = None


@dataclass(frozen=True)
class ViewSpec:
    """Everything fixed when the view is mounted."""

    server: str
    tool: ToolEntry
    html: str
    call_id: RequestId | None
    csp: dict[str, list[str]]  # what the sandbox enforces (for hostCapabilities.sandbox.csp)
    permissions: dict[str, dict[str, Any]]  # granted, camelCase
    allow: str  # the inner iframe's allow attribute
    app_tools: frozenset[str]  # names of this server's tools a view may call ("app" visibility)
    all_tools: frozenset[str]  # every tool name of this server (to tell "hidden" from "unknown")
    # The definitions of the `app_tools`, as the view's tools/list gets them.
    server_tools: tuple[dict[str, Any], ...] = ()
    # Consent policy for tools/call: name -> (allow|ask|deny, reason, may "always allow" be offered).
    decide_tool_call: Callable[[str], tuple[str, str, bool]] = lambda _name: ("allow", "no policy", False)
    max_download_bytes: int = 20 * 1024 * 1024
    max_download_files: int = 20
    # sampling/createMessage: () -> (allow|ask|deny, reason); off unless the host enables it per server.
    decide_sampling: Callable[[], tuple[str, str]] = lambda: ("deny", "sampling is off")
    sampling_enabled: bool = False
    compat: str | None = None  # "openai": the view runs the window.openai shim
    widget_state: dict[str, Any] | None = None  # the state the view last kept, restored with it
    view_rules: ViewRules = field(default_factory=ViewRules)  # the server entry's "views": what needs no asking
    # This server's tools with a view that a person may open (OPEN_VIEW): those the launcher lists.
    view_tools: frozenset[str] = frozenset()
    # The largest state the host keeps for the view (VIEW_STATE); 0: it keeps none (no database).
    state_max_bytes: int = 0


# Content blocks that reach the conversation and the model as what they are: text, the text of an
# embedded resource, a resource link. Images and audio are accepted but reach the model only as a
# placeholder, so they are not claimed.
MESSAGE_BLOCKS = ("text", "resource", "resource_link")


def supported_blocks(extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """`SupportedContentBlockModalities` for the blocks the host passes on."""
    return {**{MODALITY_OF_BLOCK[b]: {} for b in MESSAGE_BLOCKS}, **{name: {} for name in extra}}


def host_capabilities(spec: ViewSpec) -> dict[str, Any]:
    """Capabilities are objects, never ``true``: the view's SDK rejects anything else."""
    sandbox: dict[str, Any] = {"permissions": spec.permissions, "csp": spec.csp}
    return {
        "openLinks": {},
        "serverTools": {"listChanged": True},  # the host tells views when their server's tools change
        # subscribe: beyond the stable spec's fields, as MCP servers say it: a view may follow a resource.
        "serverResources": {"subscribe": True},
        "logging": {},
        "message": supported_blocks(),
        "updateModelContext": supported_blocks(("structuredContent",)),
        "downloadFile": {},
        **({"sampling": {}} if spec.sampling_enabled else {}),
        # Beyond the spec: a view may ask to open another view of its server (with the person's consent),
        # a view that declares LATER_RESULTS too is given later calls of its tool instead of a new view,
        # and the host keeps a view's own state for it (VIEW_STATE) where it has a database.
        "experimental": {OPEN_VIEW: {}, LATER_RESULTS: {},
                         **({VIEW_STATE: {"maxBytes": spec.state_max_bytes}} if spec.state_max_bytes else {})},
        "sandbox": sandbox,
    }


def host_context(spec: ViewSpec, env: HostEnvironment, limits: Limits, display_mode: str) -> dict[str, Any]:
    tool = dict(spec.tool.definition)
    tool.setdefault("inputSchema", {"type": "object"})  # the view's SDK rejects a tool without one
    tool_info: dict[str, Any] = {"tool": tool}
    if spec.call_id is not None:
        tool_info["id"] = spec.call_id
    dims: dict[str, Any] = ({"height": env.container_height} if env.container_height
                            else {"maxHeight": limits.inline_max_height})
    if env.container_width:
        dims["width"] = env.container_width
    elif env.max_width:
        dims["maxWidth"] = env.max_width
    context: dict[str, Any] = {
        "toolInfo": tool_info,
        "theme": env.theme,
        "styles": env.styles,
        "displayMode": display_mode,
        "availableDisplayModes": list(DISPLAY_MODES),
        "containerDimensions": dims,
        "locale": env.locale,
        "timeZone": env.time_zone,
        "userAgent": env.user_agent,
        "platform": env.platform,
        "deviceCapabilities": {"touch": env.touch, "hover": env.hover},
        "safeAreaInsets": {"top": 0, "right": 0, "bottom": 0, "left": 0},
    }
    # The spec's hostContext has no key for these preferences: they travel under the host's own name.
    context[ACCESSIBILITY_KEY] = {"prefersReducedMotion": env.reduced_motion, "prefersContrast": env.contrast,
                                  "forcedColors": env.forced_colors}
    if spec.compat == "openai":
        # Only the shim reads it (as window.openai.widgetState); MCP Apps views never get the key.
        context["openai/widgetState"] = spec.widget_state
    return context
