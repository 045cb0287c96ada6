"""mcp-apps-host: a Python host for MCP Apps (extension `io.modelcontextprotocol/ui`).

What is listed in ``__all__`` is the supported API; every other module is private by
convention and may change. Names load on first use, so importing the package (or one
of its demo servers) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config.host import HostConfig
    from .config.servers import ServerSpec
    from .errors import (
        CallFailed,
        ConfigError,
        ConsentConfigError,
        CspError,
        DatabaseError,
        DatabaseUnavailable,
        HostError,
        IllegalTransition,
        InvalidFrame,
        InvalidMessage,
        NotGranted,
        ServerUnavailable,
        SignInRequired,
        TemplateError,
    )
    from .settings import Limits
    from .values.apptools import AppTool
    from .values.csp import ViewCsp
    from .values.identity import Identity
    from .values.protocol import APP_MIME_TYPE, EXTENSION_ID, PROTOCOL_VERSION
    from .values.templates import Template
    from .values.tools import ToolEntry
    from .version import __version__
    from .views.context import HostEnvironment, ViewSpec
    from .views.effects import (
        AppToolResult,
        AppToolsChanged,
        AskConsent,
        CancelProxied,
        Decided,
        DisplayModeChanged,
        Download,
        Effect,
        Log,
        ModelContextUpdated,
        OpenLink,
        PostChatMessage,
        PostToView,
        ProxyResourceList,
        ProxyResourceRead,
        ProxyToolCall,
        Refused,
        Resize,
        Sample,
        SaveFiles,
        StartInitTimer,
        StartRequestTimer,
        StartTeardownTimer,
        StateChanged,
        ViewState,
    )
    from .views.session import ViewSession
    from .web.embed import HostApp, create_app

__all__ = [
    "APP_MIME_TYPE",
    "EXTENSION_ID",
    "PROTOCOL_VERSION",
    "AppTool",
    "AppToolResult",
    "AppToolsChanged",
    "AskConsent",
    "CallFailed",
    "CancelProxied",
    "ConfigError",
    "ConsentConfigError",
    "CspError",
    "DatabaseError",
    "DatabaseUnavailable",
    "Decided",
    "DisplayModeChanged",
    "Download",
    "Effect",
    "HostApp",
    "HostConfig",
    "HostEnvironment",
    "HostError",
    "Identity",
    "IllegalTransition",
    "InvalidFrame",
    "InvalidMessage",
    "Limits",
    "Log",
    "ModelContextUpdated",
    "NotGranted",
    "OpenLink",
    "PostChatMessage",
    "PostToView",
    "ProxyResourceList",
    "ProxyResourceRead",
    "ProxyToolCall",
    "Refused",
    "Resize",
    "Sample",
    "SaveFiles",
    "ServerSpec",
    "ServerUnavailable",
    "SignInRequired",
    "StartInitTimer",
    "StartRequestTimer",
    "StartTeardownTimer",
    "StateChanged",
    "Template",
    "TemplateError",
    "ToolEntry",
    "ViewCsp",
    "ViewSession",
    "ViewSpec",
    "ViewState",
    "__version__",
    "create_app",
]

# Where each name of the API lives.
_WHERE = {
    "__version__": "version",
    "EXTENSION_ID": "values.protocol",
    "APP_MIME_TYPE": "values.protocol",
    "PROTOCOL_VERSION": "values.protocol",
    "HostConfig": "config.host",
    "Identity": "values.identity",
    "create_app": "web.embed",
    "HostApp": "web.embed",
    "ServerSpec": "config.servers",
    "Limits": "settings",
    "ToolEntry": "values.tools",
    "Template": "values.templates",
    "ViewCsp": "values.csp",
    "ViewSession": "views.session",
    "ViewSpec": "views.context",
    "HostEnvironment": "views.context",
    **dict.fromkeys(("HostError", "ConfigError", "ConsentConfigError", "CspError", "TemplateError",
                     "ServerUnavailable", "CallFailed", "InvalidMessage", "IllegalTransition", "InvalidFrame",
                     "DatabaseError", "DatabaseUnavailable", "SignInRequired", "NotGranted"), "errors"),
    **dict.fromkeys(("Effect", "ViewState", "PostToView", "ProxyToolCall", "ProxyResourceRead", "ProxyResourceList",
                     "CancelProxied", "AskConsent", "OpenLink", "PostChatMessage", "ModelContextUpdated",
                     "DisplayModeChanged", "Resize", "Log", "Decided", "Sample", "Download", "SaveFiles", "Refused",
                     "StateChanged", "StartTeardownTimer", "StartInitTimer", "StartRequestTimer", "AppToolsChanged",
                     "AppToolResult"), "views.effects"),
    "AppTool": "values.apptools",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_apps_host' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
