"""`mcp-apps-host check`: its flags, and what it prints and writes. Exit 0 only when every view passes."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from dataclasses import replace
from pathlib import Path

from ..config.deployment import AppsSettings
from ..config.host import HostConfig
from ..config.servers import ServerSpec, load_config_document, parse_server_arg
from ..demo.catalog import DEMO_SERVERS
from ..errors import ConfigError, HostError
from ..settings import check_settings_from_env, limits_from_env
from .arguments import parse_args_flags
from .report import junit, table, to_json
from .runner import CheckOptions, run_check


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("check", help="render every view of the given servers in headless Chromium and report")
    p.add_argument("--server", action="append", default=[], metavar="NAME=SPEC",
                   help="an MCP server: a URL (Streamable HTTP) or a command line (stdio); repeatable")
    p.add_argument("--config", metavar="FILE", help='a JSON file in the {"mcpServers": {...}} shape')
    p.add_argument("--demo", action="store_true", help="check the bundled demo servers too")
    p.add_argument("--args", action="append", default=[], metavar="SERVER/TOOL=JSON",
                   help="arguments for one tool (default: from its input schema's defaults and examples)")
    p.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    p.add_argument("--junit", metavar="FILE", help="write a JUnit XML file: one testcase per view")
    p.add_argument("--out", metavar="DIR", help="write one PNG screenshot per view (light | dark) into DIR")
    p.add_argument("--chromium", metavar="PATH", help="the Chromium to drive (default /usr/bin/chromium, "
                                                       "or MCP_APPS_HOST_CHROMIUM)")
    p.add_argument("--timeout", type=float, metavar="SECONDS",
                   help="seconds a view has for its handshake, and again for its result (default 30)")
    p.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])


def _config(args: argparse.Namespace) -> HostConfig:
    doc = load_config_document(args.config) if args.config else {}
    config = HostConfig.from_dict(doc, f"--config {args.config}")
    demo = [ServerSpec(name=n, command=argv[0], args=tuple(argv[1:])) for n, argv in DEMO_SERVERS.items()]
    config = config.with_servers(demo if args.demo else [], [parse_server_arg(s) for s in args.server],
                                 list(config.servers))
    if not config.servers:
        raise ConfigError("no servers to check: add --server NAME=SPEC, --config FILE or --demo")
    # Views are what is checked: every server's render, as in the console, unless its entry says "apps": false.
    return replace(config, limits=limits_from_env(), apps=AppsSettings(enabled=True, default=True))


def _options(args: argparse.Namespace) -> CheckOptions:
    try:
        settings = check_settings_from_env()
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if args.chromium:
        settings = replace(settings, chromium=args.chromium)
    if args.timeout is not None:
        if args.timeout <= 0:
            raise ConfigError(f"--timeout {args.timeout:g}: must be positive")
        settings = replace(settings, check_timeout=args.timeout)
    out = Path(args.out) if args.out else None
    if out is not None:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"--out {args.out}: cannot create it: {exc.strerror or exc}") from None
    return CheckOptions(arguments=parse_args_flags(args.args), out=out, settings=settings)


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("alembic").setLevel(logging.WARNING)
    try:
        config, options = _config(args), _options(args)
        results = asyncio.run(run_check(config, options))
    except (HostError, ValueError) as exc:
        print(f"mcp-apps-host check: {exc}", file=sys.stderr)
        return 2
    print(to_json(results) if args.json else table(results), flush=True)
    if args.junit:
        try:
            Path(args.junit).write_bytes(junit(results))
        except OSError as exc:
            print(f"mcp-apps-host check: --junit {args.junit}: cannot write: {exc.strerror or exc}", file=sys.stderr)
            return 2
    return 0 if results and all(r.passed for r in results) else 1
