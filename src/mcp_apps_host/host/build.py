"""A `Host` from a `HostConfig`: open the database, build the policies and the model."""

from __future__ import annotations

from dataclasses import replace

from ..chat.agent import AgentLoop
from ..chat.models import make_adapter
from ..config.host import HostConfig
from ..errors import ConfigError
from ..policy.consent import ConsentPolicy, SamplingPolicy
from ..policy.review import review_html
from ..policy.trust import TemplateTrust
from ..servers.manager import ServerManager
from ..store.audit import AuditLog
from ..store.consents import RememberedConsents
from ..store.conversations import Conversations
from ..store.db import default_db_url, open_database
from ..store.pins import TemplatePins
from ..values.templates import Template
from .core import Host
from .sandbox import Sandbox
from .serverasks import HostAsks


def build_agent(config: HostConfig) -> AgentLoop | None:
    """The model of ``config.model``, or None for `none`; ConfigError names what is wrong."""
    try:
        adapter = make_adapter(config.model.spec, config.model.base_url)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    return AgentLoop(adapter, max_steps=config.model.max_steps) if adapter is not None else None


def reviewed(template: Template) -> Template:
    """The template with what the static review of its HTML found (shown next to its views)."""
    return replace(template, warnings=tuple(review_html(template.html, template.csp)))


def build_host(config: HostConfig, *, host_origin: str, sandbox: Sandbox) -> Host:
    """Everything but the servers' connections, which start with :meth:`Host.start`.

    Raises :class:`ConfigError` for a wrong model and :class:`DatabaseError` for a database
    that cannot be opened or migrated.
    """
    agent = build_agent(config)
    engine = open_database(config.database_url or default_db_url())
    trust = config.trust
    audit = AuditLog(engine)
    sampling = SamplingPolicy(config.sampling)  # one rate limit per server, whether a view or the server asks
    asks = HostAsks(sampling, agent, audit)
    return Host(
        servers=ServerManager(list(config.servers), config.limits, reviewed, asks, config.server_log_level),
        limits=config.limits,
        host_origin=host_origin,
        sandbox=sandbox,
        conversations=Conversations(engine),
        audit=audit,
        consent=ConsentPolicy(config.consent, RememberedConsents(engine)),
        sampling=sampling,
        asks=asks,
        trust=TemplateTrust(TemplatePins(engine), trust.allow_hashes, trust.block_hashes, trust.allow_servers,
                            trust.block_servers),
        agent=agent,
    )
