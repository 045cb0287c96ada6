"""The questions a tab has put to the person, and where each answer goes.

A question belongs to a view (its consent requests) or to nobody (the model's tool calls).
When a view goes away, its questions are withdrawn from the page.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...policy.consent import ConsentPolicy
from ...telemetry import metrics
from ...values.tools import ToolEntry
from .frames import Consent, ConsentDismiss
from .page import Page

Answer = Callable[[bool, bool], None]  # (allow, remember)


@dataclass
class _Question:
    kind: str
    view: str | None
    on_answer: Answer
    answer_when_withdrawn: bool = False  # someone awaits the answer: a withdrawn question is a "no"


class Consents:
    def __init__(self, page: Page, policy: ConsentPolicy) -> None:
        self._page = page
        self._policy = policy
        self._open: dict[int, _Question] = {}
        self._ids = itertools.count()

    def ask(self, frame: dict[str, Any], view: str | None, on_answer: Answer,
            answer_when_withdrawn: bool = False) -> int:
        """Show a consent dialog (the `consent` frame's fields but its id); ``on_answer`` gets the reply."""
        consent_id = next(self._ids)
        kind = str(frame.get("kind", "other"))
        self._open[consent_id] = _Question(kind, view, on_answer, answer_when_withdrawn)
        metrics.consent(kind, "asked")
        self._page.send(Consent(id=consent_id, view=view, **frame))
        return consent_id

    async def ask_app_tool_call(self, view: str, server: str, label: str, tool: str,
                                arguments: dict[str, Any], app: str = "") -> bool:
        """The model wants to call a tool a view offers of its own: wait for the person (a closed view is a no)."""
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        def answered(allow: bool, _remember: bool) -> None:
            if not answer.done():
                answer.set_result(allow)

        said = f", which says it is {app}" if app else ""
        consent_id = self.ask({
            "kind": "app-tool-call", "server": server,
            "title": f"The model wants to call {tool}, a tool of the {server} view {label}",
            "detail": f"{server} · {label} · {tool} (offered by the view itself{said})\n"
                      f"{json.dumps(arguments, ensure_ascii=False, indent=2)}",
            "subject": tool, "can_remember": False}, view, answered, answer_when_withdrawn=True)
        try:
            return await answer
        finally:
            self._open.pop(consent_id, None)

    async def ask_model_tool_call(self, entry: ToolEntry, arguments: dict[str, Any]) -> bool:
        """The model wants to call a tool the policy asks about: wait for the person's answer."""
        answer: asyncio.Future[tuple[bool, bool]] = asyncio.get_running_loop().create_future()

        def answered(allow: bool, remember: bool) -> None:
            if not answer.done():
                answer.set_result((allow, remember))

        can_remember = self._policy.can_remember(entry.server, entry.name)
        consent_id = self.ask({
            "kind": "tool-call", "server": entry.server,
            "title": f"The model wants to call {entry.server} · {entry.name}",
            "detail": f"{entry.server} · {entry.name}\n{json.dumps(arguments, ensure_ascii=False, indent=2)}",
            "subject": entry.name, "can_remember": can_remember}, None, answered)
        try:
            allow, remember = await answer
        finally:
            self._open.pop(consent_id, None)
        if allow and remember and can_remember:
            self._policy.remember_allow(entry.server, entry.name)
        return allow

    def reply(self, consent_id: int, allow: bool, remember: bool) -> None:
        question = self._open.pop(consent_id, None)
        if question is not None:
            metrics.consent(question.kind, "allowed" if allow else "denied")
            question.on_answer(allow, remember)

    def withdraw(self, view: str) -> None:
        """The view went away: nobody is waiting for those answers any more."""
        for consent_id, question in list(self._open.items()):
            if question.view == view:
                del self._open[consent_id]
                self._page.send(ConsentDismiss(id=consent_id))
                if question.answer_when_withdrawn:
                    question.on_answer(False, False)

    def clear_views(self) -> None:
        """Every view is gone at once (the page closed or another conversation opened)."""
        gone = [q for q in self._open.values() if q.view is not None]
        self._open = {i: q for i, q in self._open.items() if q.view is None}
        for question in gone:
            if question.answer_when_withdrawn:
                question.on_answer(False, False)
