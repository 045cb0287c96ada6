"""The host's listening sockets hand asyncio connections with Nagle off: a WebSocket frame written
right after another must not wait for the browser's delayed ACK."""

from __future__ import annotations

import asyncio
import socket

from mcp_apps_host.cli import _listen


def test_accepted_connections_have_tcp_nodelay() -> None:
    async def main() -> int:
        listener = _listen("127.0.0.1", 0)
        accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                sock = transport.get_extra_info("socket")
                accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
        try:
            _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
            nodelay = await asyncio.wait_for(accepted, 10)
            writer.close()
            return nodelay
        finally:
            server.close()
            await server.wait_closed()

    assert asyncio.run(main()) != 0
