"""Run `check`: a host in this process on free loopback ports, its servers connected, then every view
driven in headless Chromium, one at a time, each in a fresh browser context."""

from __future__ import annotations

import asyncio
import secrets
import socket
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import uvicorn

from ..config.host import HostConfig
from ..errors import ConfigError
from ..host.process.build import build_host
from ..host.process.core import Host
from ..host.process.sandbox import Sandbox
from ..servers.connection import ServerStatus
from ..settings import CheckSettings
from ..web.access import Access
from ..web.app import console_app
from .arguments import example_arguments
from .browser import launch
from .driver import ViewDriver, ViewJob
from .findings import ViewResult, conclude
from .trail import ViewTrail


@dataclass(frozen=True)
class CheckOptions:
    arguments: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # from --args
    out: Path | None = None  # where the screenshots go
    settings: CheckSettings = field(default_factory=CheckSettings)


async def run_check(config: HostConfig, options: CheckOptions) -> list[ViewResult]:
    """Every view of every configured server, checked; servers that never connect are failures too."""
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        raise ConfigError("check needs Playwright: pip install 'mcp-apps-host[check]'") from None
    with tempfile.TemporaryDirectory(prefix="mcp-apps-host-check-") as tmp:
        # Each view is checked from its own start, as a person's first view of it: no proxy loaded
        # ahead and no view booted ahead.
        limits = replace(config.limits, view_init_timeout=options.settings.check_timeout,
                         prestarted_proxies_per_tab=0, prebooted_views_per_tab=0)
        config = replace(config, limits=limits, database_url=f"sqlite:///{tmp}/check.db")
        async with _RunningHost(config) as running:
            results, jobs = await _connect(running.host, options)
            async with async_playwright() as pw:
                browser = await launch(pw, options.settings.chromium)
                try:
                    driver = ViewDriver(browser, running.url, _audit(running.host), options.settings, options.out)
                    for job in jobs:
                        results.append(await _check_view(running.host, driver, job, options.settings))
                finally:
                    await browser.close()
    return sorted(results, key=lambda r: (r.server, r.tool))


async def _check_view(host: Host, driver: ViewDriver, job: ViewJob, settings: CheckSettings) -> ViewResult:
    obs = await driver.run(job)
    records = await ViewTrail(_audit(host), obs.handle).records() if obs.handle else []
    conn = host.servers.connections[job.server]
    app_only = {t.name for t in conn.tools.values() if t.app_visible and not t.model_visible}
    return conclude(obs, records, app_only, settings.size_loop_reversals)


def _audit(host: Host) -> Any:
    assert host.audit is not None  # build_host always opens the audit trail
    return host.audit


async def _connect(host: Host, options: CheckOptions) -> tuple[list[ViewResult], list[ViewJob]]:
    """Wait for every server to connect or fail; the views to check, and a failure per server that did not."""
    deadline = time.monotonic() + host.limits.server_connect_timeout + host.limits.template_read_timeout
    conns = list(host.servers.connections.values())
    while time.monotonic() < deadline and any(c.status == ServerStatus.CONNECTING for c in conns):
        await asyncio.sleep(0.1)
    failures: list[ViewResult] = []
    jobs: list[ViewJob] = []
    for conn in conns:
        if conn.status != ServerStatus.READY:
            failures.append(ViewResult(conn.name, "(connection)", {}, failures=[
                f"server {conn.name!r} did not connect: {conn.error or conn.status}"]))
            continue
        for tool in sorted(conn.tools.values(), key=lambda t: t.name):
            if tool.resource_uri and tool.model_visible:
                args = options.arguments.get((conn.name, tool.name))
                jobs.append(ViewJob(conn.name, tool.name, args if args is not None else
                                    example_arguments(tool.input_schema)))
    unknown = [f"{s}/{t}" for s, t in options.arguments if not any(j.server == s and j.tool == t for j in jobs)]
    if unknown:
        failures.append(ViewResult("check", "(arguments)", {}, failures=[
            "--args names no view of a connected server: " + ", ".join(sorted(unknown))]))
    return failures, jobs


class _RunningHost:
    """The console on two free loopback ports, served by uvicorn in this event loop."""

    def __init__(self, config: HostConfig) -> None:
        self.sockets = [_listen(), _listen()]
        port, sandbox_port = (s.getsockname()[1] for s in self.sockets)
        self.access = Access(token=secrets.token_urlsafe(24), bind_host="127.0.0.1", port=port)
        sandbox = Sandbox.on_port("http", "localhost", sandbox_port, per_server=True)
        self.host = build_host(config, host_origin=f"http://127.0.0.1:{port}", sandbox=sandbox)
        self.host.stores = None  # one page per view, none replaying another's conversation
        self.url = f"http://127.0.0.1:{port}/?token={self.access.token}"
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> _RunningHost:
        ready = asyncio.Event()
        app = console_app(self.host, self.access, on_ready=ready.set)
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning",
                                                     ws_max_size=self.host.limits.max_ws_frame_bytes))
        self._task = asyncio.create_task(self._server.serve(sockets=self.sockets))
        started = asyncio.create_task(ready.wait())
        await asyncio.wait([self._task, started], return_when=asyncio.FIRST_COMPLETED)
        if not started.done():
            started.cancel()
            await self._task  # it ended before it was ready: let its error out
            raise ConfigError("the host did not start")
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None and self._task is not None
        self._server.should_exit = True
        await self._task
        for sock in self.sockets:
            sock.close()


def _listen() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.set_inheritable(True)
    return sock
