"""Consent for tool calls (from the model or a view) and for sampling requests.

Order of precedence in :meth:`ConsentPolicy.decide`:

1. hard rules, which no setting overrides: a view calls only tools of its own
   server, and only tools whose visibility admits the caller;
2. a config rule naming the tool;
3. a config ``"*"`` rule of ``deny`` (a deny from the config file always wins);
4. an "always allow" the person gave in the consent dialog (remembered in the database);
5. a config ``"*"`` rule of ``allow`` or ``ask``;
6. the defaults: ``ask`` for a tool annotated ``destructiveHint: true``; ``allow`` for
   a tool annotated ``readOnlyHint: true`` and for an app-only tool (visibility
   ``["app"]``); ``ask`` for everything else.

Annotations are hints from an untrusted server, so only an explicit ``true`` counts,
and only in the direction of more caution for ``destructiveHint``: a tool claiming to
be both read-only and destructive is asked about.

The same policy applies whether the model or a view made the call; ``source`` only
selects which visibility the call needs.

A tool a view offers of its own (an app-provided tool) is decided by
:meth:`ConsentPolicy.decide_app_tool`: config rules name it ``app:NAME`` (or ``app:*``),
a key no server tool can have, so a view cannot borrow a server tool's rule by naming
its tool the same; ``*`` = ``deny`` still wins; then ``allow`` for a tool annotated
read-only and ``ask`` for everything else. "Always allow" is never offered for them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

from ..config.policies import ANY_TOOL, DECISION_VALUES, Decision, Rules, SamplingSettings, check_name
from ..errors import ConsentConfigError
from ..values.apptools import AppTool
from ..values.tools import ToolEntry

__all__ = ["ConsentPolicy", "Decision", "MemoryBudget", "RememberedAllows", "SamplingBudget", "SamplingPolicy",
           "Source"]

Source = Literal["view", "model"]
EntryRules = Callable[[str], Mapping[str, Decision]]  # server -> its entry's consent rules
APP_TOOL_PREFIX = "app:"  # consent rules for a view's own tools: "app:NAME" or "app:*"


class RememberedAllows(Protocol):
    """Where "always allow this tool from this server" answers are kept (the store implements it)."""

    def is_allowed(self, server: str, tool: str) -> bool: ...

    def remember_allow(self, server: str, tool: str) -> None: ...


# -- the policy ---------------------------------------------------------------------------------


def _hint(definition: Mapping[str, Any], key: str) -> bool:
    annotations = definition.get("annotations")
    return isinstance(annotations, Mapping) and annotations.get(key) is True


class ConsentPolicy:
    """Whether a tool call may go ahead, must be asked about, or is refused.

    ``rules`` come from :func:`parse_consent_config`. Without a ``remembered`` store
    "always allow" answers last only as long as this object.
    """

    def __init__(
        self,
        rules: Mapping[str, Mapping[str, Decision]] | None = None,
        remembered: RememberedAllows | None = None,
        entry_rules: EntryRules | None = None,
    ) -> None:
        self.rules: Rules = {s: dict(t) for s, t in (rules or {}).items()}
        # A server entry's own "consent" (read when asked: entries can change while the host runs); it wins
        # over the config file's consent section for that server's tools.
        self.entry_rules = entry_rules
        for server, tools in self.rules.items():
            for tool, value in tools.items():
                if value not in DECISION_VALUES:
                    raise ConsentConfigError(f"consent.{server}.{tool}: {value!r} is not allow, ask or deny")
        self.remembered = remembered
        self._session_allowed: set[tuple[str, str]] = set()

    def with_remembered(self, remembered: RememberedAllows) -> ConsentPolicy:
        """The same rules, with another person's "always allow" answers."""
        return ConsentPolicy(self.rules, remembered, self.entry_rules)

    def _configured(self, server: str) -> dict[str, Decision]:
        own = self.entry_rules(server) if self.entry_rules is not None else {}
        return {**self.rules.get(server, {}), **own}

    def _is_remembered(self, server: str, tool: str) -> bool:
        if self.remembered is not None:
            return self.remembered.is_allowed(server, tool)
        return (server, tool) in self._session_allowed

    def decide(self, server: str, tool_entry: ToolEntry, source: Source) -> tuple[Decision, str]:
        """``server``: for a view, the server whose template the view shows; for the model,
        the server the call goes to. Returns the decision and the rule that made it."""
        if source not in ("view", "model"):
            raise ValueError(f"source: {source!r} is not 'view' or 'model'")
        tool = tool_entry.name
        if tool_entry.server != server:
            return "deny", (
                f"tool {tool!r} belongs to server {tool_entry.server!r}, not {server!r}: "
                "a view may only call tools of its own server"
            )
        if source == "view" and not tool_entry.app_visible:
            return "deny", f"visibility of {server}/{tool} does not include 'app': views may not call it"
        if source == "model" and not tool_entry.model_visible:
            return (
                "deny",
                f"visibility of {server}/{tool} does not include 'model': the model may not call it",
            )

        configured = self._configured(server)
        if tool in configured:
            return configured[tool], f"config rule consent.{server}.{tool} = {configured[tool]}"
        wildcard = configured.get(ANY_TOOL)
        if wildcard == "deny":
            return "deny", f"config rule consent.{server}.* = deny"
        if self._is_remembered(server, tool):
            return "allow", f"the person chose to always allow {tool!r} from {server!r}"
        if wildcard is not None:
            return wildcard, f"config rule consent.{server}.* = {wildcard}"

        definition = tool_entry.definition
        if _hint(definition, "destructiveHint"):
            return "ask", "default: the tool is annotated destructive (destructiveHint)"
        if _hint(definition, "readOnlyHint"):
            return "allow", "default: the tool is annotated read-only (readOnlyHint)"
        if tool_entry.visibility == frozenset({"app"}):
            return "allow", "default: an app-only tool of the view's own server (visibility ['app'])"
        return "ask", "default: the tool is not annotated read-only"

    def decide_app_tool(self, server: str, tool: AppTool) -> tuple[Decision, str]:
        """A call of a tool that a view of ``server`` offers of its own."""
        configured = self._configured(server)
        for key in (f"{APP_TOOL_PREFIX}{tool.name}", f"{APP_TOOL_PREFIX}{ANY_TOOL}"):
            if key in configured:
                return configured[key], f"config rule consent.{server}.{key} = {configured[key]}"
        if configured.get(ANY_TOOL) == "deny":
            return "deny", f"config rule consent.{server}.* = deny"
        if tool.read_only:
            return "allow", "default: the app tool is annotated read-only (readOnlyHint)"
        return "ask", "default: the app tool is not annotated read-only"

    def can_remember(self, server: str, tool: str) -> bool:
        """Whether "always allow" would change anything: the dialog offers it only then."""
        configured = self._configured(server)
        return tool not in configured and configured.get(ANY_TOOL) != "deny"

    def remember_allow(self, server: str, tool: str) -> None:
        """Record "always allow this tool from this server" (persisted when a store is set)."""
        check_name("server", server)
        check_name("tool", tool)
        if self.remembered is not None:
            self.remembered.remember_allow(server, tool)
        else:
            self._session_allowed.add((server, tool))


