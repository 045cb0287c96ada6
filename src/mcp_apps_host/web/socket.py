"""The WebSocket between a tab and the host: page frames in, host frames out.

A reply to a view's request leaves only once the audit trail holds it (one group commit
covers a whole batch of frames), so a crash never loses what a view saw answered; a database
that cannot take it in time turns it into an error reply (`host/tab/withheld.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketDisconnected

from ..errors import DatabaseUnavailable
from ..host.process.core import Host
from ..host.tab import frames as f
from ..host.tab.tab import Tab
from ..host.tab.withheld import is_reply
from ..telemetry import answers
from .deepjson import cut_deep

log = logging.getLogger("mcp_apps_host.web")


CLOSE_SERVICE_RESTART = 1012  # WebSocket close code: the server is restarting, reconnect
FLUSH_BEFORE_CLOSE_S = 10.0  # on a stop, how long the frames already queued for the page may take to leave


class _Link:
    """What the process's stop does to this tab (`Lifecycle.drain`)."""

    def __init__(self, socket: WebSocket, outbox: asyncio.Queue[tuple[f.HostFrame, answers.Answer | None]]) -> None:
        self.socket = socket
        self.outbox = outbox

    def reconnect(self, reason: str) -> None:
        self.outbox.put_nowait((f.Reconnect(), None))

    async def close(self) -> None:
        # Whatever was queued (answers among it) leaves first: an answer the host committed reaches the page.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.outbox.join(), FLUSH_BEFORE_CLOSE_S)
        with contextlib.suppress(Exception):  # the page may be gone already
            await self.socket.close(code=CLOSE_SERVICE_RESTART)


async def run_tab(host: Host, socket: WebSocket) -> None:
    # Each frame with the span of the view request it answers, if any: that span ends once it is written.
    outbox: asyncio.Queue[tuple[f.HostFrame, answers.Answer | None]] = asyncio.Queue()
    tab = Tab(host, lambda frame: outbox.put_nowait((frame, answers.take())))

    async def write(first: tuple[f.HostFrame, answers.Answer | None]) -> None:
        """``first`` and whatever else is queued by now. What it sent goes when it returns: the writer waits for the
        next frame holding none of it (an idle tab held its last frames, a tool's result however large)."""
        batch = [first]
        while not outbox.empty():
            batch.append(outbox.get_nowait())
        traced = [answer for _, answer in batch if answer is not None]
        frames = [frame for frame, _ in batch]
        try:
            if host.audit is not None and any(is_reply(frame) for frame in frames):
                with answers.committing(traced):
                    try:
                        await host.audit.drain()
                    except DatabaseUnavailable as exc:  # not on record: the view is answered with an error
                        frames = [tab.withhold(frame, exc) for frame in frames]
            for frame in frames:
                await socket.send_text(frame.to_json())
        finally:
            for answer in traced:
                answer.sent()
            for _ in batch:
                outbox.task_done()

    async def writer() -> None:
        while True:
            await write(await outbox.get())

    write_task = asyncio.create_task(writer())
    leave = host.lifecycle.tab(_Link(socket, outbox))
    limit = host.limits.max_ws_frame_bytes
    try:
        while True:
            text = await socket.receive_text()
            if len(text) > limit:
                log.warning("dropped a %d-byte frame from the page (max_ws_frame_bytes = %d)", len(text), limit)
                continue
            try:
                data = json.loads(text)
            except ValueError:
                log.warning("dropped a frame from the page that is not JSON")
                continue
            except RecursionError:
                # Nested deeper than Python parses (a view can send that): read it with the deep part
                # cut out, so the message is still answered, and refused, rather than end the tab.
                try:
                    data = json.loads(cut_deep(text))
                except (json.JSONDecodeError, RecursionError):
                    log.warning("dropped a frame from the page that is not JSON")
                    continue
            await tab.receive(data)
    except (WebSocketDisconnect, WebSocketDisconnected):  # gone: noticed by a read, or by a send first
        pass
    finally:
        leave()
        await tab.close()
        write_task.cancel()
        while not outbox.empty():  # never written: their spans end all the same
            _, answer = outbox.get_nowait()
            if answer is not None:
                answer.sent()
