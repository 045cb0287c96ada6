"""What `check` concludes about one view, from its audit records and what the browser saw. No I/O.

Each check below reads the records the host wrote for the view (every message both ways,
with the host's decision) and says what failed in the words of the MCP Apps specification.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..values import protocol as M


@dataclass(frozen=True)
class Record:
    """One audit event of the view, with its whole payload."""

    ts: float
    direction: str
    method: str | None
    msg_id: Any
    decision: str | None
    reason: str | None
    payload: Any


@dataclass(frozen=True)
class ConsoleLine:
    level: str  # error | warning | pageerror | …
    text: str
    url: str = ""


@dataclass
class Observation:
    """What the browser saw of one view while `check` drove it."""

    server: str
    tool: str
    arguments: dict[str, Any]
    submitted: float  # epoch seconds when the call was sent
    handle: str | None = None  # the view's handle; None when no view appeared
    state: str | None = None  # the page's last data-state of the view
    error: str | None = None  # the view's error as the page shows it
    result_seen: bool = False  # a tool-result or tool-cancelled reached the view in time
    blank_light: bool | None = None  # None: no screenshot was taken
    blank_dark: bool | None = None
    dark_differs: bool | None = None
    settled: bool = True  # the view stopped resizing before the screenshot
    console: list[ConsoleLine] = field(default_factory=list)
    consents: list[str] = field(default_factory=list)  # "tool-call debug-tool: allowed by check"
    screenshot: str | None = None  # where the PNG was written


@dataclass
class ViewResult:
    server: str
    tool: str
    arguments: dict[str, Any]
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ready_ms: int | None = None
    result_ms: int | None = None
    screenshot: str | None = None

    @property
    def name(self) -> str:
        return f"{self.server}/{self.tool}"

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_json(self) -> dict[str, Any]:
        return {"server": self.server, "tool": self.tool, "arguments": self.arguments, "passed": self.passed,
                "failures": self.failures, "notes": self.notes, "readyMs": self.ready_ms,
                "resultMs": self.result_ms, "screenshot": self.screenshot}


def _sent(records: list[Record], method: str) -> list[Record]:
    return [r for r in records if r.direction == "view->host" and r.method == method]


def _params(record: Record) -> dict[str, Any]:
    payload = record.payload if isinstance(record.payload, dict) else {}
    params = payload.get("params")
    return params if isinstance(params, dict) else {}


# ---- the handshake ---------------------------------------------------------------------------------


def handshake(obs: Observation, records: list[Record], result: ViewResult) -> None:
    """sandbox-proxy-ready → ui/initialize (appInfo, appCapabilities) → ui/notifications/initialized."""
    if obs.handle is None:
        invalid = obs.error is not None and obs.error.startswith("the template is not valid")
        result.failures.append(obs.error if invalid and obs.error else
                               f"no view appeared for the call{': ' + obs.error if obs.error else ''}")
        return
    if not _sent(records, M.SANDBOX_PROXY_READY):
        result.failures.append("the sandbox proxy never sent ui/notifications/sandbox-proxy-ready, so the view's "
                               f"HTML was never delivered{': ' + obs.error if obs.error else ''}")
        return
    inits = _sent(records, M.INITIALIZE)
    if not inits:
        plain = _sent(records, "initialize")
        if plain:
            result.failures.append("the view sent initialize, MCP's own method, instead of ui/initialize")
        else:
            result.failures.append("the view never sent ui/initialize: the handshake did not start"
                                   + _unreachable(obs))
        return
    params = _params(inits[0])
    if "appInfo" not in params and "clientInfo" in params:
        result.failures.append("ui/initialize carries clientInfo (the name MCP's initialize uses); a view "
                               "names itself with appInfo")
    if "appCapabilities" not in params:
        result.failures.append("ui/initialize has no appCapabilities: a view MUST include its capabilities "
                               "in the appCapabilities field" + (" (it sent capabilities)" if "capabilities"
                                                                 in params else ""))
    initialized = _sent(records, M.INITIALIZED)
    if not initialized:
        result.failures.append("the view never sent ui/notifications/initialized, so it got no tool input or "
                               "result (the host MUST NOT send any request or notification to the view before "
                               "it receives an initialized notification)")
    else:
        result.ready_ms = max(0, round((initialized[0].ts - obs.submitted) * 1000))


def _unreachable(obs: Observation) -> str:
    """What the view could not load, when the browser said so (offline, a dead CDN): the likely cause."""
    lost = [(line.url, m.group(0)) for line in obs.console
            if (m := re.search(r"net::ERR_[A-Z_]+", line.text)) and line.url.startswith(("http:", "https:"))]
    if not lost:
        return ""
    url, error = lost[0]
    more = f" and {len(lost) - 1} more" if len(lost) > 1 else ""
    return f" ({url} did not load: {error}{more}; is the network or that server reachable?)"


def early_messages(_obs: Observation, records: list[Record], result: ViewResult) -> None:
    """Anything the view posted before its handshake, which the host had to refuse."""
    early = [r for r in records if r.direction == "view->host" and r.decision == "refused"
             and r.reason and ("before ui/initialize" in r.reason or "before the sandbox proxy" in r.reason)]
    for record in early[:3]:
        result.failures.append(f"the view posted {record.method or 'a message'} before the handshake "
                               f"({record.reason})")


# ---- the tool result and what the view drew ----------------------------------------------------------


def tool_result(obs: Observation, records: list[Record], result: ViewResult) -> None:
    delivered = [r for r in records if r.direction == "host->view"
                 and r.method in (M.TOOL_RESULT, M.TOOL_CANCELLED)]
    if not delivered:
        if not result.failures:  # a failed handshake already says why
            result.failures.append("the view never received ui/notifications/tool-result")
        return
    result.result_ms = max(0, round((delivered[0].ts - obs.submitted) * 1000))
    params = _params(delivered[0])
    if delivered[0].method == M.TOOL_CANCELLED:
        result.failures.append(f"the tool call was cancelled: {params.get('reason') or 'no reason given'}")
    elif params.get("isError") is True:
        texts = [b.get("text") for b in params.get("content") or [] if isinstance(b, dict)]
        text = "; ".join(t for t in texts if isinstance(t, str))[:300]
        result.failures.append(f"the tool result is an error (isError){': ' + text if text else ''}")


def drawing(obs: Observation, _records: list[Record], result: ViewResult) -> None:
    if obs.blank_light:
        result.failures.append("the view drew nothing: its screenshot after ui/notifications/tool-result is blank")
    if obs.blank_dark and not obs.blank_light:
        result.failures.append("the view drew nothing after host-context-changed set theme dark: its screenshot "
                               "is blank")
    if obs.dark_differs is False:
        result.notes.append("looks the same in the dark theme as in the light one")
    if not obs.settled:
        result.notes.append("was still resizing when the screenshot was taken")


# ---- what the view did -------------------------------------------------------------------------------


def csp_violations(_obs: Observation, records: list[Record], result: ViewResult) -> None:
    """Every request the view's CSP blocked fails the view; the reason names the origin and the fix."""
    seen: set[str] = set()
    for record in records:
        if record.method == "csp-violation" and record.reason and record.reason not in seen:
            seen.add(record.reason)
            result.failures.append(record.reason)


