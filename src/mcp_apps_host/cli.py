"""`mcp-apps-host serve | demo | check`: the console (one process or several workers), and the
check of every view that CI runs."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import logging
import os
import secrets
import socket
import sys
import webbrowser
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import uvicorn
from uvicorn.supervisors import Multiprocess

from .check import command as check_command
from .config.deployment import AppsSettings, check_origin, check_sandbox_origin, check_stop_timeout
from .config.host import HostConfig
from .config.metrics import check_metrics_port
from .config.servers import ServerSpec, apply_root_flags, default_watch_paths, load_config_document, parse_server_arg
from .demo.catalog import DEMO_SERVERS
from .errors import ConfigError, HostError
from .host.process.build import build_host
from .host.process.core import Host
from .host.process.sandbox import Sandbox
from .settings import check_settings_from_env, limits_from_env
from .store.db import default_db_url, open_database
from .telemetry import exposition, logs
from .telemetry.logs import LOG_FORMATS, LogFormat
from .version import __version__
from .web.access import Access, is_loopback
from .web.app import HostOrSandbox, console_gate, host_app, host_lifespan
from .web.stopping import ignore_late_stops, leave_hangups_to_the_supervisor, start_resource_tracker_ignoring_hangups

log = logging.getLogger("mcp_apps_host")
WORKER_ENV = "MCP_APPS_HOST_WORKER"  # how a worker process learns the console it is part of
YOUNG_COLLECTION_EVERY = 10_000  # objects kept between collections of the youngest generation, once started


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mcp-apps-host", description="A host for MCP Apps.")
    parser.add_argument("--version", action="version", version=f"mcp-apps-host {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (("serve", "run the console with the given MCP servers"),
                            ("demo", "run the console with the bundled demo servers")):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--server", action="append", default=[], metavar="NAME=SPEC",
                       help="an MCP server: a URL (Streamable HTTP) or a command line (stdio); repeatable")
        p.add_argument("--config", metavar="FILE", help='a JSON file in the {"mcpServers": {...}} shape')
        p.add_argument("--root", action="append", default=[], metavar="[SERVER=]PATH",
                       help="a directory (or file:// URI) servers may work in, given to them as an MCP root; "
                            "SERVER= gives it to one server only; repeatable")
        p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
        p.add_argument("--port", type=int, default=8765, help="port of the console (default 8765)")
        p.add_argument("--sandbox-port", type=int, default=8766, help="port of the sandbox origin (default 8766)")
        p.add_argument("--sandbox-origin", metavar="TEMPLATE",
                       help="serve the sandbox on the console's own port under this origin, with {label} for "
                            "each server, e.g. 'http://{label}.sandbox.localhost:8765'")
        p.add_argument("--origin", metavar="URL",
                       help="the origin people open the console on, when it is behind a proxy "
                            "(default: http://HOST:PORT)")
        p.add_argument("--workers", type=int, default=1, metavar="N",
                       help="worker processes behind the port (more than one needs a PostgreSQL --db)")
        p.add_argument("--token", help="access token (default: a random one each start)")
        p.add_argument("--no-open", action="store_true", help="do not open a browser")
        p.add_argument("--admin-key", default=os.environ.get("MCP_APPS_HOST_ADMIN_KEY") or None, metavar="KEY",
                       help="the admin API key (Authorization: Bearer KEY), e.g. for the audit stream "
                            "(default: $MCP_APPS_HOST_ADMIN_KEY; none: the stream is closed)")
        p.add_argument("--db", metavar="URL", help="SQLAlchemy database URL (default: SQLite in ~/.local/share)")
        p.add_argument("--model", default=None, metavar="SPEC",
                       help="none (default: call tools directly), openai:MODEL (any OpenAI-compatible endpoint, "
                            "key from OPENAI_API_KEY) or anthropic:MODEL (key from ANTHROPIC_API_KEY)")
        p.add_argument("--model-base-url", default=None, metavar="URL",
                       help="base URL of an OpenAI-compatible (or Anthropic-compatible) endpoint")
        p.add_argument("--max-steps", type=int, default=None,
                       help="model steps per turn before it must stop (default 8)")
        p.add_argument("--watch", action="store_true",
                       help="restart a stdio server when its files change and re-render its open views "
                            "(watched: the config entry's \"watch\" paths, else its script's folder)")
        p.add_argument("--watch-path", action="append", default=[], metavar="NAME=PATH",
                       help="with --watch: a path to watch for server NAME; repeatable")
        p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
        p.add_argument("--log-format", default="text", choices=list(LOG_FORMATS),
                       help="text (default) or json: one JSON object a line, with the trace id, person and view")
        p.add_argument("--metrics-port", type=_port_number, default=None, metavar="PORT",
                       help="serve Prometheus metrics at /metrics on this port of --host, off the console's "
                            "origin (a key for it goes in the config file: \"metrics\": {\"key\": …})")
        p.add_argument("--stop-timeout", type=float, default=None, metavar="SECONDS",
                       help="on SIGTERM, how long calls in flight may take to finish before they are ended "
                            "(default 30, or the config file's stopTimeout)")
    check_command.add_parser(sub)
    return parser


def config_from_args(args: argparse.Namespace) -> HostConfig:
    """The config file's document, then the command line on top of it (flags win). A console shows
    the views of every server it is given, unless a server's entry says `"apps": false`."""
    doc = load_config_document(args.config) if args.config else {}
    base = Path(args.config).resolve().parent if args.config else None
    config = HostConfig.from_dict(doc, f"--config {args.config}", base)
    demo = [ServerSpec(name=n, command=argv[0], args=tuple(argv[1:])) for n, argv in DEMO_SERVERS.items()]
    config = config.with_servers(demo if args.command == "demo" else [], [parse_server_arg(s) for s in args.server],
                                 list(config.servers))
    config = replace(config, servers=tuple(apply_root_flags(config.servers, args.root, Path.cwd())),
                     server_log_level=args.log_level)
    model = replace(config.model, spec=args.model or config.model.spec,
                    base_url=args.model_base_url or config.model.base_url,
                    max_steps=args.max_steps or config.model.max_steps)
    config = _with_watch_paths(config, args.watch_path)
    if args.admin_key is not None and len(args.admin_key) < 16:
        raise ConfigError("--admin-key (or MCP_APPS_HOST_ADMIN_KEY) must be at least 16 characters")
    if args.metrics_port is not None:
        config = replace(config, metrics=replace(config.metrics, port=args.metrics_port))
    if args.stop_timeout is not None:
        config = replace(config, stop_timeout=check_stop_timeout(args.stop_timeout, "--stop-timeout"))
    return replace(config, model=model, limits=limits_from_env(), database_url=args.db or config.database_url,
                   watch=args.watch, watch_debounce_ms=check_settings_from_env().watch_debounce_ms,
                   admin_key=args.admin_key or config.admin_key,
                   apps=AppsSettings(enabled=True, default=True),
                   origin=check_origin(args.origin, "--origin") if args.origin else config.origin,
                   sandbox_origin=check_sandbox_origin(args.sandbox_origin, "--sandbox-origin")
                   if args.sandbox_origin else config.sandbox_origin)


