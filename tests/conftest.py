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


@pytest.fixture
def anyio_backend() -> str:
    """The `anyio` tests run on asyncio, the loop the host runs on."""
    return "asyncio"
