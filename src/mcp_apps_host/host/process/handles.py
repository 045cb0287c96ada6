"""View handles the sandbox origin can trust without the host's cookie: signed, bound to a person, expiring.

The proxy page and the CSP report endpoint are on the sandbox origin, which never sees the
host page's session. What they need — which view, whose, on which origin, under which
CSP — travels in the URL, signed, so any worker can serve it and nobody can forge it.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from itsdangerous import BadData, URLSafeTimedSerializer

from ...values.identity import Identity


@dataclass(frozen=True)
class ViewPass:
    handle: str
    identity: Identity
    origin: str  # the sandbox origin the view's proxy is served on, and only there
    csp_header: str


class HandleSigner:
    def __init__(self, secret: str | None, max_age: int) -> None:
        self._serializer = URLSafeTimedSerializer(secret or secrets.token_urlsafe(32), salt="mcp-apps-host view")
        self.max_age = max_age

    def sign(self, view: ViewPass) -> str:
        return self._serializer.dumps([view.handle, view.identity.tenant, view.identity.user, view.origin,
                                       view.csp_header])

    def verify(self, token: str) -> ViewPass | None:
        """The pass, or None when the token is forged, malformed or older than ``max_age`` seconds."""
        try:
            handle, tenant, user, origin, csp = self._serializer.loads(token, max_age=self.max_age)
            return ViewPass(str(handle), Identity(str(user), str(tenant)), str(origin), str(csp))
        except (BadData, ValueError, TypeError):
            return None
