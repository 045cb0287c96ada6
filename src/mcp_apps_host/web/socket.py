"""The WebSocket between a tab and the host: page frames in, host frames out.

A reply to a view's request leaves only once the audit trail holds it (one group commit
covers a whole batch of frames), so a crash never loses what a view saw answered.
"""

from __future__ import annotations

import asyncio
import json
import logging

from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketDisconnected

from ..host.process.core import Host
from ..host.tab import frames as f
from ..host.tab.tab import Tab
from ..telemetry import answers
from .deepjson import cut_deep

log = logging.getLogger("mcp_apps_host.web")


def _is_reply(frame: f.HostFrame) -> bool:
    return isinstance(frame, f.ViewPost) and "id" in frame.message and (
        "result" in frame.message or "error" in frame.message)


async def run_tab(host: Host, socket: WebSocket) -> None:
    # Each frame with the span of the view request it answers, if any: that span ends once it is written.
    outbox: asyncio.Queue[tuple[f.HostFrame, answers.Answer | None]] = asyncio.Queue()
    tab = Tab(host, lambda frame: outbox.put_nowait((frame, answers.take())))

    async def writer() -> None:
        while True:
            batch = [await outbox.get()]
            while not outbox.empty():
                batch.append(outbox.get_nowait())
            traced = [answer for _, answer in batch if answer is not None]
            try:
                if host.audit is not None and any(_is_reply(frame) for frame, _ in batch):
                    with answers.committing(traced):
                        await host.audit.drain()
                for frame, _ in batch:
                    await socket.send_text(frame.to_json())
            finally:
                for answer in traced:
                    answer.sent()

    write_task = asyncio.create_task(writer())
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
        await tab.close()
        write_task.cancel()
        while not outbox.empty():  # never written: their spans end all the same
            _, answer = outbox.get_nowait()
            if answer is not None:
                answer.sent()