def _port_number(text: str) -> int:
    """`--metrics-port`: argparse reports what is wrong with the flag's value."""
    try:
        return check_metrics_port(int(text), "--metrics-port")
    except (ValueError, ConfigError) as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1-65535)") from exc


def _with_watch_paths(config: HostConfig, flags: list[str]) -> HostConfig:
    """`--watch-path NAME=PATH`: more paths for a server's watch list."""
    extra: dict[str, list[str]] = {}
    names = {s.name for s in config.servers}
    for text in flags:
        name, sep, path = text.partition("=")
        if not sep or not path.strip() or name not in names:
            raise ConfigError(f"--watch-path {text!r}: expected NAME=PATH for a configured server "
                              f"({', '.join(sorted(names)) or 'none'})")
        extra.setdefault(name, []).append(path.strip())
    return replace(config, servers=tuple(replace(s, watch=(*s.watch, *extra.get(s.name, ())))
                                         for s in config.servers))


@dataclass(frozen=True)
class Console:
    """What every process of one console shares: the config, the token, where it is opened and served."""

    config: HostConfig
    access: Access
    origin: str
    sandbox: Sandbox
    ports: tuple[int, ...]  # the console's port, then the sandbox's own port (if it has one)


def _console(args: argparse.Namespace, config: HostConfig, token: str) -> Console:
    if args.workers < 1:
        raise ConfigError("--workers must be at least 1")
    url = config.database_url or default_db_url()
    if args.workers > 1 and not url.startswith("postgresql"):
        raise ConfigError(f"--workers {args.workers} needs a PostgreSQL --db (postgresql+psycopg://…): workers share "
                          "conversations, views and live updates through it")
    shown_host = "127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host
    origin = config.origin or f"http://{shown_host}:{args.port}"
    if config.sandbox_origin is not None:
        sandbox, ports = Sandbox(config.sandbox_origin), [args.port]
    else:
        if args.port == args.sandbox_port:
            raise ConfigError("--port and --sandbox-port must differ (the sandbox needs its own origin), "
                              "or give --sandbox-origin to serve it on the same port under its own host name")
        # A loopback console gets its sandbox on `localhost`: another *site*, so the console's
        # cookie is never sent along with a view's requests.
        loopback = is_loopback(shown_host) and shown_host != "localhost"
        sandbox = Sandbox.on_port("http", "localhost" if loopback else shown_host, args.sandbox_port, loopback)
        ports = [args.port, args.sandbox_port]
    if config.metrics.port is not None and config.metrics.port in ports:
        raise ConfigError(f"the metrics port ({config.metrics.port}) must differ from the console's and the "
                          "sandbox's: /metrics is served off the console's origin")
    return Console(config, Access(token=token, bind_host=shown_host, port=args.port), origin, sandbox, tuple(ports))


