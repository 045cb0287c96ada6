"""Fixtures every part of the suite may use."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fixtures.postgres import Postgres


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """One PostgreSQL server for the whole run, started when a test first needs it."""
    server = Postgres()
    yield server
    server.stop()
