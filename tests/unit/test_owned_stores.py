"""Every store keeps people to their own rows, on SQLite and on PostgreSQL alike."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.engine import Engine

from mcp_apps_host.store.audit import AuditEvent, AuditLog
from mcp_apps_host.store.budgets import SamplingBudgets
from mcp_apps_host.store.consents import RememberedConsents
from mcp_apps_host.store.conversations import Conversations
from mcp_apps_host.store.db import open_database
from mcp_apps_host.store.pins import TemplatePins
from mcp_apps_host.store.registry import ServerRegistry, StoredServer
from mcp_apps_host.store.schema import metadata
from mcp_apps_host.store.view_host_states import ViewHostStates, ViewStateTooLarge
from mcp_apps_host.values.identity import Identity

ALICE = Identity("alice", "acme")
BOB = Identity("bob", "acme")
ALICE_ELSEWHERE = Identity("alice", "globex")  # the same user name in another tenant is another person


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'host.db'}"
    return request.getfixturevalue("postgres").database()


@pytest.fixture
def engine(url: str) -> Iterator[Engine]:
    engine = open_database(url)
    yield engine
    engine.dispose()


def test_the_migrations_build_the_declared_schema(engine: Engine):
    with engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), metadata) == []


def test_conversations_are_their_owners_alone(engine: Engine):
    repo = Conversations(engine)
    alice, bob, other = repo.bound(ALICE), repo.bound(BOB), repo.bound(ALICE_ELSEWHERE)
    mine = alice.create("alice's")
    alice.append(mine.id, "user", {"text": "hello"})
    assert [c.title for c in alice.recent()] == ["alice's"]
    assert bob.recent() == [] and other.recent() == []
    assert bob.get(mine.id) is None and bob.items(mine.id) == [] and other.get(mine.id) is None
    assert not bob.rename(mine.id, "taken") and not bob.delete(mine.id)
    assert alice.get(mine.id) is not None and alice.get(mine.id).title == "alice's"
    [item] = alice.items(mine.id)
    assert alice.item(mine.id, item.id) == item and bob.item(mine.id, item.id) is None
    assert alice.delete(mine.id) and alice.recent() == []


def test_always_allow_and_pins_are_per_person(engine: Engine):
    RememberedConsents(engine).bound(ALICE).remember_allow("shop", "checkout")
    assert RememberedConsents(engine).bound(ALICE).is_allowed("shop", "checkout")
    assert not RememberedConsents(engine).bound(BOB).is_allowed("shop", "checkout")
    pins = TemplatePins(engine)
    _pin, taken = pins.bound(ALICE).pin_first("shop", "ui://shop/v", "a" * 64, 10)
    assert taken
    _pin, taken = pins.bound(BOB).pin_first("shop", "ui://shop/v", "b" * 64, 12)
    assert taken and pins.bound(BOB).get("shop", "ui://shop/v")["sha256"] == "b" * 64
    assert pins.bound(ALICE).get("shop", "ui://shop/v")["sha256"] == "a" * 64


def test_a_sampling_allowance_is_shared_by_every_worker(url: str):
    """Two engines stand for two worker processes: together they may not exceed the rate."""
    first, second = open_database(url), open_database(url)
    try:
        now = [1000.0]
        a, b = SamplingBudgets(first, lambda: now[0]), SamplingBudgets(second, lambda: now[0])
        assert a.bound(ALICE).take("srv", 2) is None
        assert b.bound(ALICE).take("srv", 2) is None
        wait = a.bound(ALICE).take("srv", 2)
        assert wait is not None and 29 < wait <= 30  # 2 a minute: the next token in 30 s
        assert b.bound(BOB).take("srv", 2) is None  # Bob has his own
        now[0] += 30
        assert b.bound(ALICE).take("srv", 2) is None
    finally:
        first.dispose()
        second.dispose()


def test_audit_rows_carry_their_person(engine: Engine):
    log = AuditLog(engine)
    try:
        async def write() -> None:
            await asyncio.gather(*(log.record(AuditEvent(direction="view->host", method="ping", msg_id=n,
                                                         tenant=who.tenant, user_id=who.user))
                                   for n, who in enumerate([ALICE, BOB, ALICE_ELSEWHERE] * 50)))
        asyncio.run(write())
        assert len(log.query(tenant="acme", user_id="alice", limit=None)) == 50
        assert len(log.query(tenant="acme", limit=None)) == 100
        row = log.query(tenant="globex")[0]
        assert (row["tenant"], row["user"]) == ("globex", "alice")
    finally:
        log.close()


def _put_at_once(engines: list[Engine], name: str) -> list[StoredServer | None]:
    """Each engine's admin writes ``name`` at the same moment; what each write replaced."""
    start = threading.Barrier(len(engines))
    befores: list[StoredServer | None] = []

    def put(engine: Engine, who: str) -> None:
        start.wait(timeout=30)
        befores.append(ServerRegistry(engine).put(name, "team", {"url": f"https://{who}.example"}, who))

    writers = [threading.Thread(target=put, args=(e, f"admin{i}")) for i, e in enumerate(engines)]
    for w in writers:
        w.start()
    for w in writers:
        w.join(timeout=60)
    return befores


