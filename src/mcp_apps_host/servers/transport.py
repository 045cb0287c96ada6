"""How the host reaches a server: Streamable HTTP, or a child process over stdio whose
stderr is kept, so a failure can say what the server said."""

from __future__ import annotations

import os
import tempfile
from typing import Any, TextIO

import httpx2
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from ..config.serverhosts import SERVE_HOSTS, ServerHosts
from ..config.servers import ServerSpec
from ..settings import Limits
from .guard import server_http_client

CONNECTION_CLOSED = -32000  # the SDK's code for a connection that ended under a request


class StderrCapture:
    """The stderr of the server's latest start (one file per start, closed with the next)."""

    def __init__(self) -> None:
        self._file: TextIO | None = None

    def fresh(self) -> TextIO:
        if self._file is not None:
            self._file.close()
        self._file = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        return self._file

    def tail(self, lines: int = 8) -> str:
        if self._file is None:
            return ""
        try:
            self._file.seek(0)
            text = self._file.read()
        except (OSError, ValueError):
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])


def open_transport(spec: ServerSpec, limits: Limits, stderr: StderrCapture, auth: httpx2.Auth | None = None,
                   hosts: ServerHosts = SERVE_HOSTS) -> Any:
    """The SDK transport for ``spec`` (an async context manager the SDK's `Client` enters); ``auth`` signs
    its HTTP requests in (MCP authorization); ``hosts`` says which addresses it may connect to."""
    if spec.url:
        http = server_http_client(hosts, headers=spec.headers or None, auth=auth)
        # Templates can be several MB and arrive as one SSE event.
        return streamable_http_client(spec.url, http_client=http, max_sse_event_size=limits.max_template_bytes * 2)
    params = StdioServerParameters(
        command=spec.command or "",
        args=list(spec.args),
        env={**os.environ, **spec.env} if spec.env else None,
        cwd=spec.cwd,
    )
    return stdio_client(params, errlog=stderr.fresh())


def describe_failure(exc: BaseException, spec: ServerSpec, stderr: StderrCapture) -> str:
    """What went wrong with a server, in words, with the last lines it wrote to stderr."""
    if isinstance(exc, TimeoutError):
        text = str(exc) or "did not answer in time"
    elif isinstance(exc, FileNotFoundError):
        text = f"cannot start {spec.command!r}: command not found"
    elif isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED and exc.message == "Connection closed":
        # The SDK's words for a stream that ended: say whose end it was.
        text = ("the server closed the connection (its process exited or closed its stdout)" if spec.command
                else "the server closed the connection")
    elif isinstance(exc, MCPError):
        text = f"error {exc.code}: {exc.message}"
    elif spec.url and type(exc).__name__ in ("ConnectError", "ConnectTimeout"):  # the HTTP client's own words
        text = f"cannot reach {spec.describe()}: {exc}"
    elif isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe_failure(e, spec, stderr) for e in exc.exceptions[:3])
    else:
        text = str(exc) or type(exc).__name__
    tail = stderr.tail()
    return f"{text}\n{tail}" if tail and tail not in text else text
