"""The HTTP client servers are reached with, checked against ``allowedServerHosts`` at connect time.

Every TCP connection resolves the server's host name first, checks each address it resolves to, and
connects to a checked address: a name that resolves elsewhere later is checked again then, and nothing
is sent to an address that is refused. TLS and the Host header still use the name."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from typing import Any

import httpcore2
import httpx2
from httpcore2 import AsyncNetworkBackend, AsyncNetworkStream
from httpcore2._backends.auto import AutoBackend

from ..config.serverhosts import IPAddress, ServerHosts

_TIMEOUT = httpx2.Timeout(30.0, read=300.0)  # the MCP SDK's own: a server may hold a stream open


async def resolve(host: str, port: int) -> list[IPAddress]:
    """The addresses ``host`` resolves to (an address stands for itself)."""
    try:
        return [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        pass
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(ipaddress.ip_address(info[4][0]) for info in infos))


class RefusedHost(httpcore2.ConnectError):
    """A server's address is not allowed: the connection is never opened."""


class CheckedBackend(AsyncNetworkBackend):
    def __init__(self, hosts: ServerHosts) -> None:
        self._hosts = hosts
        self._inner = AutoBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> AsyncNetworkStream:
        try:
            addresses = await resolve(host, port)
        except OSError as exc:
            raise httpcore2.ConnectError(f"cannot resolve {host}: {exc}") from exc
        for address in addresses:  # every one: a name resolving to a public and a private address is refused
            refusal = self._hosts.refusal(host, address)
            if refusal is not None:
                raise RefusedHost(refusal)
        error: Exception = httpcore2.ConnectError(f"{host} resolves to no address")
        for address in addresses:
            try:
                return await self._inner.connect_tcp(str(address), port, timeout=timeout,
                                                     local_address=local_address, socket_options=socket_options)
            except httpcore2.ConnectError as exc:
                error = exc
        raise error

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None) -> AsyncNetworkStream:
        raise httpcore2.ConnectError("servers are reached over TCP only")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _CheckedTransport(httpx2.AsyncHTTPTransport):
    def __init__(self, hosts: ServerHosts) -> None:
        super().__init__()
        # The same pool httpx2 makes, on a backend that checks each address before it connects.
        self._pool = httpcore2.AsyncConnectionPool(ssl_context=httpx2.create_ssl_context(),
                                                   network_backend=CheckedBackend(hosts))


def server_http_client(hosts: ServerHosts, headers: dict[str, str] | None = None, auth: httpx2.Auth | None = None,
                       timeout: httpx2.Timeout | float = _TIMEOUT) -> httpx2.AsyncClient:
    """An HTTP client for a server (or its authorization server) that reaches only allowed addresses.
    Environment proxies are not used: a proxy would make the address it connects to unknowable here."""
    return httpx2.AsyncClient(headers=headers, auth=auth, timeout=timeout, transport=_CheckedTransport(hosts),
                              trust_env=False)
