"""`mcp-apps-host serve | demo`: the console."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import secrets
import socket
import sys
import webbrowser
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import uvicorn

from .config.host import HostConfig
from .config.servers import ServerSpec, apply_root_flags, load_config_document, parse_server_arg
from .demo.catalog import DEMO_SERVERS
from .errors import HostError
from .host.build import build_host
from .host.core import Host
from .host.sandbox import Sandbox
from .settings import limits_from_env
from .version import __version__
from .web.access import Access, is_loopback
from .web.app import console_app

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
        p.add_argument("--root", action="append", default=[], metavar="[SERVER=]PATH",
                       help="a directory (or file:// URI) servers may work in, given to them as an MCP root; "
                            "SERVER= gives it to one server only; repeatable")
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
        p.add_argument("--max-steps", type=int, default=None,
                       help="model steps per turn before it must stop (default 8)")
        p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return parser


def config_from_args(args: argparse.Namespace) -> HostConfig:
    """The config file's document, then the command line on top of it (flags win)."""
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
    return replace(config, model=model, limits=limits_from_env(), database_url=args.db or config.database_url)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("alembic").setLevel(logging.WARNING)  # a migration is news only when it fails
    if args.port == args.sandbox_port:
        print("mcp-apps-host: --port and --sandbox-port must differ (the sandbox needs its own origin)",
              file=sys.stderr)
        return 2
    shown_host = "127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host
    host_origin = f"http://{shown_host}:{args.port}"
    # A loopback console gets its sandbox on `localhost`: another *site*, so the console's
    # cookie is never sent along with a view's requests.
    loopback = is_loopback(shown_host)
    sandbox = Sandbox("http", "localhost" if loopback and shown_host != "localhost" else shown_host, args.sandbox_port,
                      per_server=loopback and shown_host != "localhost")
    try:
        config = config_from_args(args)
        host = build_host(config, host_origin=host_origin, sandbox=sandbox)
    except HostError as exc:  # a person's input (a flag, the config file, the database URL) is wrong
        print(f"mcp-apps-host: {exc}", file=sys.stderr)
        return 2
    try:
        sockets = [_listen(args.host, args.port), _listen(args.host, args.sandbox_port)]
    except OSError as exc:
        print(f"mcp-apps-host: cannot listen on {args.host}:{args.port} and :{args.sandbox_port}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        return 1
    access = Access(token=args.token or secrets.token_urlsafe(24), bind_host=shown_host, port=args.port)
    try:
        asyncio.run(_serve(host, access, sockets, config, args))
    except KeyboardInterrupt:
        pass
    return 0


def _listen(address: str, port: int) -> socket.socket:
    """Bind now, so that a port in use is reported before anything starts."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


async def _serve(host: Host, access: Access, sockets: list[socket.socket], config: HostConfig,
                 args: argparse.Namespace) -> None:
    ready = asyncio.Event()
    app = console_app(host, access, on_ready=ready.set)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", ws_max_size=config.limits.max_ws_frame_bytes))
    serving = asyncio.create_task(server.serve(sockets=sockets))
    started = asyncio.create_task(ready.wait())
    await asyncio.wait([serving, started], return_when=asyncio.FIRST_COMPLETED)
    if started.done():
        _banner(host, access, config, args)
    await serving


def _banner(host: Host, access: Access, config: HostConfig, args: argparse.Namespace) -> None:
    url = f"{host.host_origin}/?token={access.token}"
    print(f"mcp-apps-host is running at {url}", flush=True)
    agent = host.agent
    print(f"model: {agent.adapter.label}" if agent else "model: none (call tools with /call SERVER TOOL [JSON])",
          flush=True)
    sandbox = host.sandbox
    if sandbox.per_server:
        print(f"views run on per-server sandbox origins under {sandbox.page_sources[0]}", flush=True)
    else:
        print(f"views share one sandbox origin, {sandbox.shared_origin}: per-server origins need a loopback "
              "--host (they live under *.localhost)", flush=True)
    if config.servers:
        print("servers: " + ", ".join(f"{s.name} ({s.transport}: {s.describe()})" for s in config.servers), flush=True)
    else:
        print("no servers configured: add --server NAME=SPEC or --config FILE", flush=True)
    if not args.no_open:
        with contextlib.suppress(Exception):
            webbrowser.open(url)