def _build(console: Console, on_ready: Callable[[], None] | None = None) -> tuple[Host, HostOrSandbox]:
    host = build_host(console.config, host_origin=console.origin, sandbox=console.sandbox, loopback_servers=True)
    gate = console_gate(console.access, console.config.origin)
    return host, HostOrSandbox(host_app(host, gate, lifespan=host_lifespan(host, _settled(on_ready))), host)


def _settled(then: Callable[[], None] | None) -> Callable[[], None]:
    """Once the app has started, what is loaded by then (modules, the app, the servers' tools) lives as long as
    the process: it is frozen out of the collector's full passes, which under load walked all of it every few
    seconds with the event loop stopped (95-170 ms each) and freed none of it. The process is the console's
    own: an embedding decides this for its process itself."""

    def ready() -> None:
        gc.collect()  # what is garbage now would never be freed once frozen
        gc.freeze()
        # Collections of the young every 700 objects kept (the default) ran 120 times a second under load and took,
        # with the older generations' passes they set off, 60 µs a view call; most of what a call makes is gone
        # before the next one anyway. Every 10,000: 10 a second, 10 µs a call.
        gc.set_threshold(YOUNG_COLLECTION_EVERY, *gc.get_threshold()[1:])
        if then is not None:
            then()

    return ready


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    if args.command == "check":
        return check_command.main(args)
    _logging(args.log_level, args.log_format)
    try:
        config = config_from_args(args)
        if args.workers > 1 and config.secret_key is None:  # every worker must sign view handles alike
            config = replace(config, secret_key=secrets.token_urlsafe(32))
        console = _console(args, config, args.token or secrets.token_urlsafe(24))
        # Open (and migrate) the database once here, so a bad --db is reported before anything listens.
        open_database(config.database_url or default_db_url()).dispose()
    except HostError as exc:  # a person's input (a flag, the config file, the database URL) is wrong
        print(f"mcp-apps-host: {exc}", file=sys.stderr)
        return 2
    try:
        sockets = [_listen(args.host, port) for port in console.ports]
    except OSError as exc:
        ports = " and :".join(str(p) for p in console.ports)
        print(f"mcp-apps-host: cannot listen on {args.host}:{ports}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    metrics = config.metrics
    if metrics.port is not None:
        # With workers, the parent serves the sum of theirs: they write to a folder it makes before they start.
        folder = exposition.share_across_workers() if args.workers > 1 else None
        try:
            exposition.MetricsServer(args.host, metrics.port, metrics.key, folder).start()
        except OSError as exc:
            print(f"mcp-apps-host: cannot listen on {args.host}:{metrics.port} for /metrics: {exc.strerror or exc}",
                  file=sys.stderr)
            return 1
    if args.workers > 1:
        os.environ[WORKER_ENV] = json.dumps({"argv": argv, "token": console.access.token, "secret": config.secret_key})
        _banner(console, args)
        Workers(_uvicorn("mcp_apps_host.cli:worker_app", config, args.workers), sockets).run()
        return 0
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_serve(console, sockets, args))
    except HostError as exc:
        print(f"mcp-apps-host: {exc}", file=sys.stderr)
        return 2
    return 0


WORKER_START_TIMEOUT = 60  # seconds a new worker may take to serve (SIGHUP keeps the old one until it does)


class _ServingConfig(uvicorn.Config):
    """uvicorn's config, which also readies each serving process's signals before uvicorn takes them
    (a worker gets it pickled, so this runs in the worker)."""

    def get_loop_factory(self) -> Callable[[], asyncio.AbstractEventLoop] | None:
        ignore_late_stops()
        return super().get_loop_factory()


def _uvicorn(app: HostOrSandbox | str, config: HostConfig, workers: int = 1) -> uvicorn.Config:
    # log_config=None: uvicorn's lines go through the host's own handler (text or JSON), not one of its own.
    # The host drains its tabs and calls before uvicorn's own shutdown starts (web/stopping.py): what is
    # left by then are idle HTTP connections, given a few seconds. A new worker starts its app and database
    # before it answers its supervisor's health check, which on a busy machine takes longer than uvicorn's
    # 5 s default: killed for that, every worker would be restarted in a loop that never serves.
    # No permessage-deflate: the page's frames are small, a template goes to a page once (it keeps them by
    # hash), and compression runs on the event loop: a 224 KB template took 5-60 ms, every tab waiting.
    return _ServingConfig(app, factory=isinstance(app, str), workers=workers, log_level="warning", log_config=None,
                          ws_max_size=config.limits.max_ws_frame_bytes, ws_per_message_deflate=False,
                          timeout_graceful_shutdown=5, timeout_worker_healthcheck=WORKER_START_TIMEOUT)


