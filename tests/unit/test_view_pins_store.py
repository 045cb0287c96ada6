"""Pinned views are kept per person (migration 0004): nobody reads, replaces or removes another's pins."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from mcp_apps_host.store.db import open_database
from mcp_apps_host.store.view_pins import MAX_PINS, ViewPins
from mcp_apps_host.values.identity import Identity

ALICE = Identity("alice", "acme")
BOB = Identity("bob", "acme")
ALICE_ELSEWHERE = Identity("alice", "globex")
CALL = {"server": "display", "tool": "modes-view", "arguments": {"n": 1}, "view": {"sha256": "ab" * 32}}


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    url = (f"sqlite:///{tmp_path / 'host.db'}" if request.param == "sqlite"
           else request.getfixturevalue("postgres").database())
    engine = open_database(url)
    yield engine
    engine.dispose()


def test_pins_are_their_owners_alone(engine: Engine):
    repo = ViewPins(engine)
    alice, bob, elsewhere = repo.bound(ALICE), repo.bound(BOB), repo.bound(ALICE_ELSEWHERE)
    alice.pin("i1", "c1", CALL)
    alice.pin("i2", "c2", {**CALL, "arguments": {"n": 2}})
    assert [(p.instance, p.conversation, p.call["arguments"]) for p in alice.list()] == [
        ("i1", "c1", {"n": 1}), ("i2", "c2", {"n": 2})]
    assert bob.list() == [] and elsewhere.list() == []
    # The same instance id pinned by someone else is their own row, and removing it leaves alice's.
    bob.pin("i1", "c9", {**CALL, "arguments": {"n": 9}})
    assert not elsewhere.unpin("i1")
    assert bob.unpin("i1") and bob.list() == []
    assert [p.instance for p in alice.list()] == ["i1", "i2"]
    assert alice.unpin("i1") and not alice.unpin("i1")
    assert [p.instance for p in alice.list()] == ["i2"]


def test_pinning_again_moves_the_pin_last_and_the_panel_has_a_limit(engine: Engine):
    alice = ViewPins(engine).bound(ALICE)
    alice.pin("a", "c1", CALL)
    alice.pin("b", "c1", CALL)
    alice.pin("a", "c1", {**CALL, "arguments": {"n": 5}})
    assert [(p.instance, p.call["arguments"]["n"]) for p in alice.list()] == [("b", 1), ("a", 5)]
    for n in range(MAX_PINS - 2):
        alice.pin(f"p{n}", "c1", CALL)
    with pytest.raises(ValueError, match=f"at most {MAX_PINS} views can be pinned"):
        alice.pin("one-more", "c1", CALL)
    assert len(alice.list()) == MAX_PINS
    with pytest.raises(ValueError, match="instance id"):
        alice.pin("", "c1", CALL)
