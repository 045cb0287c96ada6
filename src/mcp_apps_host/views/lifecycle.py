"""What the host sends a view on its own initiative: the tool's input and result, host
context changes, progress, and calls to the view's own tools. A part of `ViewSession`.

Tool input and result follow the spec's order (partial inputs, one input, then one result
or cancellation); anything sent before the view is initialized is queued, because the
view's SDK drops what arrives earlier.
"""

from __future__ import annotations

from typing import Any

from ..errors import CallFailed, IllegalTransition
from ..settings import Limits
from ..values import protocol as M
from . import jsonrpc as rpc
from .apptools import AppToolClient
from .context import ACCESSIBILITY_KEY, HostEnvironment, ViewSpec
from .effects import Effect, PostToView, ViewState
from .jsonrpc import RequestId
from .states import ToolPhase, ToolStep, tool_step


class HostToView:
    spec: ViewSpec
    env: HostEnvironment
    limits: Limits
    state: ViewState
    app_tools: AppToolClient
    _queue: list[dict[str, Any]]
    app_capabilities: dict[str, Any]
    tool_phase: ToolPhase
    # What the view was given, so that it can be rendered again the same way (`serve --watch`).
    last_input: dict[str, Any] | None
    last_result: dict[str, Any] | None
    last_cancelled: str | None

    def host_context(self) -> dict[str, Any]:
        raise NotImplementedError

    def progress(self, token: str | int, progress: float, total: float | None, message: str | None) -> list[Effect]:
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        return self._send(rpc.notification(M.PROGRESS, params))

    # ---- the view's own tools (host → view) --------------------------------------------------

    def call_app_tool(self, request_id: RequestId, name: str, arguments: dict[str, Any]) -> list[Effect]:
        """tools/call, as ``request_id``, for a tool the view offers; the answer comes back as an `AppToolResult`.

        Raises :class:`CallFailed` when the view is not up or offers no such tool.
        """
        if self.state != ViewState.READY:
            raise CallFailed(f"the view of {self.spec.server} · {self.spec.tool.name} is {self.state}: "
                             "its tools are gone with it", rpc.INVALID_REQUEST)
        return self.app_tools.call(request_id, name, arguments)

    def request_timed_out(self, request_id: RequestId) -> list[Effect]:
        return self.app_tools.timed_out(request_id)

    def server_tools_changed(self, spec: ViewSpec) -> list[Effect]:
        """The view's server changed its tools: what the view may call follows, and it is told."""
        self.spec = spec
        if self.state != ViewState.READY:
            return []
        return [PostToView(rpc.notification(M.TOOLS_LIST_CHANGED, {}))]

    def resource_updated(self, uri: str) -> list[Effect]:
        """A resource the view subscribed to changed: it reads it again when it wants."""
        if self.state != ViewState.READY:
            return []
        return [PostToView(rpc.notification(M.RESOURCE_UPDATED, {"uri": uri}))]

    # ---- tool lifecycle (host → view) -----------------------------------------------------

    def _send(self, message: dict[str, Any]) -> list[Effect]:
        if self.state in (ViewState.CLOSED, ViewState.ERROR, ViewState.TEARING_DOWN):
            return []
        if self.state != ViewState.READY:
            self._queue.append(message)
            return []
        return [PostToView(message)]

    def tool_input_partial(self, arguments: dict[str, Any]) -> list[Effect]:
        self.tool_phase = tool_step(self.tool_phase, ToolStep.INPUT_PARTIAL)
        return self._send(rpc.notification(M.TOOL_INPUT_PARTIAL, {"arguments": arguments}))

    def tool_input(self, arguments: dict[str, Any]) -> list[Effect]:
        self.tool_phase = tool_step(self.tool_phase, ToolStep.INPUT)
        self.last_input = arguments
        return self._send(rpc.notification(M.TOOL_INPUT, {"arguments": arguments}))

    def tool_result(self, result: dict[str, Any]) -> list[Effect]:
        self.tool_phase = tool_step(self.tool_phase, ToolStep.RESULT)
        self.last_result = result
        return self._send(rpc.notification(M.TOOL_RESULT, result))

    def tool_cancelled(self, reason: str) -> list[Effect]:
        self.tool_phase = tool_step(self.tool_phase, ToolStep.CANCELLED)
        self.last_cancelled = reason
        return self._send(rpc.notification(M.TOOL_CANCELLED, {"reason": reason}))

    # ---- mcp-apps-host/later-results (beyond the spec) -------------------------------------------

    def takes_later_results(self) -> bool:
        """The view declared `mcp-apps-host/later-results`, is up, and its own call has ended: a later call
        of its tool may be given to it instead of mounting another view."""
        experimental = self.app_capabilities.get("experimental")
        return (self.state == ViewState.READY and self.tool_phase == ToolPhase.ENDED
                and isinstance(experimental, dict) and isinstance(experimental.get(M.LATER_RESULTS), dict))

    def later_result(self, arguments: dict[str, Any], result: dict[str, Any]) -> list[Effect]:
        """A later call's input and result, in the spec's order for one call: tool-input, then tool-result."""
        if not self.takes_later_results():
            raise IllegalTransition(f"a later call's result cannot be given to a view that is {self.state}, "
                                    f"whose call is {self.tool_phase}, or that did not declare {M.LATER_RESULTS}")
        self.last_input, self.last_result, self.last_cancelled = arguments, result, None
        return [PostToView(rpc.notification(M.TOOL_INPUT, {"arguments": arguments})),
                PostToView(rpc.notification(M.TOOL_RESULT, result))]

    def host_context_changed(self, **changes: Any) -> list[Effect]:
        """Apply changes to the environment and tell the view (partial context; whole `styles`)."""
        partial: dict[str, Any] = {}
        for key, value in changes.items():
            setattr(self.env, key, value)
        ctx = self.host_context()
        for key, ctx_key in (("theme", "theme"), ("styles", "styles"), ("locale", "locale"), ("time_zone", "timeZone"),
                             ("platform", "platform"), ("touch", "deviceCapabilities"),
                             ("hover", "deviceCapabilities"), ("max_width", "containerDimensions"),
                             ("container_width", "containerDimensions"), ("container_height", "containerDimensions"),
                             ("reduced_motion", ACCESSIBILITY_KEY), ("contrast", ACCESSIBILITY_KEY),
                             ("forced_colors", ACCESSIBILITY_KEY)):
            if key in changes:
                partial[ctx_key] = ctx[ctx_key]
        if not partial or self.state != ViewState.READY:
            return []  # a view that is not ready yet gets the new values in its initialize result
        return [PostToView(rpc.notification(M.HOST_CONTEXT_CHANGED, partial))]
