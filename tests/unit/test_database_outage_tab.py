"""A database that goes away under a tab in use, driven as the page drives it.

PostgreSQL (a server of this test's own) is stopped and started again during a burst of a view's
requests: every answer the view saw is on record, no request is answered twice, a request whose record
could not be committed in time is answered with an error that says so, readiness says "not ready" while
the database is away, and afterwards the tab, the bus between two apps on that database, and readiness
all carry on by themselves. SQLite that is full or read-only: the view hears why, nothing it was
answered before is lost, and the host carries on once the database takes writes again.

The PostgreSQL test prints what it measured (answers lost, answered with an error, time to recover)."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from mcp_apps_host.settings import Limits
from mcp_apps_host.web.embed import HostApp
from tests.fixtures.postgres import Postgres
from tests.unit.tabdriver import Socket, app_for, open_tab
from tests.unit.test_failing_servers import call, ended, failing, ready_view

pytestmark = pytest.mark.anyio

WAIT = 3.0  # a short database_wait_timeout, that an outage outlasts
LIMITS = Limits(database_wait_timeout=WAIT)


@pytest.fixture
def pg() -> Iterator[Postgres]:
    """A server of this test's own: it is stopped and started, which the shared one must never be."""
    server = Postgres()
    yield server
    server.stop()


async def until(condition: Any, what: str, timeout: float = 60, explain: Callable[[], str] | None = None) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}" + (f" ({explain()})" if explain else "")
        await asyncio.sleep(0.05)
    return found


async def readiness(app: HostApp) -> tuple[int, dict[str, Any]]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://10.0.0.5") as client:
        response = await client.get("/api/health/ready")
    return response.status_code, response.json()


