"""How many log messages a server may write to the host's log: a server that floods them is cut
down to ``per_minute`` (a token bucket, so a short burst is kept), and what was dropped is counted."""

from __future__ import annotations

import time
from collections.abc import Callable


class LogBudget:
    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self._clock = clock
        self._tokens = float(per_minute)
        self._at = clock()
        self.dropped = 0  # since the last message let through

    def take(self) -> tuple[bool, int]:
        """Whether this message may be logged, and how many were dropped before it (then reset)."""
        now = self._clock()
        self._tokens = min(float(self.per_minute), self._tokens + (now - self._at) * self.per_minute / 60.0)
        self._at = now
        if self._tokens < 1.0:
            self.dropped += 1
            return False, 0
        self._tokens -= 1.0
        dropped, self.dropped = self.dropped, 0
        return True, dropped
