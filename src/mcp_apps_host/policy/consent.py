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
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from sqlalchemy import Column, Float, MetaData, String, Table, delete, insert, select, update
from sqlalchemy.engine import Engine

from ..servers.catalog import ToolEntry

__all__ = [
    "ConsentConfigError",
    "ConsentPolicy",
    "Decision",
    "RememberedStore",
    "SamplingPolicy",
    "SamplingSettings",
    "Source",
    "parse_consent_config",
    "parse_sampling_config",
]

Decision = Literal["allow", "ask", "deny"]
Source = Literal["view", "model"]
DECISION_VALUES: Final[tuple[str, ...]] = get_args(Decision)
ANY_TOOL: Final = "*"

Rules = dict[str, dict[str, Decision]]


class ConsentConfigError(ValueError):
    """The ``consent`` or ``sampling`` section of the config file is malformed; names the key path."""


# -- config -------------------------------------------------------------------------------


def _section(data: object, key: str) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise ConsentConfigError(f"the config must be an object, not {type(data).__name__}")
    section = data.get(key)
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise ConsentConfigError(f"{key}: must be an object of server names, not {type(section).__name__}")
    return dict(section)


def _name(path: str, name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ConsentConfigError(f"{path}: {name!r} is not a name")
    return name


def parse_consent_config(data: object) -> Rules:
    """Read the ``consent`` section of a parsed config file (the whole document is passed).

    ``{"consent": {"SERVER": {"TOOL": "allow"|"ask"|"deny", "*": "ask"}}}``; a missing
    section means no rules.
    """
    rules: Rules = {}
    for server, tools in _section(data, "consent").items():
        _name("consent", server)
        where = f"consent.{server}"
        if not isinstance(tools, Mapping):
            raise ConsentConfigError(
                f"{where}: must be an object of tool names to allow/ask/deny, not {type(tools).__name__}"
            )
        per_server: dict[str, Decision] = {}
        for tool, value in tools.items():
            _name(where, tool)
            if value not in DECISION_VALUES:
                raise ConsentConfigError(
                    f"{where}.{tool}: {value!r} is not one of {', '.join(repr(v) for v in DECISION_VALUES)}"
                )
            per_server[tool] = value
        rules[server] = per_server
    return rules


# -- remembered "always allow" ----------------------------------------------------------------

metadata = MetaData()

consent_remembered = Table(
    "consent_remembered",
    metadata,
    Column("server", String(128), primary_key=True),
    Column("tool", String(256), primary_key=True),
    Column("ts", Float, nullable=False),
)


class RememberedStore:
    """The person's "always allow this tool from this server" answers, kept across restarts.

    The rows are read once into memory, so :meth:`is_allowed` never touches the
    database; writes go straight through.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        metadata.create_all(engine, tables=[consent_remembered])
        self._lock = threading.Lock()
        with engine.connect() as conn:
            rows = conn.execute(select(consent_remembered.c.server, consent_remembered.c.tool)).all()
        self._allowed: set[tuple[str, str]] = {(r.server, r.tool) for r in rows}

    def is_allowed(self, server: str, tool: str) -> bool:
        return (server, tool) in self._allowed

    def remember_allow(self, server: str, tool: str) -> None:
        now = time.time()
        with self._lock, self.engine.begin() as conn:
            key = (consent_remembered.c.server == server) & (consent_remembered.c.tool == tool)
            if conn.execute(update(consent_remembered).where(key).values(ts=now)).rowcount == 0:
                conn.execute(insert(consent_remembered).values(server=server, tool=tool, ts=now))
            self._allowed.add((server, tool))

    def forget(self, server: str, tool: str | None = None) -> None:
        """Withdraw one remembered tool, or every one of a server."""
        with self._lock, self.engine.begin() as conn:
            cond = consent_remembered.c.server == server
            if tool is not None:
                cond = cond & (consent_remembered.c.tool == tool)
            conn.execute(delete(consent_remembered).where(cond))
            self._allowed = {
                (s, t) for s, t in self._allowed if not (s == server and (tool is None or t == tool))
            }

    def entries(self) -> list[tuple[str, str]]:
        return sorted(self._allowed)


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
        remembered: RememberedStore | None = None,
    ) -> None:
        self.rules: Rules = {s: dict(t) for s, t in (rules or {}).items()}
        for server, tools in self.rules.items():
            for tool, value in tools.items():
                if value not in DECISION_VALUES:
                    raise ConsentConfigError(f"consent.{server}.{tool}: {value!r} is not allow, ask or deny")
        self.remembered = remembered
        self._session_allowed: set[tuple[str, str]] = set()

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

        configured = self.rules.get(server, {})
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

    def can_remember(self, server: str, tool: str) -> bool:
        """Whether "always allow" would change anything: the dialog offers it only then."""
        configured = self.rules.get(server, {})
        return tool not in configured and configured.get(ANY_TOOL) != "deny"

    def remember_allow(self, server: str, tool: str) -> None:
        """Record "always allow this tool from this server" (persisted when a store is set)."""
        _name("server", server)
        _name("tool", tool)
        if self.remembered is not None:
            self.remembered.remember_allow(server, tool)
        else:
            self._session_allowed.add((server, tool))

    def forget(self, server: str, tool: str | None = None) -> None:
        if self.remembered is not None:
            self.remembered.forget(server, tool)
        self._session_allowed = {
            (s, t) for s, t in self._session_allowed if not (s == server and (tool is None or t == tool))
        }


# -- sampling -----------------------------------------------------------------------------------

DEFAULT_MAX_PER_MINUTE: Final = 5


@dataclass(frozen=True)
class SamplingSettings:
    enabled: bool = False
    max_per_minute: int = DEFAULT_MAX_PER_MINUTE


def parse_sampling_config(data: object) -> dict[str, SamplingSettings]:
    """Read ``{"sampling": {"SERVER": {"enabled": true, "maxPerMinute": 5}}}`` (whole document passed)."""
    out: dict[str, SamplingSettings] = {}
    for server, entry in _section(data, "sampling").items():
        _name("sampling", server)
        where = f"sampling.{server}"
        if not isinstance(entry, Mapping):
            raise ConsentConfigError(
                f'{where}: must be an object like {{"enabled": true, "maxPerMinute": 5}}'
            )
        unknown = set(entry) - {"enabled", "maxPerMinute"}
        if unknown:
            raise ConsentConfigError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
        enabled = entry.get("enabled", False)
        if not isinstance(enabled, bool):
            raise ConsentConfigError(f"{where}.enabled: must be true or false, not {enabled!r}")
        rate = entry.get("maxPerMinute", DEFAULT_MAX_PER_MINUTE)
        if isinstance(rate, bool) or not isinstance(rate, int) or not 1 <= rate <= 10_000:
            raise ConsentConfigError(
                f"{where}.maxPerMinute: must be a whole number from 1 to 10000, not {rate!r}"
            )
        out[server] = SamplingSettings(enabled=enabled, max_per_minute=rate)
    return out


class SamplingPolicy:
    """``sampling/createMessage`` from a view: off unless enabled per server; then ask, rate-limited.

    The limit is a token bucket per server holding ``maxPerMinute`` tokens and
    refilling at ``maxPerMinute`` per 60 s, so a quiet server can make a short burst
    but never more than the limit on average. A token is spent when the request is
    put to the person, whatever the answer, so a view cannot flood the person with prompts.
    """

    def __init__(
        self,
        settings: Mapping[str, SamplingSettings] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = dict(settings or {})
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # server -> (tokens, at)
        self._lock = threading.Lock()

    def check(self, server: str) -> tuple[Decision, str]:
        settings = self.settings.get(server)
        if settings is None or not settings.enabled:
            return "deny", f"sampling is off for server {server!r} (enable it with sampling.{server}.enabled)"
        rate = settings.max_per_minute
        with self._lock:
            now = self._clock()
            tokens, at = self._buckets.get(server, (float(rate), now))
            tokens = min(float(rate), tokens + max(0.0, now - at) * rate / 60.0)
            if tokens < 1.0:
                self._buckets[server] = (tokens, now)
                wait = (1.0 - tokens) * 60.0 / rate
                return "deny", (
                    f"rate limit: server {server!r} may ask for sampling at most {rate} times a minute "
                    f"(next in {wait:.0f} s)"
                )
            self._buckets[server] = (tokens - 1.0, now)
        return "ask", f"sampling is enabled for server {server!r}; the person decides"
