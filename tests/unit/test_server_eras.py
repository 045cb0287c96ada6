"""Both generations of MCP servers, for real: a server that speaks only 2026-07-28, one that speaks only
the initialize handshake, and one that speaks both (tests/fixtures/servers.py), over stdio and over
Streamable HTTP. Each connects, stays connected through its health checks, asks the host for input,
roots and sampling the way its generation does, and has its tool changes followed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_apps_host.config.servers import ServerSpec
from mcp_apps_host.errors import CallFailed
from mcp_apps_host.servers.connection import ServerConnection, ServerStatus
from mcp_apps_host.settings import Limits
from tests.unit.healthchecks import HealthChecks, generous_health_checks

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "servers.py"
ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
EXPECTED_VERSION = {"modern": "2026-07-28", "legacy": "2025-11-25", "dual": "2026-07-28"}
LIMITS = Limits(server_health_interval=0.3, reconnect_initial_delay=0.2, reconnect_max_delay=1.0)


@pytest.fixture(autouse=True)
def health_checks(monkeypatch: pytest.MonkeyPatch) -> HealthChecks:
    return generous_health_checks(monkeypatch)


class Asks:
    """The host's side of what servers ask, as a test sees it."""

    def __init__(self, sampling: bool = True) -> None:
        self.sampling = sampling
        self.elicited: list[dict[str, Any]] = []
        self.sampled: list[dict[str, Any]] = []
        self.listed: list[list[dict[str, Any]]] = []

    def sampling_enabled(self, server: str) -> bool:
        return self.sampling

    async def elicit(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        self.elicited.append(params)
        return {"action": "accept", "content": {"name": "Ada", "agree": True}}

    async def sample(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        self.sampled.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "fine words"}, "model": "fake"}

    def roots_listed(self, server: str, roots: list[dict[str, Any]]) -> None:
        self.listed.append(roots)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the fixture server exited"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}")


HttpStart = Callable[..., tuple[str, subprocess.Popen[bytes]]]


