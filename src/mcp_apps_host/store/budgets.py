"""Sampling allowances: a token bucket per person and server, shared by every worker through the database."""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from ..values.identity import Identity
from .owners import mine, owner_columns
from .schema import sampling_budgets


class SamplingBudgets:
    def __init__(self, engine: Engine, clock: Callable[[], float] = time.time) -> None:
        self.engine = engine
        self.clock = clock

    def bound(self, identity: Identity) -> OwnBudget:
        return OwnBudget(self, identity)


class OwnBudget:
    """One person's allowance (the policy's `SamplingBudget`)."""

    def __init__(self, budgets: SamplingBudgets, identity: Identity) -> None:
        self.engine = budgets.engine
        self.clock = budgets.clock
        self.identity = identity

    def take(self, server: str, per_minute: int) -> float | None:
        """Spend one request of ``per_minute``; None when it was spent, else the seconds until the next."""
        identity = self.identity
        key = mine(sampling_budgets, identity) & (sampling_budgets.c.server == server)
        for _ in range(3):  # a race with another worker's first request is retried
            try:
                with self.engine.begin() as db:
                    row = db.execute(select(sampling_budgets.c.tokens, sampling_budgets.c.at).where(key)
                                     .with_for_update()).first()
                    now = self.clock()
                    tokens = float(per_minute) if row is None else min(
                        float(per_minute), row.tokens + max(0.0, now - row.at) * per_minute / 60.0)
                    spent = tokens >= 1.0
                    values = {"tokens": tokens - 1.0 if spent else tokens, "at": now}
                    if row is None:
                        db.execute(insert(sampling_budgets).values(server=server, **values,
                                                                   **owner_columns(identity)))
                    else:
                        db.execute(update(sampling_budgets).where(key).values(**values))
                return None if spent else (1.0 - tokens) * 60.0 / per_minute
            except IntegrityError:
                continue
        return 60.0 / per_minute
