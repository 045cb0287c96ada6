"""The sign-ins under way in this process, and the authorization server's redirect coming back.

A person's connection that needs them to sign in parks its OAuth flow here under the flow's
`state` (a row in the database too, so the redirect may land on any worker). The callback
route hands the redirect to `arrived`, which finds whose it is and tells every worker over the
bus; the one holding the flow (and its PKCE verifier) finishes it. Every step is in the audit
trail: who, which server, when, what came of it — never a code or a token.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from ...servers.oauth import Redirect, SignIn
from ...store.audit import AuditLog
from ...store.audit_events import AuditEvent
from ...store.credentials import ServerCredentials
from ...values.decisions import Decision
from ...values.identity import Identity
from .bus import Bus

log = logging.getLogger("mcp_apps_host.signin")

CHANNEL = "signin"
SIGNIN_METHOD = "oauth/sign-in"
SIGNOUT_METHOD = "oauth/sign-out"


class SignIns:
    def __init__(self, credentials: ServerCredentials, bus: Bus, audit: AuditLog | None) -> None:
        self.credentials = credentials
        self._bus = bus
        self._audit = audit
        self._waiting: dict[str, SignIn] = {}

    def start(self) -> None:
        self._bus.subscribe(CHANNEL, self._heard)

    # ---- the SDK's side (servers/oauth.SignInBoard) ---------------------------------------------

    async def begin(self, signin: SignIn) -> None:
        assert signin.state is not None
        self._waiting[signin.state] = signin
        await asyncio.to_thread(self.credentials.begin_flow, signin.state, signin.identity, signin.server)
        self.audit(signin.identity, signin.server, "asked")

    def end(self, signin: SignIn) -> None:
        if signin.state is not None and self._waiting.get(signin.state) is signin:
            del self._waiting[signin.state]

    # ---- the redirect ----------------------------------------------------------------------------

    async def arrived(self, params: Mapping[str, str]) -> str:
        """The redirect's query (code, state, iss, or error): handed to the worker whose flow it is.
        Returns the server's name; ValueError names what was wrong (never echoing the code)."""
        state = params.get("state", "")
        whose = await asyncio.to_thread(self.credentials.take_flow, state) if state else None
        if whose is None:
            raise ValueError("this sign-in is unknown or has expired: start it again from the host page")
        (tenant, user), server = whose
        error = params.get("error")
        if error is not None:
            error = f"{error}: {params['error_description']}" if params.get("error_description") else error
        elif not params.get("code"):
            error = "the authorization server sent no code"
        self.audit(Identity(user, tenant), server, "consented" if error is None else "declined", error)
        self._bus.publish(CHANNEL, {"state": state, "code": params.get("code"), "iss": params.get("iss"),
                                    "error": error})
        return server

    def _heard(self, message: dict[str, Any]) -> None:
        signin = self._waiting.get(str(message.get("state")))
        if signin is None:
            return  # another worker's
        signin.answer(Redirect(state=str(message["state"]), code=_text(message.get("code")),
                               iss=_text(message.get("iss")), error=_text(message.get("error"))))

    def audit(self, identity: Identity, server: str, decision: Decision, reason: str | None = None,
              method: str = SIGNIN_METHOD) -> None:
        if self._audit is None:
            return
        self._audit.record_nowait(AuditEvent(direction="host->server", method=method, server=server,
                                             decision=decision, reason=reason, tenant=identity.tenant,
                                             user_id=identity.user))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
