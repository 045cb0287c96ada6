"""`ServerConnection`'s own rules against real servers: a silent server is given up on after the
configured number of missed health checks, backoff doubles up to its cap and starts afresh after a
connection that worked, configured `headers` reach an HTTP server and never a log, and a cancelled
call reaches the server as `notifications/cancelled`."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

from mcp_apps_host.config.servers import ServerSpec
from mcp_apps_host.servers.connection import ServerConnection, ServerStatus
from mcp_apps_host.settings import Limits
from tests.unit.healthchecks import HealthChecks, generous_health_checks

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
LIMITS = Limits(server_health_interval=0.3, reconnect_initial_delay=0.1, reconnect_max_delay=0.5)


@pytest.fixture
def health_checks(monkeypatch: pytest.MonkeyPatch) -> HealthChecks:
    """For the tests of healthy servers: their frequent checks wait for an answer generously."""
    return generous_health_checks(monkeypatch)


async def until(predicate: Callable[[], bool], what: str, timeout: float = 30) -> None:
    try:
        with anyio.fail_after(timeout):
            while not predicate():
                await anyio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"gave up waiting: {what}") from None


def pid_wrapped(kind: str, pidfile: Path, gate: Path | None = None) -> ServerSpec:
    """A stdio `failing.py` server that writes its pid first; with ``gate``, it starts only while
    that file exists (else it exits at once)."""
    script = f'echo $$ > "{pidfile}"; '
    if gate is not None:
        script += f'[ -f "{gate}" ] || exit 1; '
    script += f'exec "{sys.executable}" "{FIXTURES / "failing.py"}" {kind}'
    return ServerSpec(name=kind, command="sh", args=("-c", script), env=ENV)


def kill(pidfile: Path, sig: int) -> None:
    try:
        os.kill(int(pidfile.read_text().strip()), sig)
    except ProcessLookupError:
        pass


@pytest.mark.anyio
async def test_a_silent_server_is_given_up_after_the_missed_health_checks(tmp_path: Path):
    pidfile = tmp_path / "pid"
    conn = ServerConnection(pid_wrapped("fine", pidfile), LIMITS, lambda c: None)
    async with anyio.create_task_group() as group:
        group.start_soon(conn.run)
        await until(lambda: conn.status == ServerStatus.READY, "ready")
        kill(pidfile, signal.SIGSTOP)  # alive, its pipe open, answering nothing
        try:
            await until(lambda: conn.status != ServerStatus.READY, "given up")
            assert conn.error == f"has not answered {LIMITS.server_missed_health_checks} health checks in a row"
        finally:
            kill(pidfile, signal.SIGKILL)
            kill(pidfile, signal.SIGCONT)
        group.cancel_scope.cancel()


@pytest.mark.anyio
@pytest.mark.usefixtures("health_checks")
async def test_backoff_doubles_up_to_its_cap_and_starts_afresh_after_a_connection_that_worked(tmp_path: Path):
    pidfile, gate = tmp_path / "pid", tmp_path / "up"
    conn = ServerConnection(pid_wrapped("fine", pidfile, gate), LIMITS, lambda c: None)
    pauses: list[float] = []

    async def pause(delay: float) -> None:  # the backoff as asked for, without waiting it out
        pauses.append(delay)
        await anyio.sleep(0.01)

    conn._pause = pause  # type: ignore[method-assign]
    async with anyio.create_task_group() as group:
        group.start_soon(conn.run)
        await until(lambda: len(pauses) >= 6, "six failed starts")
        assert pauses[:6] == [0.1, 0.2, 0.4, 0.5, 0.5, 0.5]
        assert conn.error is not None and "closed the connection" in conn.error, conn.error

        gate.touch()
        await until(lambda: conn.status == ServerStatus.READY, "ready once its gate is open")
        gate.unlink()
        seen = len(pauses)
        kill(pidfile, signal.SIGKILL)  # it worked; now it is gone again
        await until(lambda: len(pauses) >= seen + 3, "three more pauses")
        # Afresh from the first delay, whether the end was noticed as a failure or as a closed connection.
        assert pauses[seen:seen + 3] in ([0.1, 0.2, 0.4], [0.1, 0.1, 0.2]), pauses
        group.cancel_scope.cancel()


@pytest.fixture
def http_fixture() -> Iterator[Callable[[list[str]], str]]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(argv: list[str]) -> str:
        from tests.unit.test_server_eras import free_port, wait_port

        port = free_port()
        proc = subprocess.Popen([sys.executable, *argv, str(port)], env=ENV,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(proc)
        wait_port(port, proc)
        return f"http://127.0.0.1:{port}/mcp"

    yield start
    for proc in procs:
        proc.kill()
        proc.wait(timeout=10)


@pytest.mark.anyio
@pytest.mark.usefixtures("health_checks")
async def test_configured_headers_reach_an_http_server_and_never_a_log(http_fixture, caplog):
    secret = "Bearer s3cret-7f1d2c"
    url = http_fixture([str(FIXTURES / "whoami.py")])
    caplog.set_level(logging.DEBUG)  # every logger, the SDK's and httpx's included
    spec = ServerSpec(name="who", url=url, headers={"Authorization": secret})
    conn = ServerConnection(spec, LIMITS, lambda c: None)
    async with anyio.create_task_group() as group:
        group.start_soon(conn.run)
        await until(lambda: conn.status == ServerStatus.READY, "ready")
        result = await conn.call_tool("whoami", {})
        assert result["content"][0]["text"] == f"authorization: {secret}"
        group.cancel_scope.cancel()

    # The same headers towards a server that is not there: the failure names the URL, not them.
    dead = ServerConnection(ServerSpec(name="dead", url="http://127.0.0.1:9/mcp", headers={"Authorization": secret}),
                            LIMITS, lambda c: None)
    async with anyio.create_task_group() as group:
        group.start_soon(dead.run)
        await until(lambda: dead.error is not None, "a failure")
        group.cancel_scope.cancel()
    assert "127.0.0.1:9" in (dead.error or "")
    assert "s3cret" not in (dead.error or "") and "s3cret" not in spec.describe()
    assert caplog.records and not [r.getMessage() for r in caplog.records if "s3cret" in r.getMessage()]


@pytest.mark.anyio
@pytest.mark.usefixtures("health_checks")
async def test_a_cancelled_call_reaches_the_server_as_notifications_cancelled(tmp_path: Path):
    mark = tmp_path / "cancelled"
    spec = ServerSpec(name="cancel", command=sys.executable, args=(str(FIXTURES / "failing.py"), "cancel"),
                      env={**ENV, "CANCEL_MARK": str(mark)})
    conn = ServerConnection(spec, LIMITS, lambda c: None)
    progressed = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        progressed.set()

    async with anyio.create_task_group() as group:
        group.start_soon(conn.run)
        await until(lambda: conn.status == ServerStatus.READY, "ready")
        async with anyio.create_task_group() as call:
            call.start_soon(conn.call_tool, "wait", {"seconds": 60}, on_progress)
            await progressed.wait()  # the tool is running on the server
            call.cancel_scope.cancel()
        await until(mark.exists, "the server's tool was cancelled")
        assert mark.read_text() == "cancelled"
        # The connection is still good for the next call.
        assert conn.status == ServerStatus.READY
        group.cancel_scope.cancel()


@pytest.mark.anyio
@pytest.mark.parametrize("ending", ["an error", "no error"])
async def test_a_stop_that_the_connection_takes_for_its_own_ending_still_stops_it(ending: str):
    """A task group or cancel scope of the SDK's, cancelled at the same moment for a reason of its own, may take
    the connection task's cancellation with its own and end with an error of its own, or with none. The
    connection must stop all the same: going on, it would wait for the server (or for a person to sign in) for
    ever, and the host's stop would wait for it."""
    conn = ServerConnection(ServerSpec(name="srv", command="unused"), LIMITS, lambda c: None)
    attempts = 0

    async def connected_session() -> None:
        nonlocal attempts
        attempts += 1
        try:
            await asyncio.Event().wait()  # up, until told otherwise
        except asyncio.CancelledError:
            if attempts > 1:
                raise  # the race is once: a connection started again stops as it should
            if ending == "an error":
                raise BaseExceptionGroup("the session's task group", [ConnectionResetError("closed")]) from None

    conn._connected_session = connected_session  # type: ignore[method-assign]
    task = asyncio.get_running_loop().create_task(conn.run())
    await until(lambda: attempts == 1, "connected")
    task.cancel()
    await asyncio.wait({task}, timeout=10)
    if not task.done():
        task.cancel()  # a connection started again, and waiting
    await asyncio.gather(task, return_exceptions=True)
    assert (attempts, conn.status) == (1, ServerStatus.STOPPED) and task.cancelled()
