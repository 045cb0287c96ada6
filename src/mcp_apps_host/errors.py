"""Every error the host raises on purpose, under one root.

Catch :class:`HostError` to catch them all. Each message says what was wrong and
where (the server, tool, view, config key or setting), so it can be shown to a
person as it is.
"""

from __future__ import annotations

from typing import Any


class HostError(Exception):
    """The root of the host's own errors."""


class ConfigError(HostError, ValueError):
    """A server spec, config file, flag or environment setting is wrong; the message names it."""


class ConsentConfigError(ConfigError):
    """The ``consent`` or ``sampling`` section of the config file is malformed; names the key path."""


class CspError(HostError, ValueError):
    """A declared CSP entry (or the list holding it) that the host will not put in a policy.

    ``field`` names where it was found (``_meta.ui.csp.connectDomains[2]``) and
    ``entry`` is the offending value.
    """

    def __init__(self, field: str, entry: object, problem: str) -> None:
        self.field = field
        self.entry = entry
        self.problem = problem
        text = repr(entry)
        super().__init__(f"{field}: {text if len(text) <= 120 else text[:117] + '...'} {problem}")


class TemplateError(HostError, ValueError):
    """A template cannot be rendered; the message names the server, the URI and the rule."""


class ServerUnavailable(HostError):
    """A request was made to a server that is not connected right now (or does not exist)."""


class CallFailed(HostError):
    """A tool call ended without a result; the message is what a person sees.

    ``code`` is the JSON-RPC error code a view gets for it.
    """

    def __init__(self, message: str, code: int = -32603) -> None:
        super().__init__(message)
        self.code = code


class InvalidMessage(HostError, ValueError):
    """A message from a view that is not valid JSON-RPC 2.0. ``reply_id`` is set when an error reply is possible."""

    def __init__(self, reason: str, reply_id: int | str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.reply_id = reply_id


class IllegalTransition(HostError, RuntimeError):
    """The host asked a view session for something its state does not allow (a host bug, not a view's)."""


class InvalidFrame(HostError, ValueError):
    """A WebSocket frame from the page that is not one of the page protocol's frames."""

    def __init__(self, message: str, frame_type: Any = None) -> None:
        super().__init__(message)
        self.frame_type = frame_type


class DatabaseError(HostError):
    """The database cannot be opened or migrated; the message names the URL (without its password)."""


class DatabaseUnavailable(HostError):
    """The database cannot take writes now (unreachable, restarting, full or read-only) and did not within
    the named limit; nothing that needed the write was answered as done."""


class SignInRequired(ServerUnavailable):
    """A server needs the person to sign in (MCP authorization) and they have not, or declined."""


class NotGranted(ServerUnavailable):
    """A person asked for a server that is not granted to them; the message names the rule (`policy: …`)."""