# -- sampling -----------------------------------------------------------------------------------


class SamplingBudget(Protocol):
    """Where the allowance is counted: spend one of ``per_minute``, or say how long until the next."""

    def take(self, server: str, per_minute: int) -> float | None: ...


class MemoryBudget:
    """A token bucket per server in this process: ``per_minute`` tokens, refilling at that rate."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # server -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, server: str, per_minute: int) -> float | None:
        with self._lock:
            now = self._clock()
            tokens, at = self._buckets.get(server, (float(per_minute), now))
            tokens = min(float(per_minute), tokens + max(0.0, now - at) * per_minute / 60.0)
            if tokens < 1.0:
                self._buckets[server] = (tokens, now)
                return (1.0 - tokens) * 60.0 / per_minute
            self._buckets[server] = (tokens - 1.0, now)
        return None


class SamplingPolicy:
    """``sampling/createMessage`` from a view: off unless enabled per server; then ask, rate-limited.

    The limit is a token bucket per server holding ``maxPerMinute`` tokens and
    refilling at ``maxPerMinute`` per 60 s, so a quiet server can make a short burst
    but never more than the limit on average. A token is spent when the request is
    put to the person, whatever the answer, so a view cannot flood the person with prompts.
    The bucket is the person's (``budget``; in memory unless one is given).
    """

    def __init__(
        self,
        settings: Mapping[str, SamplingSettings] | None = None,
        clock: Callable[[], float] = time.monotonic,
        budget: SamplingBudget | None = None,
    ) -> None:
        self.settings = dict(settings or {})
        self.budget = budget or MemoryBudget(clock)

    def with_budget(self, budget: SamplingBudget) -> SamplingPolicy:
        """The same settings, counted in another person's allowance."""
        return SamplingPolicy(self.settings, budget=budget)

    def check(self, server: str) -> tuple[Decision, str]:
        settings = self.settings.get(server)
        if settings is None or not settings.enabled:
            return "deny", f"sampling is off for server {server!r} (enable it with sampling.{server}.enabled)"
        rate = settings.max_per_minute
        wait = self.budget.take(server, rate)
        if wait is not None:
            return "deny", (
                f"rate limit: server {server!r} may ask for sampling at most {rate} times a minute "
                f"(next in {wait:.0f} s)"
            )
        return "ask", f"sampling is enabled for server {server!r}; the person decides"
