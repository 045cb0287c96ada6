"""What a view asked the host to do on its behalf: tool calls and resource reads on its own
server, sampling by the host's model, and files to save. Each runs as a task and completes
the view's request."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from mcp.shared.exceptions import MCPError

from ..chat.sampling import create_message
from ..errors import CallFailed
from ..servers.connection import ProgressFn
from ..values.protocol import RESOURCE_NOT_FOUND_CODES, SAMPLING_CREATE_MESSAGE
from ..views import effects as fx
from ..views.downloads import read_as_file
from ..views.jsonrpc import INTERNAL_ERROR
from ..views.session import ViewSession
from . import frames as f
from .audit import Auditor
from .core import Host
from .page import Page

# Runs a tool call a view asked for, as the conversation shows it; returns the result or raises CallFailed.
ViewCallRunner = Callable[[str, str, dict[str, Any], ProgressFn], Awaitable[dict[str, Any]]]


class _View(Protocol):
    session: ViewSession
    tasks: dict[Any, asyncio.Task[None]]

    @property
    def handle(self) -> str: ...

    @property
    def server(self) -> str: ...


def read_error(server: str, uri: str, exc: Exception) -> tuple[int, str]:
    """The code and words for a failed resources/read (both spellings of "not found" read as one)."""
    code = exc.code if isinstance(exc, MCPError) else INTERNAL_ERROR
    if isinstance(exc, MCPError) and code in RESOURCE_NOT_FOUND_CODES and "not found" in exc.message.lower():
        return code, f"server {server!r} has no resource {uri} (not found, error {code})"
    return code, f"resources/read {uri} on server {server!r} failed: {exc}"


class Proxied:
    def __init__(self, host: Host, audit: Auditor, run_view_call: ViewCallRunner,
                 apply: Callable[[Any, list[fx.Effect]], None], page: Page) -> None:
        self.host = host
        self.audit = audit
        self.run_view_call = run_view_call
        self.apply = apply
        self.page = page

    def _complete(self, view: _View, request_id: Any, result: dict[str, Any] | None = None,
                  error: tuple[int, str] | None = None) -> None:
        view.tasks.pop(request_id, None)
        self.apply(view, view.session.complete_request(request_id, result=result, error=error))

    async def tool_call(self, view: _View, call: fx.ProxyToolCall) -> None:
        async def forward_progress(progress: float, total: float | None, message: str | None) -> None:
            if call.progress_token is not None:
                self.apply(view, view.session.progress(call.progress_token, progress, total, message))

        try:
            result = await self.run_view_call(view.server, call.name, call.arguments, forward_progress)
        except CallFailed as exc:
            self._complete(view, call.request_id, error=(exc.code, str(exc)))
            return
        self._complete(view, call.request_id, result=result)

    async def resource_read(self, view: _View, read: fx.ProxyResourceRead) -> None:
        try:
            result = await self.host.servers.get(view.server).read_resource(read.uri)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the view hears why
            self._complete(view, read.request_id, error=read_error(view.server, read.uri, exc))
            return
        self._complete(view, read.request_id, result=result)

    async def sample(self, view: _View, sample: fx.Sample) -> None:
        assert self.host.agent is not None  # the session only asks when a model is configured
        try:
            result = await create_message(self.host.agent.adapter, sample.params)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the view hears why
            self._complete(view, sample.request_id, error=(INTERNAL_ERROR, f"the model failed: {exc}"))
            return
        self.audit("model->host", SAMPLING_CREATE_MESSAGE, server=view.server, view=view.handle,
                   msg_id=sample.request_id, payload=result)
        self._complete(view, sample.request_id, result=result)

    async def save_files(self, view: _View, save: fx.SaveFiles) -> None:
        """Read what must be read from the view's server, then save every file, or none."""
        files: list[fx.Download] = []
        for file in save.files:
            if file.resource_uri is None:
                files.append(file)
                continue
            try:
                result = await self.host.servers.get(view.server).read_resource(file.resource_uri)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the view hears which file failed
                code, text = read_error(view.server, file.resource_uri, exc)
                self._complete(view, save.request_id, error=(code, f"ui/download-file: {text}"))
                return
            read = read_as_file(file, result, self.host.limits.max_download_bytes)
            if isinstance(read, str):
                self._complete(view, save.request_id, error=(INTERNAL_ERROR, f"ui/download-file: {read}"))
                return
            files.append(read)
        for file in files:
            self.page.send(f.Download(view=view.handle, filename=file.filename, mime_type=file.mime_type,
                                      text=file.text, blob=file.blob, url=file.url))
        self._complete(view, save.request_id, result={})