async def ready_is(app: HostApp, status: int, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        got, body = await readiness(app)
        if got == status:
            return body
        assert time.monotonic() < deadline, f"readiness stayed {got} {body}, not {status}"
        await asyncio.sleep(0.1)


@dataclass
class Burst:
    """A view's echo requests, one every ``every`` seconds, until stopped; when each was sent."""

    tab: Socket
    view: str
    every: float = 0.02
    sent: dict[int, float] = field(default_factory=dict)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(100))
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            msg_id = next(self._ids)
            self.sent[msg_id] = time.monotonic()
            self.tab.put({"type": "view-message", "view": self.view, "message": {
                "jsonrpc": "2.0", "id": msg_id, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": f"n{msg_id}"}}}})
            await asyncio.sleep(self.every)  # the pace of the burst, not a wait for a condition

    def replies(self) -> dict[int, list[tuple[dict[str, Any], float]]]:
        """Each request's replies as the page saw them, with when the test found them."""
        out: dict[int, list[tuple[dict[str, Any], float]]] = {}
        for frame, at in self.tab.sent:
            message = frame.get("message", {})
            if frame["type"] == "view-post" and frame["view"] == self.view and message.get("id") in self.sent \
                    and ("result" in message or "error" in message):
                out.setdefault(message["id"], []).append((message, at))
        return out

    def answered(self, *, ok: bool, after: float = 0.0) -> list[int]:
        return [i for i, got in self.replies().items() if self.sent[i] >= after and ("result" in got[0][0]) == ok]


def stamped() -> Socket:
    return Socket(stamp=time.monotonic)


def on_record_pg(url: str, view: str) -> set[int]:
    """The ids of the replies to ``view`` that the audit trail holds."""
    with psycopg.connect(url.replace("postgresql+psycopg", "postgresql")) as conn:
        rows = conn.execute("SELECT msg_id FROM audit_events WHERE direction = 'host->view' AND view = %s "
                            "AND decision IS NULL", (view,)).fetchall()
    return {int(r[0]) for r in rows if r[0] is not None and str(r[0]).isdigit()}


def bus_report(url: str, here: HostApp, there: HostApp, echoed: int) -> str:
    """Where news stopped: not written, not published, or not heard."""
    with psycopg.connect(url.replace("postgresql+psycopg", "postgresql")) as conn:
        items = conn.execute("SELECT count(*) FROM conversation_items").fetchone()
    return (f"conversation items stored: {items[0] if items else '?'}; news this app heard of its own since the "
            f"restart: {echoed}; bus up here/there: {here.host.bus.up}/{there.host.bus.up}")


def on_record_sqlite(path: Path, view: str) -> set[int]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT msg_id FROM audit_events WHERE direction = 'host->view' AND view = ? "
                            "AND decision IS NULL", (view,)).fetchall()
    return {int(r[0]) for r in rows if r[0] is not None and str(r[0]).isdigit()}


def check_burst(burst: Burst, recorded: set[int], said: str) -> tuple[int, int]:
    """Every request answered exactly once; every answer the view saw is on record. (lost, errors)"""
    replies = burst.replies()
    twice = {i: len(r) for i, r in replies.items() if len(r) > 1}
    assert not twice, f"requests answered more than once: {twice}"
    unanswered = sorted(set(burst.sent) - set(replies))
    answered_ok = {i for i, r in replies.items() if "result" in r[0][0]}
    not_on_record = sorted(answered_ok - recorded)
    errors = {i: r[0][0]["error"]["message"] for i, r in replies.items() if "error" in r[0][0]}
    for message in errors.values():
        assert f"database {said}" in message and "database_wait_timeout" in message, message
    return len(unanswered) + len(not_on_record), len(errors)


@pytest.mark.parametrize("wait", [30.0, WAIT], ids=["restart-within-the-wait", "away-longer-than-the-wait"])
async def test_a_postgres_restart_during_a_burst_loses_no_answer_and_everything_carries_on(pg: Postgres, wait: float):
    url = pg.database()
    servers = {"fine": failing("fine")}
    limits = Limits(database_wait_timeout=wait)
    here, there = app_for(servers, url, limits), app_for(servers, url, limits)  # two workers on one database
    async with here.lifespan(), there.lifespan():
        heard: list[tuple[dict[str, Any], float]] = []
        there.host.bus.subscribe("conversation", lambda news: heard.append((news, time.monotonic())))
        echoed: list[tuple[dict[str, Any], float]] = []  # what this app hears of its own news: says who failed
        here.host.bus.subscribe("conversation", lambda news: echoed.append((news, time.monotonic())))
        async with open_tab(here, stamped(), started=True) as tab:
            burst = Burst(tab, await ready_view(tab, "fine", "fine-view"))
            assert await readiness(here) == (200, {"ready": True})
            burst.start()
            await until(lambda: len(burst.answered(ok=True)) >= 20, "answers before the outage")

            await asyncio.to_thread(pg.halt, "fast")
            down_at = time.monotonic()  # from here until it is started again, nothing can be committed
            body = await ready_is(here, 503)
            assert "database" in body["notReady"], body
            if wait == WAIT:  # kept away until a request has waited out database_wait_timeout: its view hears why
                await until(lambda: burst.answered(ok=False), "a request answered with an error", timeout=wait + 60)
            else:  # back well within the wait: the requests made meanwhile wait for it
                await until(lambda: sum(at > down_at for at in burst.sent.values()) >= 20, "requests while away")

            starting = time.monotonic()
            await asyncio.to_thread(pg.resume)
            up_at = time.monotonic()
            # Only requests sent once the database was down: one sent before may have been committed before
            # the halt and reach the page a little later on a busy machine, as it should.
            uncommitted = [i for i, got in burst.replies().items() for message, at in got
                           if "result" in message and burst.sent[i] > down_at and at < starting]
            assert not uncommitted, f"answers the view got while nothing could be committed: {uncommitted}"
            first = await until(lambda: [at for i, got in burst.replies().items() if burst.sent[i] >= up_at
                                         for message, at in got if "result" in message], "an answer after the restart")
            recovered = min(first) - up_at
            await ready_is(here, 200)
            ready_after = time.monotonic() - up_at
            await burst.stop()
            await until(lambda: set(burst.replies()) == set(burst.sent), "every request of the burst answered")
            lost, errors = check_burst(burst, on_record_pg(url, burst.view), "is unreachable")

            def news_after(got: list[tuple[dict[str, Any], float]]) -> list[dict[str, Any]]:
                return [n for n, at in got if n.get("conversation") and n.get("item") and at > up_at]

            # The other app listens again (told it may have missed what was sent before: its listener may come
            # back after this whole burst was published), so what this tab does next reaches it.
            await until(lambda: any(n.get("missed") and at > down_at for n, at in heard),
                        "the other app told it may have missed news",
                        explain=lambda: bus_report(url, here, there, len(news_after(echoed))))
            # The tab carries on: a new call from the page, its view, and the view's own request.
            call_id = await call(tab, "fine", "fine-view")
            assert (await ended(tab, call_id))["type"] == "call-finished"
            # The other app hears this tab's conversation over the bus, as it did before the restart.
            await until(lambda: news_after(heard), "the other app to hear news after the restart",
                        explain=lambda: bus_report(url, here, there, len(news_after(echoed))))
    print(f"\nPostgreSQL restart during a burst of {len(burst.sent)} requests: {lost} answers lost, {errors} "
          f"answered with an error (database_wait_timeout {wait:g} s, away {up_at - down_at:.1f} s), first answer "
          f"{recovered:.2f} s after the database was back, ready again after {ready_after:.2f} s")
    assert lost == 0
    if wait == WAIT:
        assert errors >= 1
    else:
        assert errors == 0, "a request was answered with an error though the database was back within the wait"


class Trouble:
    """The audit writer's commits against a SQLite that is full (`max_page_count` at its size) or read-only
    (`query_only`), set on the writer's own connection just before each commit while ``mode`` says so."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.mode: str | None = None

    def commit(self, conn: Any, rows: list[Any]) -> BaseException | None:
        raw = conn.connection.dbapi_connection
        if self.mode == "full":
            pages = raw.execute("PRAGMA page_count").fetchone()[0]
            raw.execute(f"PRAGMA max_page_count = {pages}")
        else:
            raw.execute("PRAGMA max_page_count = 1073741823")
        raw.execute(f"PRAGMA query_only = {1 if self.mode == 'read-only' else 0}")
        return self.inner.commit(conn, rows)  # type: ignore[no-any-return]


@pytest.mark.parametrize("mode, said", [("full", "is full"), ("read-only", "is read-only")])
async def test_a_sqlite_database_full_or_read_only_says_so_and_loses_nothing(tmp_path: Path, mode: str, said: str):
    db = tmp_path / "h.db"
    app = app_for({"fine": failing("fine")}, f"sqlite:///{db}", LIMITS)
    audit = app.host.audit
    assert audit is not None
    trouble = Trouble(audit._batches)
    audit._batches = trouble  # type: ignore[assignment]
    async with open_tab(app, stamped()) as tab:
        burst = Burst(tab, await ready_view(tab, "fine", "fine-view"), every=0.05)
        burst.start()
        await until(lambda: len(burst.answered(ok=True)) >= 10, "answers before the trouble")
        trouble.mode = mode
        errors = await until(lambda: [got[0][0] for i, got in burst.replies().items() if "error" in got[0][0]],
                             "a request answered with an error", timeout=WAIT + 60)
        message = errors[0]["error"]["message"]
        assert f"database {said}" in message and "database_wait_timeout" in message, message

        trouble.mode = None  # space freed, or the file writable again: the host goes on by itself
        back = time.monotonic()
        await until(lambda: burst.answered(ok=True, after=back), "an answer once the database takes writes")
        await burst.stop()
        await until(lambda: set(burst.replies()) == set(burst.sent), "every request of the burst answered")
        call_id = await call(tab, "fine", "fine-view")
        assert (await ended(tab, call_id))["type"] == "call-finished"
        view = burst.view
    lost, _ = check_burst(burst, on_record_sqlite(db, view), said)
    assert lost == 0
