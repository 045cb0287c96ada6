"""The stop signals of one process (web/stopping.py): a SIGTERM that comes again while the graceful stop runs
(a worker of `serve --workers N` gets the service's own and then its supervisor's) changes nothing, and one
that comes after the server has let go of the signals does not turn a clean exit into death by signal."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from types import FrameType

import pytest

from mcp_apps_host.host.process.lifecycle import Lifecycle
from mcp_apps_host.web import stopping
from mcp_apps_host.web.stopping import drain_on_signals

DEADLINE = 30.0


class Server:
    """What uvicorn's server offers the stop: its handler, and the flag that tells it to exit."""

    def __init__(self) -> None:
        self.should_exit = False
        self.signalled: list[int] = []  # what its handler got: uvicorn raises each again once it is done

    def handle_exit(self, sig: int, _frame: FrameType | None) -> None:
        self.signalled.append(sig)
        self.should_exit = True


@pytest.fixture
def server() -> Iterator[Server]:
    before = {sig: signal.getsignal(sig) for sig in stopping.STOP_SIGNALS}
    server = Server()
    for sig in stopping.STOP_SIGNALS:
        signal.signal(sig, server.handle_exit)
    try:
        yield server
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        stopping._stop_begun.clear()


async def until(what: str, check: object) -> None:
    async with asyncio.timeout(DEADLINE):
        while not check():  # type: ignore[operator]
            await asyncio.sleep(0.01)


@pytest.mark.anyio
async def test_sigterm_again_while_stopping_lets_the_call_finish_and_the_server_exit_cleanly(server: Server):
    lifecycle = Lifecycle(timeout=DEADLINE)
    release = asyncio.Event()
    finished: list[bool] = []

    async def call() -> None:
        with lifecycle.call():
            await release.wait()
            finished.append(True)

    in_flight = asyncio.create_task(call())
    await until("the call to run", lambda: lifecycle.calls_in_flight == 1)
    restore = drain_on_signals(lifecycle)
    os.kill(os.getpid(), signal.SIGTERM)  # the service's stop
    await until("the stop to begin", lambda: lifecycle.stopping)
    os.kill(os.getpid(), signal.SIGTERM)  # the supervisor's, a moment later
    for _ in range(20):
        await asyncio.sleep(0.01)
    assert not server.should_exit and server.signalled == []  # the stop goes on
    assert not in_flight.done()

    release.set()
    await until("the server to be told to exit", lambda: server.should_exit)
    assert finished == [True] and not lifecycle.timed_out
    assert server.signalled == []  # told by its flag: nothing to raise again, the process exits 0

    restore()  # the app's lifespan ends: a late SIGTERM still finds the stop's handler, not the server's
    os.kill(os.getpid(), signal.SIGTERM)
    await asyncio.sleep(0.05)
    assert server.signalled == []
    await in_flight


@pytest.mark.anyio
async def test_ctrl_c_again_while_stopping_stops_now(server: Server):
    lifecycle = Lifecycle(timeout=DEADLINE)
    release = asyncio.Event()

    async def call() -> None:
        with lifecycle.call():
            await release.wait()

    in_flight = asyncio.create_task(call())
    await until("the call to run", lambda: lifecycle.calls_in_flight == 1)
    restore = drain_on_signals(lifecycle)
    try:
        os.kill(os.getpid(), signal.SIGINT)
        await until("the stop to begin", lambda: lifecycle.stopping)
        assert not server.should_exit
        os.kill(os.getpid(), signal.SIGINT)
        await until("the server's handler", lambda: server.signalled == [signal.SIGINT])
    finally:
        release.set()
        await in_flight
        restore()


AFTER_THE_SERVER = """
import os, signal, sys
from mcp_apps_host.web import stopping
stopping.ignore_late_stops()
if sys.argv[1] == "stopping":
    stopping._stop_begun.set()
os.kill(os.getpid(), signal.SIGTERM)
"""


@pytest.mark.parametrize(("state", "status"), [("stopping", 0), ("serving", -signal.SIGTERM)])
def test_a_sigterm_after_the_server_let_go_is_ignored_only_once_the_stop_began(state: str, status: int):
    done = subprocess.run([sys.executable, "-c", AFTER_THE_SERVER, state], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert done.returncode == status, done.stderr
