"""How a view's document gets to it: the template sent to the sandbox proxy (with the mount, or on
the proxy's ready), and a view booted ahead of its call, held at `ui/initialize` until a call takes it.

Part of `ViewSession`.
"""

from __future__ import annotations

from collections.abc import Callable

from ..settings import Limits
from ..values import protocol as M
from . import jsonrpc as rpc
from .context import ViewSpec
from .effects import Effect, PostToView, Refused, StartInitTimer, ViewState
from .jsonrpc import Request
from .states import Step, advance


class Boot:
    spec: ViewSpec
    limits: Limits
    state: ViewState
    held_back: bool  # booted ahead: ui/initialize waits for a call (`take`)
    _held_init: Request | None
    _resource_ahead: bool  # sent with the mount (`send_resource_ahead`)
    _proxy_seen: bool
    _answer_initialize: Callable[[Request], list[Effect]]  # the session's own answer

    def take(self, spec: ViewSpec) -> list[Effect]:
        """A call takes this view booted ahead: it becomes that call's view, and a held ui/initialize
        is answered now (with the call's toolInfo)."""
        self.spec = spec
        self.held_back = False
        req, self._held_init = self._held_init, None
        return self._answer_initialize(req) if req is not None and self.state == ViewState.RESOURCE_SENT else []

    def send_resource_ahead(self) -> list[Effect]:
        """The resource now, with the mount, rather than on the proxy's ready: the page holds it until
        that proxy says it is ready, so the template travels while the proxy loads."""
        if self.state != ViewState.CREATED:
            return []
        self._resource_ahead = True
        return self._resource()

    def _resource(self) -> list[Effect]:
        self.state = advance(self.state, Step.RESOURCE_SENT)
        return [
            PostToView(rpc.notification(M.SANDBOX_RESOURCE_READY, {
                "html": self.spec.html,
                "sandbox": "allow-scripts allow-same-origin allow-forms",
                "allow": self.spec.allow,
                "csp": self.spec.csp,
                "permissions": self.spec.permissions,
            })),
            StartInitTimer(self.limits.view_init_timeout),
        ]

    def proxy_ready(self) -> list[Effect]:
        """`ui/notifications/sandbox-proxy-ready`: the template now, unless it went with the mount."""
        if self._resource_ahead and not self._proxy_seen:
            # The page held the resource for this proxy and gave it on this very message.
            self._proxy_seen = True
            return []
        if self.state != ViewState.CREATED:
            return [Refused(M.SANDBOX_PROXY_READY, "the sandbox proxy was ready already")]
        return self._resource()
