"""A `Host` from a `HostConfig`: open the database, build the policies, the model and the bus."""

from __future__ import annotations

from dataclasses import replace

from ...chat.agent import AgentLoop
from ...chat.models import make_adapter
from ...config.host import HostConfig
from ...config.policies import Decision
from ...config.servers import default_watch_paths
from ...errors import ConfigError
from ...policy.consent import ConsentPolicy, SamplingPolicy
from ...policy.review import review_html
from ...servers.manager import ServerHeaders, ServerManager
from ...servers.oauth import AuthSetup
from ...store.audit import AuditLog
from ...store.budgets import SamplingBudgets
from ...store.consents import RememberedConsents
from ...store.conversations import Conversations
from ...store.credentials import ServerCredentials, TokenCipher
from ...store.db import default_db_url, open_database
from ...store.health import DatabaseProbe
from ...store.item_appends import ItemAppends
from ...store.notify import PostgresBus
from ...store.pins import TemplatePins
from ...store.registry import ServerRegistry
from ...store.retention import AuditRetention
from ...store.view_host_states import ViewHostStates
from ...store.view_pins import ViewPins
from ...store.view_records import ViewInstances
from ...telemetry import tracing
from ...values.templates import Template
from .bus import Bus, LocalBus, deliver
from .core import Host, Stores
from .handles import HandleSigner
from .lifecycle import Lifecycle
from .registry import RegistrySync
from .sandbox import Sandbox
from .serverasks import HostAsks
from .signins import SignIns


def build_agent(config: HostConfig) -> AgentLoop | None:
    """The model of ``config.model``, or None for `none`; ConfigError names what is wrong."""
    try:
        adapter = make_adapter(config.model.spec, config.model.base_url)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    except ImportError as exc:  # the model SDKs are extras: a deployment installs only the one it uses
        provider = config.model.spec.split(":", 1)[0].strip().lower()
        raise ConfigError(f"--model {config.model.spec} needs the {exc.name or provider} package: "
                          f"pip install 'mcp-apps-host[{provider}]'") from exc
    return AgentLoop(adapter, max_steps=config.model.max_steps) if adapter is not None else None


def reviewed(template: Template) -> Template:
    """The template with what the static review of its HTML found (shown next to its views)."""
    return replace(template, warnings=tuple(review_html(template.html, template.csp)))


def build_host(config: HostConfig, *, host_origin: str, sandbox: Sandbox,
               server_headers: ServerHeaders | None = None, loopback_servers: bool = False) -> Host:
    """Everything but the servers' connections and the bus, which start with :meth:`Host.start`.

    ``loopback_servers``: servers on this machine are allowed without being listed (`serve`; an
    embedding lists them in ``allowedServerHosts``). Raises :class:`ConfigError` for a wrong model and
    :class:`DatabaseError` for a database that cannot be opened or migrated.
    """
    if sandbox.host_allowed(host_origin.split("://", 1)[-1]):
        raise ConfigError(f"the sandbox origin {sandbox.template} would include the host page's own origin "
                          f"{host_origin}: views must never run on the host page's origin")
    tracing.install_from_env()  # once per process (each worker builds its own host); OTEL_* decide
    agent = build_agent(config)
    watch = {s.name: paths for s in config.servers if (paths := default_watch_paths(s))} if config.watch else {}
    url = config.database_url or default_db_url()
    engine = open_database(url)
    stores = Stores(Conversations(engine), RememberedConsents(engine), TemplatePins(engine), SamplingBudgets(engine),
                    ViewInstances(engine), ViewPins(engine),
                    ViewHostStates(engine, config.limits.max_view_state_bytes))
    bus: Bus = PostgresBus(url, deliver) if engine.dialect.name == "postgresql" else LocalBus()
    audit = AuditLog(engine, wait=config.limits.database_wait_timeout, max_backlog=config.limits.max_audit_backlog)
    signins = SignIns(ServerCredentials(engine, TokenCipher.configured(config.token_key)), bus, audit)
    sampling = SamplingPolicy(config.sampling)  # one rate limit per server, whether a view or the server asks
    asks = HostAsks(sampling, agent, audit)
    hosts = replace(config.allowed_server_hosts, loopback=loopback_servers)
    servers = ServerManager(list(config.servers), config.limits, reviewed, asks, config.server_log_level,
                            config.apps.for_server, server_headers,
                            AuthSetup(signins.credentials, signins, config.origin or host_origin, hosts),
                            hosts=hosts)

    def entry_consent(name: str) -> dict[str, Decision]:
        conn = servers.connections.get(name)
        return conn.spec.consent if conn is not None else {}

    return Host(
        servers=servers,
        registry=RegistrySync(ServerRegistry(engine), servers, bus, audit, config.servers),
        admin_key=config.admin_key,
        limits=config.limits,
        host_origin=host_origin,
        sandbox=sandbox,
        stores=stores,
        audit=audit,
        item_appends=ItemAppends(stores.conversations, audit.write_in_turn),
        consent=ConsentPolicy(config.consent, entry_rules=entry_consent),
        sampling=sampling,
        asks=asks,
        trust_lists=config.trust,
        agent=agent,
        signer=HandleSigner(config.secret_key, round(config.limits.view_token_max_age)),
        bus=bus,
        lifecycle=Lifecycle(timeout=config.stop_timeout),
        database_probe=DatabaseProbe(engine),
        signins=signins,
        watch=watch,
        watch_debounce_ms=config.watch_debounce_ms,
        retention=AuditRetention(audit, config.audit_retention_days) if config.audit_retention_days else None,
    )
