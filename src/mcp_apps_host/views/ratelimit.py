"""How many messages one view may send the host: at most ``per_second`` in each one-second window.

A view over the limit is in a burst until a whole window passes without a refusal; only the
first refusal of a burst is worth a record (a flood of 10,000 messages is one event, not 10,000).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from . import jsonrpc as rpc
from .effects import Effect, PostToView, Refused


class Admission(StrEnum):
    ADMIT = "admit"
    REFUSE_FIRST = "refuse-first"  # the first refusal of a burst: record it
    REFUSE = "refuse"  # refused again in the same burst: answer, record nothing


class MessageRate:
    def __init__(self, per_second: int) -> None:
        if per_second <= 0:
            raise ValueError(f"per_second must be positive, not {per_second!r}")
        self.per_second = per_second
        self._window: float | None = None
        self._count = 0
        self._refused = 0
        self.limited = False  # in a burst
        self.refused_total = 0

    def admit(self, now: float) -> Admission:
        """One message arriving at ``now`` (seconds, any monotonic clock)."""
        if self._window is None or now - self._window >= 1.0:
            if self._refused == 0:
                self.limited = False  # a quiet window ends the burst
            self._window, self._count, self._refused = now, 0, 0
        self._count += 1
        if self._count <= self.per_second:
            return Admission.ADMIT
        self._refused += 1
        self.refused_total += 1
        if self.limited:
            return Admission.REFUSE
        self.limited = True
        return Admission.REFUSE_FIRST


def over_rate(rate: MessageRate, limit: int, raw: Any, now: float) -> list[Effect] | None:
    """None when ``raw`` is admitted at ``now``; otherwise an error for a request, nothing for the
    rest, and a `Refused` (one record) for the first refusal of a burst only."""
    admission = rate.admit(now)
    if admission == Admission.ADMIT:
        return None
    reason = f"more than {limit} messages in one second (max_view_messages_per_second = {limit})"
    method = raw.get("method") if isinstance(raw, dict) else None
    effects: list[Effect] = []
    if admission == Admission.REFUSE_FIRST:
        effects.append(Refused(method if isinstance(method, str) else None,
                               reason + "; further messages are refused until a second passes without one over "
                                        "the limit, and are not recorded"))
    msg_id = raw.get("id") if isinstance(raw, dict) else None
    if isinstance(method, str) and rpc.is_id(msg_id):
        effects.append(PostToView(rpc.error(msg_id, rpc.REFUSED, reason)))
    return effects
