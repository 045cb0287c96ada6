"""The tab's side of the audit trail: events stamped with the tab's conversation, queued in order."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ...store.audit import AuditEvent, AuditLog
from ...values.decisions import Decision, Direction
from ...values.identity import Identity

log = logging.getLogger("mcp_apps_host.audit")


class Auditor:
    def __init__(self, audit: AuditLog | None, identity: Identity, conversation: Callable[[], str | None],
                 on_view: Callable[[str], None] | None = None) -> None:
        self._audit = audit
        self._identity = identity
        self._conversation = conversation
        self._on_view = on_view  # told of each event that names a view (the inspector)

    @property
    def conversation(self) -> str | None:
        return self._conversation()

    def __call__(self, direction: Direction, method: str | None, *, server: str | None = None,
                 view: str | None = None, msg_id: Any = None, decision: Decision | None = None,
                 reason: str | None = None,
                 payload: Any = None) -> None:
        """Record one event; never raises (the audit trail must not break the protocol)."""
        if self._audit is None:
            return
        try:
            self._audit.record_nowait(AuditEvent(
                direction=direction, method=method, server=server, view=view,
                conversation=self._conversation(), msg_id=msg_id, decision=decision,
                reason=reason, payload=payload, tenant=self._identity.tenant, user_id=self._identity.user))
        except Exception:  # the audit trail must not break the protocol
            log.exception("could not queue an audit event")
            return
        if view is not None and self._on_view is not None:
            self._on_view(view)
