"""The host as the client of a view's own tools: host → view `tools/list` and `tools/call`.

Sans-IO like the session that owns it. A view that declared `appCapabilities.tools` is
asked for its tools once it is initialized and again on each
`notifications/tools/list_changed` (one listing at a time; changes during a listing
start one more after it). Everything the view answers is checked: at most
`max_app_tools_per_view` tools are kept, every call and listing has
`app_tool_call_timeout` to finish, and what the view answers a call with must be a
`CallToolResult`. The tools live as long as the view: when it goes, its calls fail.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import CallFailed
from ..settings import Limits
from ..values import protocol as M
from ..values.apptools import AppTool, call_result_problem, parse_app_tool
from . import jsonrpc as rpc
from .effects import AppToolResult, AppToolsChanged, Effect, Log, PostToView, Refused, StartRequestTimer
from .jsonrpc import RequestId, Response

MAX_LIST_PAGES = 10  # a view that pages forever is cut off


class AppToolClient:
    def __init__(self, limits: Limits, next_id: Callable[[], RequestId]) -> None:
        self.limits = limits
        self._next_id = next_id
        self.declared = False
        self.tools: tuple[AppTool, ...] = ()
        self._listing: RequestId | None = None  # the tools/list in flight
        self._page: list[AppTool] = []  # tools of the listing so far
        self._pages = 0
        self._again = False  # the view said its tools changed during a listing
        self._calls: dict[RequestId, str] = {}  # tools/call in flight -> tool name

    # ---- listing -----------------------------------------------------------------------------

    def start(self, capabilities: dict[str, Any]) -> list[Effect]:
        """The view is initialized: list its tools if it said it has some."""
        self.declared = isinstance(capabilities.get("tools"), dict)
        return self._list(None) if self.declared else []

    def list_changed(self) -> list[Effect]:
        if not self.declared:
            return [Refused(M.TOOLS_LIST_CHANGED, "the view did not declare appCapabilities.tools")]
        if self._listing is not None:
            self._again = True
            return []
        return self._list(None)

    def _list(self, cursor: str | None) -> list[Effect]:
        if cursor is None:
            self._page, self._pages = [], 0
        self._pages += 1
        rid = self._listing = self._next_id()
        return [PostToView(rpc.request(rid, M.TOOLS_LIST, {"cursor": cursor} if cursor else {})),
                StartRequestTimer(rid, self.limits.app_tool_call_timeout)]

    def _listed(self, resp: Response) -> list[Effect]:
        self._listing = None
        if resp.error is not None:
            return self._settle([], [Log("warning", f"the view refused tools/list: {resp.error.get('message')}")])
        raw_tools = (resp.result or {}).get("tools")
        if not isinstance(raw_tools, list):
            return self._settle([], [Refused(M.TOOLS_LIST, 'the view answered tools/list without a "tools" array; '
                                                           "it offers no tools")])
        effects: list[Effect] = []
        limit = self.limits.max_app_tools_per_view
        names = {t.name for t in self._page}
        for raw in raw_tools:
            tool = parse_app_tool(raw, self.limits.max_app_tool_description_chars)
            if isinstance(tool, str) or tool.name in names:
                problem = tool if isinstance(tool, str) else f"tool {tool.name!r} is listed twice"
                effects.append(Log("warning", f"tools/list: left out: {problem}"))
            elif len(self._page) >= limit:
                effects.append(Log("warning", f"tools/list: the view offers more than max_app_tools_per_view "
                                              f"({limit}) tools; only the first {limit} are kept"))
                return self._settle(self._page, effects)
            else:
                self._page.append(tool)
                names.add(tool.name)
        cursor = (resp.result or {}).get("nextCursor")
        if isinstance(cursor, str) and cursor and self._pages < MAX_LIST_PAGES:
            return effects + self._list(cursor)
        return self._settle(self._page, effects)

    def _settle(self, tools: list[AppTool], effects: list[Effect]) -> list[Effect]:
        self.tools, self._page = tuple(tools), []
        effects.append(AppToolsChanged(self.tools))
        if self._again:
            self._again = False
            effects += self._list(None)
        return effects

    # ---- calls -------------------------------------------------------------------------------

    def call(self, rid: RequestId, name: str, arguments: dict[str, Any]) -> list[Effect]:
        """Send tools/call ``rid`` for one of the view's tools; the answer comes as an `AppToolResult`."""
        if not any(t.name == name for t in self.tools):
            offered = ", ".join(t.name for t in self.tools) or "none"
            raise CallFailed(f"the view offers no tool {name!r} (its tools: {offered})", rpc.INVALID_PARAMS)
        self._calls[rid] = name
        return [PostToView(rpc.request(rid, M.TOOLS_CALL, {"name": name, "arguments": arguments})),
                     StartRequestTimer(rid, self.limits.app_tool_call_timeout)]

    def is_call(self, request_id: Any) -> bool:
        return request_id in self._calls

    def _called(self, resp: Response) -> list[Effect]:
        name = self._calls.pop(resp.id)
        if resp.error is not None:
            message = str(resp.error.get("message"))[:2000]
            return [AppToolResult(resp.id, None, f"app tool {name!r} failed: {message} (error {resp.error['code']})")]
        problem = call_result_problem(resp.result)
        if problem is not None:
            return [Refused(M.TOOLS_CALL, f"the view's answer to tools/call {name!r}: {problem}"),
                    AppToolResult(resp.id, None, f"app tool {name!r} answered with something that is not a "
                                                 f"CallToolResult ({problem})")]
        return [AppToolResult(resp.id, resp.result)]

    def cancel(self, request_id: RequestId) -> list[Effect]:
        """Nobody waits for this call any more (the model's turn was stopped): the view is told."""
        if self._calls.pop(request_id, None) is None:
            return []
        return [PostToView(rpc.notification(M.CANCELLED, {"requestId": request_id, "reason": "the caller stopped"}))]

    def too_large(self, request_id: RequestId, size: int) -> list[Effect]:
        """The view's answer to a call is over max_app_tool_result_bytes: the call fails."""
        name = self._calls.pop(request_id)
        reason = (f"app tool {name!r} answered with {size} bytes, more than max_app_tool_result_bytes "
                  f"({self.limits.max_app_tool_result_bytes})")
        return [Refused(M.TOOLS_CALL, reason), AppToolResult(request_id, None, reason)]

    # ---- answers, time-outs and the end ------------------------------------------------------

    def owns(self, request_id: RequestId) -> bool:
        return request_id == self._listing or request_id in self._calls

    def on_response(self, resp: Response) -> list[Effect]:
        return self._listed(resp) if resp.id == self._listing else self._called(resp)

    def timed_out(self, request_id: RequestId) -> list[Effect]:
        seconds = f"app_tool_call_timeout ({self.limits.app_tool_call_timeout:g} s)"
        cancel = PostToView(rpc.notification(M.CANCELLED, {"requestId": request_id, "reason": "timed out"}))
        if request_id == self._listing:
            self._listing = None
            return [cancel, *self._settle([], [Refused(M.TOOLS_LIST, f"the view did not answer tools/list "
                                                                     f"within {seconds}; it offers no tools")])]
        name = self._calls.pop(request_id, None)
        if name is None:
            return []
        return [cancel, AppToolResult(request_id, None, f"app tool {name!r} did not answer within {seconds}")]

    def close(self, reason: str) -> list[Effect]:
        """The view is going: its pending calls fail and its tools are gone."""
        effects: list[Effect] = [AppToolResult(rid, None, f"app tool {name!r} cannot finish: {reason}")
                                 for rid, name in self._calls.items()]
        self._calls.clear()
        self._listing, self._again = None, False
        if self.tools:
            self.tools = ()
            effects.append(AppToolsChanged(()))
        return effects