class Workers(Multiprocess):
    """uvicorn's supervisor of `--workers N` (SIGHUP: one worker at a time is replaced, the new one serving
    before the old one is stopped), saying how each worker that ended did: a stop that was not clean
    shows in its exit code."""

    def init_processes(self) -> None:
        start_resource_tracker_ignoring_hangups()
        super().init_processes()

    def keep_subprocess_alive(self) -> None:
        for process in self.processes:
            if process.exitcode is not None:
                log.info("worker [%s] exited with code %s", process.pid, process.exitcode)
        super().keep_subprocess_alive()

    def join_all(self) -> None:
        super().join_all()
        for process in self.processes:
            log.info("worker [%s] exited with code %s", process.pid, process.exitcode)

    def handle_hup(self) -> None:
        before = list(self.processes)
        log.info("SIGHUP: replacing the workers %s one at a time", ", ".join(str(p.pid) for p in before))
        super().handle_hup()
        for process in before:
            if process.exitcode is not None:
                log.info("worker [%s] exited with code %s", process.pid, process.exitcode)
        log.info("SIGHUP: workers now %s", ", ".join(str(p.pid) for p in self.processes))


async def _serve(console: Console, sockets: list[socket.socket], args: argparse.Namespace) -> None:
    ready = asyncio.Event()
    _host, app = _build(console, ready.set)
    server = uvicorn.Server(_uvicorn(app, console.config))
    serving = asyncio.create_task(server.serve(sockets=sockets))
    started = asyncio.create_task(ready.wait())
    await asyncio.wait([serving, started], return_when=asyncio.FIRST_COMPLETED)
    if started.done():
        _banner(console, args)
    await serving


def worker_app() -> HostOrSandbox:
    """One worker of `serve --workers N` (a uvicorn app factory): the same console as its parent."""
    spec = json.loads(os.environ[WORKER_ENV])
    args = _parser().parse_args(spec["argv"])
    _logging(args.log_level, args.log_format)
    leave_hangups_to_the_supervisor()
    exposition.worker_exits()
    config = replace(config_from_args(args), secret_key=spec["secret"])
    return _build(_console(args, config, spec["token"]))[1]


def _logging(level: str, fmt: LogFormat) -> None:
    logs.setup(level, fmt)


def _listen(address: str, port: int) -> socket.socket:
    """Bind now, so that a port in use is reported before anything starts."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    # IPPROTO_TCP named, not 0: asyncio turns Nagle off (TCP_NODELAY) only on sockets whose proto
    # says TCP, and the accepted ones copy it. With Nagle on, a frame written right after another
    # waits for the browser's delayed ACK: ~40 ms added to a view's request answered after a card.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address, port))
        sock.listen(2048)  # connections wait in the backlog until a worker takes them
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _banner(console: Console, args: argparse.Namespace) -> None:
    url = f"{console.origin}/?token={console.access.token}"
    print(f"mcp-apps-host is running at {url}", flush=True)
    model = console.config.model.spec
    print(f"model: {model}" if model != "none" else "model: none (call tools with /call SERVER TOOL [JSON])",
          flush=True)
    sandbox = console.sandbox
    if sandbox.per_server:
        print(f"views run on per-server sandbox origins under {sandbox.page_sources[0]}", flush=True)
    else:
        print(f"views share one sandbox origin, {sandbox.template}: per-server origins need a loopback "
              "--host (they live under *.localhost)", flush=True)
    if args.workers > 1:
        print(f"workers: {args.workers} (stdio servers are started once per worker)", flush=True)
    watched = {s.name: paths for s in console.config.servers if (paths := default_watch_paths(s))}
    if console.config.watch:
        for name, paths in watched.items():
            print(f"watching {name}: {', '.join(paths)} (a change restarts it and re-renders its views)", flush=True)
        if not watched:
            print("--watch: no server has a path to watch (give one with --watch-path NAME=PATH)", flush=True)
    servers = console.config.servers
    if servers:
        print("servers: " + ", ".join(f"{s.name} ({s.transport}: {s.describe()})" for s in servers), flush=True)
    else:
        print("no servers configured: add --server NAME=SPEC or --config FILE", flush=True)
    if not args.no_open:
        with contextlib.suppress(Exception):
            webbrowser.open(url)
