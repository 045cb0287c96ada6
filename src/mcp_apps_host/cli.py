"""`mcp-apps-host serve | demo`: the console."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import secrets
import signal
import sys
import webbrowser
from collections.abc import Sequence
from typing import Any

import uvicorn

from . import __version__
from .chat.agent import DEFAULT_MAX_STEPS, AgentLoop
from .chat.models import make_adapter
from .policy.consent import parse_consent_config, parse_sampling_config
from .servers.config import ConfigError, ServerSpec, load_config_document, merge_specs, parse_config, parse_server_arg
from .settings import limits_from_env
from .store.db import Store, default_db_url
from .web.security import is_loopback

log = logging.getLogger("mcp_apps_host")


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
        p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
        p.add_argument("--port", type=int, default=8765, help="port of the console (default 8765)")
        p.add_argument("--sandbox-port", type=int, default=8766, help="port of the sandbox origin (default 8766)")
        p.add_argument("--token", help="access token (default: a random one each start)")
        p.add_argument("--no-open", action="store_true", help="do not open a browser")
        p.add_argument("--db", metavar="URL", help="SQLAlchemy database URL (default: SQLite in ~/.local/share)")
        p.add_argument("--model", default=None, metavar="SPEC",
                       help="none (default: call tools directly), openai:MODEL (any OpenAI-compatible endpoint, "
                            "key from OPENAI_API_KEY) or anthropic:MODEL (key from ANTHROPIC_API_KEY)")
        p.add_argument("--model-base-url", default=None, metavar="URL",
                       help="base URL of an OpenAI-compatible (or Anthropic-compatible) endpoint")
        p.add_argument("--max-steps", type=int, default=None, help="model steps per turn before it must stop (default 8)")
        p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return parser


def _specs(args: argparse.Namespace, doc: dict[str, Any]) -> list[ServerSpec]:
    groups = [[parse_server_arg(s) for s in args.server]]
    if args.config:
        groups.append(parse_config(doc, f"--config {args.config}"))
    if args.command == "demo":
        from .demo.catalog import DEMO_SERVERS

        groups.insert(0, [ServerSpec(name=n, command=argv[0], args=tuple(argv[1:])) for n, argv in DEMO_SERVERS.items()])
    return merge_specs(*groups)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        doc = load_config_document(args.config) if args.config else {}
        specs = _specs(args, doc)
        policies = _policies(doc)
        policies["agent"] = _agent(args, doc)
    except (ConfigError, ValueError) as exc:
        print(f"mcp-apps-host: {exc}", file=sys.stderr)
        return 2
    if args.port == args.sandbox_port:
        print("mcp-apps-host: --port and --sandbox-port must differ (the sandbox needs its own origin)", file=sys.stderr)
        return 2
    try:
        return asyncio.run(serve(specs, args, policies))
    except KeyboardInterrupt:
        return 0


def _policies(doc: dict[str, Any]) -> dict[str, Any]:
    """The host's own sections of the config file, checked before anything starts."""
    trust = doc.get("trust", {})
    if not isinstance(trust, dict):
        raise ConfigError('"trust" must be an object with allowHashes, blockHashes, allowServers, blockServers')
    lists = {}
    for key in ("allowHashes", "blockHashes", "allowServers", "blockServers"):
        value = trust.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f'"trust.{key}" must be a list of strings')
        lists[key] = value
    return {"consent": parse_consent_config(doc), "sampling": parse_sampling_config(doc), "trust": lists}


def _agent(args: argparse.Namespace, doc: dict[str, Any]) -> AgentLoop | None:
    """The model from --model / --model-base-url, else from the config file's "model" section."""
    section = doc.get("model", {})
    if not isinstance(section, dict):
        raise ConfigError('"model" must be an object like {"spec": "openai:MODEL", "baseUrl": "http://…", "maxSteps": 8}')
    spec = args.model or section.get("spec") or "none"
    base_url = args.model_base_url or section.get("baseUrl")
    max_steps = args.max_steps or section.get("maxSteps") or DEFAULT_MAX_STEPS
    if not isinstance(spec, str) or not (base_url is None or isinstance(base_url, str)) or not isinstance(max_steps, int):
        raise ConfigError('"model": spec and baseUrl must be strings and maxSteps an integer')
    adapter = make_adapter(spec, base_url)
    return AgentLoop(adapter, max_steps=max_steps) if adapter is not None else None


