"""The host's answers to what servers ask (elicitation, sampling, roots), for all tabs.

A question goes to the tab whose call to that server started last (a server asks while
it works on a call), else to the tab the person used last. It never goes to another
person: when several people's calls run on a shared server at once, or nobody's and
several people have tabs open, nobody can tell whose question it is, and it is answered as
if no tab were open. With no tab to ask, elicitation is answered "cancel" and sampling
refused, each saying why. A server's own connection for one person (`server_headers`)
asks only that person's tabs. Sampling from servers goes
through the same policy as sampling from views: off unless enabled for the server, asked
about each time, rate-limited, and answered by the host's model.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from ...chat.agent import AgentLoop
from ...chat.sampling import create_message
from ...errors import CallFailed
from ...policy.consent import SamplingPolicy
from ...store.audit import AuditEvent, AuditLog
from ...values import protocol as M
from ...values.decisions import Decision, Direction
from ...values.identity import Identity
from ...values.sampling import describe_sampling, sampling_problem
from ...views.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, REFUSED

log = logging.getLogger("mcp_apps_host.asks")

CANCEL: dict[str, Any] = {"action": "cancel"}  # what a server hears when nobody can answer its elicitation


class TabAsks(Protocol):
    """What one tab asks its person for the servers (`host/tab/asking.py`): attached while the tab is open."""

    who: tuple[str, str]
    calls: dict[str, float]  # the servers the tab is calling now, and when its newest call to each started
    last_active: float

    async def elicit(self, server: str, params: dict[str, Any]) -> dict[str, Any]: ...

    async def ask_sampling(self, server: str, detail: str) -> bool: ...

    def close(self) -> None: ...


class HostAsks:
    def __init__(self, sampling: SamplingPolicy, agent: AgentLoop | None, audit: AuditLog | None,
                 who: tuple[str, str] | None = None, tabs: list[TabAsks] | None = None) -> None:
        self.sampling = sampling
        self.agent = agent
        self._audit = audit
        self._who = who  # set: the asks of one person's own connection
        self.tabs: list[TabAsks] = tabs if tabs is not None else []

    def for_person(self, identity: Identity) -> HostAsks:
        """What one person's own connection to a server asks: their tabs only."""
        return HostAsks(self.sampling, self.agent, self._audit, identity.key, self.tabs)

    def attach(self, tab: TabAsks) -> None:
        self.tabs.append(tab)

    def detach(self, tab: TabAsks) -> None:
        if tab in self.tabs:
            self.tabs.remove(tab)
        tab.close()

    def _tab_for(self, server: str) -> TabAsks | None:
        tabs = [t for t in self.tabs if self._who is None or t.who == self._who]
        calling = [t for t in tabs if server in t.calls]
        if calling:
            return max(calling, key=lambda t: t.calls[server]) if len({t.who for t in calling}) == 1 else None
        return max(tabs, key=lambda t: t.last_active) if len({t.who for t in tabs}) == 1 else None

    def _record(self, direction: Direction, method: str, server: str, decision: Decision | None, reason: str,
                payload: Any = None) -> None:
        if self._audit is None:
            return
        try:
            self._audit.record_nowait(AuditEvent(direction=direction, method=method, server=server,
                                                 decision=decision, reason=reason, payload=payload))
        except Exception:  # the audit trail must not break the protocol
            log.exception("could not queue an audit event")

    # ---- ServerAsks ----------------------------------------------------------------------------

    def sampling_enabled(self, server: str) -> bool:
        settings = self.sampling.settings.get(server)
        return self.agent is not None and settings is not None and settings.enabled

    def roots_listed(self, server: str, roots: list[dict[str, Any]]) -> None:
        self._record("host->server", M.ROOTS_LIST, server, None, f"{len(roots)} root(s) from the host's config",
                     {"roots": roots})

    async def elicit(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        tab = self._tab_for(server)
        if tab is None:
            self._record("server->host", M.ELICITATION_CREATE, server, "declined",
                         "no page is open to ask the person: answered cancel", params)
            return CANCEL
        return await tab.elicit(server, params)

    async def sample(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        problem = sampling_problem(params)
        if problem is not None:
            raise CallFailed(problem, INVALID_PARAMS)
        if self.agent is None:
            raise CallFailed(f"{M.SAMPLING_CREATE_MESSAGE} refused: no model is configured (--model)", REFUSED)
        decision, reason = self.sampling.check(server)
        tab = self._tab_for(server) if decision == "ask" else None
        if decision == "ask" and tab is None:
            decision, reason = "deny", "no page is open to ask the person"
        self._record("server->host", M.SAMPLING_CREATE_MESSAGE, server, "asked" if tab else "refused", reason,
                     params)
        if tab is None:
            raise CallFailed(f"{M.SAMPLING_CREATE_MESSAGE} refused: {reason}", REFUSED)
        allowed = await tab.ask_sampling(server, describe_sampling(params))
        self._record("server->host", M.SAMPLING_CREATE_MESSAGE, server, "consented" if allowed else "declined",
                     "the person answered")
        if not allowed:
            raise CallFailed(f"{M.SAMPLING_CREATE_MESSAGE}: declined by the person", REFUSED)
        try:
            result = await create_message(self.agent.adapter, params)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the server hears why
            raise CallFailed(f"the model failed: {exc}", INTERNAL_ERROR) from exc
        self._record("model->host", M.SAMPLING_CREATE_MESSAGE, server, None, "the host's model answered", result)
        return result