def console(obs: Observation, _records: list[Record], result: ViewResult) -> None:
    seen: set[str] = set()
    for line in obs.console:
        if line.level not in ("error", "pageerror") or line.text in seen or "Content Security Policy" in line.text:
            continue  # a CSP violation is reported once, from the host's own record of it
        seen.add(line.text)
        where = f" ({line.url[:120]})" if line.url and not line.url.startswith("about:") else ""
        label = "uncaught exception" if line.level == "pageerror" else "console error"
        result.failures.append(f"{label}: {line.text[:400]}{where}")


def refusals(_obs: Observation, records: list[Record], result: ViewResult) -> None:
    """Messages the host refused (other than before the handshake, and CSP reports, reported above)."""
    for record in records:
        if record.direction != "view->host" or record.decision != "refused" or record.method == "csp-violation":
            continue
        reason = record.reason or ""
        if "before ui/initialize" in reason or "before the sandbox proxy" in reason:
            continue
        result.failures.append(f"the host refused {record.method or 'a message'}: {reason}")


def failed_requests(_obs: Observation, records: list[Record], result: ViewResult) -> None:
    """tools/call and resources/read the view made that came back with an error it did not cause by consent."""
    asked = {_key(r.msg_id): r for r in records if r.direction == "view->host"
             and r.method in (M.TOOLS_CALL, M.RESOURCES_READ) and r.msg_id is not None}
    declined = {_key(r.msg_id) for r in records if r.decision in ("declined", "refused")}
    for record in records:
        payload = record.payload if isinstance(record.payload, dict) else {}
        error = payload.get("error")
        key = _key(payload.get("id"))
        if record.direction != "host->view" or not isinstance(error, dict) or key not in asked or key in declined:
            continue
        request = asked[key]
        params = _params(request)
        target = params.get("name") or params.get("uri") or ""
        result.failures.append(f"{request.method} {target} failed: {error.get('message')} "
                               f"(error {error.get('code')})")