def test_two_admins_adding_one_name_at_once_both_succeed_in_some_order(url: str):
    """Two workers (two engines) adding the same new server at the same moment: neither fails, one is the
    add and the other the change after it, and the row is the later one's."""
    engines = [open_database(url) for _ in range(2)]
    try:
        for round_ in range(20):
            name = f"crm{round_}"
            befores = _put_at_once(engines, name)
            assert len(befores) == 2, "a write failed"
            assert sorted(b is None for b in befores) == [False, True]  # one add, one change
            changed = next(b for b in befores if b is not None)
            row = ServerRegistry(engines[0]).get(name)
            assert row is not None and row.updated_by != changed.updated_by
    finally:
        for engine in engines:
            engine.dispose()


def test_view_host_state_is_per_person_and_view_instance(engine: Engine):
    states = ViewHostStates(engine, max_bytes=1024)
    alice = states.bound(ALICE)
    alice.set("view-1", {"count": 3, "items": ["a"]})
    assert alice.get("view-1") == {"count": 3, "items": ["a"]}
    assert ViewHostStates(engine, max_bytes=1024).bound(ALICE).get("view-1") == {"count": 3, "items": ["a"]}
    assert states.bound(BOB).get("view-1") is None and states.bound(ALICE_ELSEWHERE).get("view-1") is None
    assert alice.get("view-2") is None
    states.bound(BOB).set("view-1", 7)
    assert states.bound(BOB).get("view-1") == 7 and alice.get("view-1") == {"count": 3, "items": ["a"]}
    alice.set("view-1", {"count": 4})
    assert alice.get("view-1") == {"count": 4}
    alice.set("view-1", None)
    assert alice.get("view-1") is None and states.bound(BOB).get("view-1") == 7


def test_a_view_state_over_the_limit_is_refused_and_the_old_one_kept(engine: Engine):
    alice = ViewHostStates(engine, max_bytes=64).bound(ALICE)
    alice.set("view-1", "small")
    with pytest.raises(ViewStateTooLarge, match=r"larger than max_view_state_bytes \(64\)"):
        alice.set("view-1", "x" * 100)
    assert alice.get("view-1") == "small"


def test_deleting_a_conversation_forgets_its_views_kept_states_and_no_one_elses(engine: Engine):
    states = ViewHostStates(engine, max_bytes=1024)
    alice_talks = Conversations(engine).bound(ALICE)
    gone, kept = alice_talks.create().id, alice_talks.create().id
    states.bound(ALICE).set("view-1", "in the deleted one", conversation=gone)
    states.bound(ALICE).set("view-2", "in the kept one", conversation=kept)
    states.bound(BOB).set("view-3", "bob's", conversation=gone)  # never his to lose through alice
    assert alice_talks.delete(gone)
    assert states.bound(ALICE).get("view-1") is None
    assert states.bound(ALICE).get("view-2") == "in the kept one"
    assert states.bound(BOB).get("view-3") == "bob's"
