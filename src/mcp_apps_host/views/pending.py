"""The view's requests the host has not answered yet, and those waiting for the person."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import jsonrpc as rpc
from .effects import CancelProxied, Decided, Effect, PostToView
from .jsonrpc import Request, RequestId


@dataclass
class _Consent:
    request: Request
    effects_on_allow: list[Effect]
    reply_on_allow: dict[str, Any] | None  # None: the allowed request is answered later (a proxied call)


class PendingRequests:
    def __init__(self) -> None:
        self._ids: set[RequestId] = set()
        self._consents: dict[RequestId, _Consent] = {}

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, request_id: RequestId) -> None:
        self._ids.add(request_id)

    def add_question(self, req: Request, on_allow: list[Effect], answer_later: bool) -> None:
        """A request put to the person: ``on_allow`` happens (and an empty result, unless
        ``answer_later``) when they allow it."""
        self._ids.add(req.id)
        self._consents[req.id] = _Consent(req, on_allow, None if answer_later else {})

    def complete(self, request_id: RequestId) -> bool:
        """The host answered it; False if it was not in flight (already answered or dropped)."""
        if request_id not in self._ids:
            return False
        self._ids.discard(request_id)
        return True

    def answer(self, token: RequestId, allowed: bool) -> list[Effect] | None:
        """The person's answer; None when nobody asked (or the view is gone)."""
        pending = self._consents.pop(token, None)
        if pending is None:
            return None
        self._ids.discard(token)
        method = pending.request.method
        if not allowed:
            return [Decided(method, token, "declined", "declined by the person"),
                    PostToView(rpc.error(token, rpc.REFUSED, f"{method}: declined by the person"))]
        effects: list[Effect] = [Decided(method, token, "consented", "allowed by the person"),
                                 *pending.effects_on_allow]
        if pending.reply_on_allow is None:
            self._ids.add(token)  # still in flight: answered when the proxied request completes
        else:
            effects.append(PostToView(rpc.result(token, pending.reply_on_allow)))
        return effects

    def drop(self) -> list[Effect]:
        """Forget everything: the host cancels what it was running for the view."""
        effects: list[Effect] = [CancelProxied(rid) for rid in self._ids if rid not in self._consents]
        self._ids.clear()
        self._consents.clear()
        return effects
