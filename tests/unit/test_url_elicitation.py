"""The server's word that a URL elicitation is complete reaches the call waiting for it, before or after it
starts waiting; without that word the wait ends at its timeout."""

from __future__ import annotations

import asyncio

import mcp_types as types

from mcp_apps_host.config.servers import ServerSpec
from mcp_apps_host.servers.connection import ServerConnection
from mcp_apps_host.settings import Limits


def _complete(elicitation_id: str) -> types.ElicitCompleteNotification:
    params = types.ElicitCompleteNotificationParams(elicitation_id=elicitation_id)
    return types.ElicitCompleteNotification(params=params)


def test_the_completion_reaches_the_waiting_call():
    async def run() -> tuple[bool, bool, bool]:
        conn = ServerConnection(ServerSpec("accounts", url="http://127.0.0.1:1/mcp"), Limits(), lambda _c: None)
        waiting = asyncio.create_task(conn.elicitation_done("e1", 30))
        await asyncio.sleep(0)  # the call waits first
        await conn._on_message(_complete("e1"))
        told_after = await waiting
        await conn._on_message(_complete("e2"))  # said before anyone waits for it
        told_before = await conn.elicitation_done("e2", 30)
        never_told = await conn.elicitation_done("e3", 0.05)
        return told_after, told_before, never_told

    assert asyncio.run(run()) == (True, True, False)