def _key(msg_id: Any) -> str:
    return repr(msg_id)


def activity(obs: Observation, records: list[Record], result: ViewResult, app_only: set[str]) -> None:
    """Display-mode requests, the app-only tools the view called, and the questions put to the person."""
    replies = {_key(r.payload.get("id")): r.payload.get("result") for r in records
               if r.direction == "host->view" and isinstance(r.payload, dict) and "result" in r.payload}
    for record in _sent(records, M.REQUEST_DISPLAY_MODE):
        granted = replies.get(_key(record.msg_id))
        mode = granted.get("mode") if isinstance(granted, dict) else None
        result.notes.append(f"asked for display mode {_params(record).get('mode')!r}, got {mode!r}")
    called = sorted({str(_params(r).get("name")) for r in _sent(records, M.TOOLS_CALL) if r.payload is not None})
    only = [name for name in called if name in app_only]
    if only:
        result.notes.append("called app-only tools: " + ", ".join(only))
    if [name for name in called if name not in app_only]:
        result.notes.append("called tools: " + ", ".join(n for n in called if n not in app_only))
    result.notes.extend(obs.consents)
    if obs.screenshot:
        result.screenshot = obs.screenshot


def size_loop(records: list[Record], since: float, reversals_limit: int) -> str | None:
    """A grow/shrink loop: the height reported by size-changed turns direction at least ``reversals_limit``
    times after ``since`` (when the result arrived)."""
    heights = [h for r in _sent(records, M.SIZE_CHANGED) if r.ts >= since
               and isinstance(h := _params(r).get("height"), (int, float)) and not isinstance(h, bool)]
    turns, direction = 0, 0
    for before, after in itertools.pairwise(heights):
        step = (after > before) - (after < before)
        if step and direction and step != direction:
            turns += 1
        direction = step or direction
    if turns < reversals_limit:
        return None
    return (f"ui/notifications/size-changed loops: {len(heights)} notifications, the height turned between "
            f"growing and shrinking {turns} times ({min(heights):g}–{max(heights):g} px)")


CHECKS: tuple[Callable[[Observation, list[Record], ViewResult], None], ...] = (
    handshake, early_messages, tool_result, drawing, csp_violations, console, refusals, failed_requests,
)


def conclude(obs: Observation, records: list[Record], app_only: set[str], reversals_limit: int) -> ViewResult:
    """Every check, in order, over one view's records."""
    result = ViewResult(obs.server, obs.tool, obs.arguments)
    for check in CHECKS:
        check(obs, records, result)
    result_at = next((r.ts for r in records if r.direction == "host->view" and r.method == M.TOOL_RESULT), None)
    if result_at is not None and (loop := size_loop(records, result_at, reversals_limit)):
        result.failures.append(loop)
    activity(obs, records, result, app_only)
    return result