async def serve(specs: list[ServerSpec], args: argparse.Namespace, policies: dict[str, Any]) -> int:
    from .host.core import Host, Sandbox
    from .policy.consent import ConsentPolicy, RememberedStore, SamplingPolicy
    from .policy.trust import TemplateTrust
    from .store.audit import AuditLog
    from .servers.manager import ServerManager
    from .web.app import host_app, sandbox_app
    from .web.security import Access

    try:
        limits = limits_from_env()
    except ValueError as exc:
        print(f"mcp-apps-host: {exc}", file=sys.stderr)
        return 2
    token = args.token or secrets.token_urlsafe(24)
    shown_host = "127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host
    host_origin = f"http://{shown_host}:{args.port}"
    # A loopback console gets its sandbox on `localhost`: another *site*, so the console's
    # cookie is never sent along with a view's requests.
    loopback = is_loopback(shown_host)
    sandbox = Sandbox("http", "localhost" if loopback and shown_host != "localhost" else shown_host, args.sandbox_port,
                      per_server=loopback and shown_host != "localhost")
    try:
        store = Store(args.db or default_db_url())
        trust = policies["trust"]
        extras = {
            "audit": AuditLog(store.engine),
            "consent": ConsentPolicy(policies["consent"], RememberedStore(store.engine)),
            "sampling": SamplingPolicy(policies["sampling"]),
            "agent": policies["agent"],
            "trust": TemplateTrust(store.engine, trust["allowHashes"], trust["blockHashes"], trust["allowServers"],
                                   trust["blockServers"]),
        }
    except Exception as exc:  # noqa: BLE001 - a bad --db is a person's input: say so and stop
        print(f"mcp-apps-host: --db {args.db or default_db_url()}: cannot open the database: {exc}", file=sys.stderr)
        return 2
    manager = ServerManager(specs, limits)
    host = Host(servers=manager, limits=limits, host_origin=host_origin, sandbox=sandbox, store=store, **extras)
    access = Access(token=token, bind_host=shown_host, port=args.port)
    configs = [
        uvicorn.Config(host_app(host, access), host=args.host, port=args.port, log_level="warning", ws_max_size=limits.max_ws_frame_bytes),
        uvicorn.Config(sandbox_app(host), host=args.host, port=args.sandbox_port, log_level="warning"),
    ]
    servers = [uvicorn.Server(c) for c in configs]
    for s in servers:
        s.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)

    manager.start()
    async def run_server(server: uvicorn.Server) -> None:
        with contextlib.suppress(SystemExit):  # uvicorn exits when it cannot bind; we report it below
            await server.serve()

    tasks = [asyncio.create_task(run_server(s)) for s in servers]
    while not all(s.started for s in servers):
        if any(t.done() for t in tasks):
            await manager.stop()
            print(f"mcp-apps-host: cannot listen on {args.host}:{args.port} and :{args.sandbox_port} (in use?)",
                  file=sys.stderr)
            return 1
        await asyncio.sleep(0.02)
    url = f"{host_origin}/?token={token}"
    print(f"mcp-apps-host is running at {url}", flush=True)
    agent = policies["agent"]
    print(f"model: {agent.adapter.label}" if agent else "model: none (call tools with /call SERVER TOOL [JSON])", flush=True)
    if sandbox.per_server:
        print(f"views run on per-server sandbox origins under {sandbox.page_sources[0]}", flush=True)
    else:
        print(f"views share one sandbox origin, {sandbox.shared_origin}: per-server origins need a loopback "
              "--host (they live under *.localhost)", flush=True)
    if specs:
        print("servers: " + ", ".join(f"{s.name} ({s.transport}: {s.describe()})" for s in specs), flush=True)
    else:
        print("no servers configured: add --server NAME=SPEC or --config FILE", flush=True)
    if not args.no_open:
        with contextlib.suppress(Exception):
            webbrowser.open(url)
    await stop.wait()
    for s in servers:
        s.should_exit = True
    await manager.stop()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.to_thread(extras["audit"].close)
    return 0
