"""The host's spans: names after the MCP methods, and the attributes they may carry.

Spans cost next to nothing until a tracer provider is installed (`tracing.py`). No argument value
reaches an attribute unless `MCP_APPS_HOST_TRACE_ARGUMENTS=1` allows it; nothing else that comes from
a view, a server or a person is put in one but names (server, tool, method) and outcomes.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import cache
from typing import Any, Literal

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

tracer = trace.get_tracer("mcp_apps_host")

Caller = Literal["model", "person", "view"]
Outcome = Literal["ok", "tool-error", "error", "refused", "allowed", "denied", "cancelled", "signed-in"]

# Attribute names: the MCP and GenAI semantic conventions where they have one, the host's own otherwise.
METHOD = "mcp.method.name"
REQUEST_ID = "jsonrpc.request.id"
TOOL = "gen_ai.tool.name"
SERVER = "mcp_apps_host.server"
CALLER = "mcp_apps_host.caller"
VIEW = "mcp_apps_host.view"
DECISION = "mcp_apps_host.decision"
OUTCOME = "mcp_apps_host.outcome"
RESOURCE_URI = "mcp.resource.uri"
ARGUMENTS = "mcp_apps_host.arguments"  # only with MCP_APPS_HOST_TRACE_ARGUMENTS=1

ARGUMENTS_SETTING = "MCP_APPS_HOST_TRACE_ARGUMENTS"
MAX_ARGUMENTS_CHARS = 4096
_FAILED: frozenset[Outcome] = frozenset({"error", "tool-error", "refused", "denied"})


@cache
def arguments_allowed() -> bool:
    """Whether the operator allowed argument values in spans (read once per process)."""
    return os.environ.get(ARGUMENTS_SETTING, "").strip().lower() in ("1", "true", "yes")


def _arguments(arguments: Mapping[str, Any] | None) -> dict[str, str]:
    if arguments is None or not arguments_allowed():
        return {}
    try:
        text = json.dumps(arguments, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        text = "(not JSON)"
    return {ARGUMENTS: text[:MAX_ARGUMENTS_CHARS]}


def request_id_text(request_id: object) -> str:
    return str(request_id)[:64]


def view_request(method: str, request_id: object, *, server: str, view: str, tool: str | None = None,
                 arguments: Mapping[str, Any] | None = None) -> Span:
    """The root span of one request a view sent (``tools/call TOOL``, ``resources/read``, ...): started when it
    comes in, ended once its answer has left (`answers.py`). ``method`` and ``tool`` are names the host
    knows, never a view's own words."""
    attributes: dict[str, str] = {METHOD: method, REQUEST_ID: request_id_text(request_id), SERVER: server,
                                  CALLER: "view", VIEW: view}
    if tool is not None:
        attributes[TOOL] = tool
    return tracer.start_span(f"{method} {tool}" if tool else method, kind=SpanKind.SERVER,
                             attributes={**attributes, **_arguments(arguments)})


@contextmanager
def tool_call(server: str, tool: str, caller: Caller, arguments: Mapping[str, Any] | None) -> Iterator[Span]:
    """The host's ``tools/call TOOL`` for the person or the model, current while it runs; the server
    request inside it is the MCP SDK's client span, which passes the trace on in `_meta.traceparent`."""
    with _current(f"tools/call {tool}", {METHOD: "tools/call", SERVER: server, TOOL: tool, CALLER: caller,
                                         **_arguments(arguments)}) as span:
        yield span


@contextmanager
def step(name: str, **attributes: str) -> Iterator[Span]:
    """A span inside the current one (a model turn, a template read, a consent wait), current while it runs."""
    with _current(name, attributes) as span:
        yield span


@contextmanager
def _current(name: str, attributes: Mapping[str, Any]) -> Iterator[Span]:
    """A span current while its block runs; one the block leaves by an exception says it was cancelled or
    failed (the caller says how a block that returns ended)."""
    with tracer.start_as_current_span(name, attributes=attributes, record_exception=False,
                                      set_status_on_exception=False) as span:
        try:
            yield span
        except asyncio.CancelledError:
            finish(span, "cancelled", end=False)
            raise
        except Exception:
            finish(span, "error", end=False)
            raise


def start(name: str, **attributes: str) -> Span:
    """A span inside the current one that ends elsewhere (a consent the person answers later, a sign-in)."""
    return tracer.start_span(name, attributes=attributes)


def finish(span: Span, outcome: Outcome, *, end: bool = True) -> None:
    """Say how it ended: the outcome only (an error's words may quote a view's or a server's values)."""
    if not span.is_recording():
        return
    span.set_attribute(OUTCOME, outcome)
    if outcome in _FAILED:
        span.set_status(Status(StatusCode.ERROR, outcome))
    if end:
        span.end()


def decided(span: Span, decision: str) -> None:
    if span.is_recording():
        span.set_attribute(DECISION, decision)
