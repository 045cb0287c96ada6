"""What a server may ask the host: elicitation, roots and sampling.

Servers before 2026-07-28 send these as requests of their own; 2026-07-28 servers return
them inside an `input_required` result and the SDK retries the call with the answers. The
SDK routes both to the same callbacks, built here: roots are the connection's own list;
elicitation and sampling go to the host (`ServerAsks`), which asks the person. A refusal
reaches the server as a JSON-RPC error naming why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

import mcp_types as types
from mcp.client.session import ClientRequestContext, ElicitationFnT, ListRootsFnT, SamplingFnT

from ..config.roots import root_name
from ..errors import CallFailed
from ..values.identity import Identity
from .catalog import dump

log = logging.getLogger("mcp_apps_host.servers")


class ServerAsks(Protocol):
    """The host's side of what servers ask (it decides, asks the person, keeps the audit trail)."""

    def sampling_enabled(self, server: str) -> bool: ...

    async def elicit(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        """An `ElicitResult` ({action, content?}); raises CallFailed to refuse."""
        ...

    async def sample(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        """A `CreateMessageResult`; raises CallFailed to refuse."""
        ...

    def roots_listed(self, server: str, roots: list[dict[str, Any]]) -> None:
        """The server was told its roots (for the audit trail)."""
        ...

    def for_person(self, identity: Identity) -> ServerAsks:
        """What a connection opened for one person asks: that person only."""
        ...


def _error(exc: CallFailed) -> types.ErrorData:
    return types.ErrorData(code=exc.code, message=str(exc))


def roots_callback(server: str, roots: Callable[[], tuple[str, ...]], asks: ServerAsks | None) -> ListRootsFnT:
    async def list_roots(context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        listed = [{"uri": uri, "name": root_name(uri)} for uri in roots()]
        if asks is not None:
            asks.roots_listed(server, listed)
        return types.ListRootsResult.model_validate({"roots": listed})

    return list_roots


def elicitation_callback(server: str, asks: ServerAsks) -> ElicitationFnT:
    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams,
                     ) -> types.ElicitResult | types.ErrorData:
        try:
            answer = await asks.elicit(server, dump(params))
        except CallFailed as exc:
            return _error(exc)
        return types.ElicitResult.model_validate(answer)

    return elicit


def sampling_callback(server: str, asks: ServerAsks) -> SamplingFnT:
    async def sample(context: ClientRequestContext, params: types.CreateMessageRequestParams,
                     ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        try:
            answer = await asks.sample(server, dump(params))
        except CallFailed as exc:
            return _error(exc)
        return types.CreateMessageResult.model_validate(answer)

    return sample


def client_callbacks(server: str, asks: ServerAsks | None, roots: Callable[[], tuple[str, ...]]) -> dict[str, Any]:
    """The `Client` keyword arguments for what this server may ask. A capability is advertised only when
    its callback is set: roots when the server has some, sampling when it is enabled for it."""
    callbacks: dict[str, Any] = {}
    if roots():
        callbacks["list_roots_callback"] = roots_callback(server, roots, asks)
    if asks is not None:
        callbacks["elicitation_callback"] = elicitation_callback(server, asks)
        if asks.sampling_enabled(server):
            callbacks["sampling_callback"] = sampling_callback(server, asks)
    return callbacks