def serving_over_http(script: Path) -> Iterator[HttpStart]:
    """`script KIND --http PORT` started on demand (``start(kind, port=None, **env)`` gives its MCP URL
    and process), each stopped when the test ends."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(kind: str, port: int | None = None, **env: str) -> tuple[str, subprocess.Popen[bytes]]:
        port = port or free_port()
        proc = subprocess.Popen([sys.executable, str(script), kind, "--http", str(port)], env={**ENV, **env},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(proc)
        wait_port(port, proc)
        return f"http://127.0.0.1:{port}/mcp", proc

    yield start
    for proc in procs:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture
def http_server() -> Iterator[HttpStart]:
    yield from serving_over_http(FIXTURES)


def spec(kind: str, transport: str, url: str | None, roots: tuple[str, ...]) -> ServerSpec:
    if transport == "http":
        return ServerSpec(name=kind, url=url, roots=roots)
    return ServerSpec(name=kind, command=sys.executable, args=(str(FIXTURES), kind), env=ENV, roots=roots)


async def until(predicate: Callable[[], bool], what: str, timeout: float = 30) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.05)


class Watched:
    """A connection and every status it went through."""

    def __init__(self, server_spec: ServerSpec, asks: Asks, limits: Limits = LIMITS) -> None:
        self.statuses: list[ServerStatus] = []
        self.conn = ServerConnection(server_spec, limits, lambda c: self.statuses.append(c.status), asks=asks)

    @property
    def readies(self) -> int:
        """How many times it became ready (every status change while ready repeats READY: count the rises)."""
        return sum(1 for i, s in enumerate(self.statuses)
                   if s == ServerStatus.READY and (i == 0 or self.statuses[i - 1] != ServerStatus.READY))


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("kind", ["modern", "legacy", "dual"])
async def test_each_generation_connects_and_is_served(kind: str, transport: str, http_server, tmp_path: Path,
                                                      health_checks: HealthChecks):
    url = http_server(kind)[0] if transport == "http" else None
    asks = Asks()
    watched = Watched(spec(kind, transport, url, (tmp_path.as_uri(),)), asks)
    conn = watched.conn
    async with anyio.create_task_group() as group:
        group.start_soon(conn.run)
        await until(lambda: conn.status == ServerStatus.READY, "ready")
        assert conn.protocol_version == EXPECTED_VERSION[kind]
        assert {"era-view", "ask-name", "list-roots", "sample", "grow"} <= set(conn.tools)
        assert "ui://era/view.html" in conn.templates

        # Health checks that this generation answers: no reconnection over several intervals.
        answered = health_checks.answered
        await until(lambda: health_checks.answered >= answered + 5, "five more health checks answered")
        assert conn.status == ServerStatus.READY and watched.readies == 1, watched.statuses

        # What the server asks, through the same callbacks whichever way it asks.
        result = await conn.call_tool("era-view", {})
        assert result["structuredContent"] == {"protocol": EXPECTED_VERSION[kind], "kind": kind}
        result = await conn.call_tool("ask-name", {})
        assert result["content"][0]["text"] == "hello Ada (agree=True)"
        assert asks.elicited[-1]["requestedSchema"]["properties"]["name"]["type"] == "string"
        result = await conn.call_tool("list-roots", {})
        assert result["structuredContent"] == {"roots": [tmp_path.as_uri()]}
        assert asks.listed[-1] == [{"uri": tmp_path.as_uri(), "name": tmp_path.name}]
        result = await conn.call_tool("sample", {"topic": "tea"})
        assert result["content"][0]["text"] == "the model said: fine words"
        assert "a word about tea" in str(asks.sampled[-1]["messages"])

        # New roots reach the server (told of the change, or asked afresh on 2026-07-28).
        other = tmp_path / "other"
        other.mkdir()
        await conn.set_roots((other.as_uri(),))
        result = await conn.call_tool("list-roots", {})
        assert result["structuredContent"] == {"roots": [other.as_uri()]}

        # A tool list change is followed: subscriptions/listen on 2026-07-28, notifications before.
        grown = (await conn.call_tool("grow", {}))["content"][0]["text"]
        await until(lambda: grown in conn.tools, f"{grown} listed")
        assert watched.readies == 1
        group.cancel_scope.cancel()


@pytest.mark.anyio
async def test_a_server_that_refuses_what_it_is_asked_hears_why(tmp_path: Path):
    class Refusing(Asks):
        async def elicit(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
            raise CallFailed("declined by policy", -32000)

    watched = Watched(spec("dual", "stdio", None, ()), Refusing(sampling=False))
    conn = watched.conn
    async with anyio.create_task_group() as group:
        group.start_soon(conn.run)
        await until(lambda: conn.status == ServerStatus.READY, "ready")
        # Without roots or sampling enabled, neither is advertised: the server says what it misses.
        for tool, arguments in (("list-roots", {}), ("sample", {"topic": "x"})):
            with pytest.raises(Exception) as caught:
                await conn.call_tool(tool, arguments)
            assert "roots" in str(caught.value).lower() or "sampling" in str(caught.value).lower()
        with pytest.raises(Exception, match="declined by policy"):
            await conn.call_tool("ask-name", {})
        group.cancel_scope.cancel()


@pytest.mark.anyio
async def test_a_modern_server_killed_and_restarted_is_reconnected_once(http_server, health_checks: HealthChecks):
    url, proc = http_server("modern", None)
    port = int(url.split(":")[2].split("/")[0])
    watched = Watched(spec("modern", "http", url, ()), Asks())
    conn = watched.conn
    async with anyio.create_task_group() as group:
        group.start_soon(conn.run)
        await until(lambda: conn.status == ServerStatus.READY, "ready")
        proc.kill()
        proc.wait(timeout=10)
        await until(lambda: conn.status in (ServerStatus.ERROR, ServerStatus.RETRYING), "noticed")
        assert conn.error  # says why: a failed health check or a broken stream
        await anyio.to_thread.run_sync(http_server, "modern", port)
        await until(lambda: conn.status == ServerStatus.READY, "back")
        assert watched.readies == 2
        answered = health_checks.answered
        await until(lambda: health_checks.answered >= answered + 6, "six more health checks answered")
        assert conn.status == ServerStatus.READY and watched.readies == 2, watched.statuses  # no reconnect loop
        assert (await conn.call_tool("era-view", {}))["structuredContent"]["kind"] == "modern"
        group.cancel_scope.cancel()
