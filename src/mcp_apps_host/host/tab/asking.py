"""What servers ask the person, in one tab: elicitation dialogs and sampling consent.

A dialog is outside every view and attributed to the server. A form is built from the
server's schema, and what the person enters is checked against it here before the
server sees it; a link (URL mode) is shown with the same facts as a view's link. Each
question and its answer go to the audit trail. An unanswered question is answered
"cancel" after `elicitation_timeout`, or when the tab closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ...errors import CallFailed
from ...settings import Limits
from ...values import protocol as M
from ...values.elicitation import content_problem, schema_problem
from ...values.links import describe_link
from ...views.jsonrpc import INVALID_PARAMS
from ..process.serverasks import CANCEL
from . import frames as f
from .audit import Auditor
from .consents import Consents
from .page import Page


@dataclass
class _Open:
    server: str
    schema: dict[str, Any] | None  # None: URL mode
    href: str | None
    answer: asyncio.Future[dict[str, Any]]


class TabAsks:
    def __init__(self, page: Page, consents: Consents, audit: Auditor, limits: Limits,
                 who: tuple[str, str] = ("default", "local")) -> None:
        self.who = who  # (tenant, user): a server's question goes only to the person it is about
        self.page = page
        self.consents = consents
        self.audit = audit
        self.limits = limits
        self.last_active = time.monotonic()
        self.calls: dict[str, float] = {}  # server -> when this tab's newest call to it started
        self._running: dict[str, int] = {}
        self._open: dict[int, _Open] = {}
        self._sampling: set[asyncio.Future[bool]] = set()
        self._ids = itertools.count()

    @contextlib.contextmanager
    def calling(self, server: str) -> Iterator[None]:
        """A call of this tab's is running on ``server``: what the server asks meanwhile comes here."""
        self._running[server] = self._running.get(server, 0) + 1
        self.calls[server] = time.monotonic()
        try:
            yield
        finally:
            self._running[server] -= 1
            if not self._running[server]:
                del self._running[server], self.calls[server]

    # ---- elicitation -----------------------------------------------------------------------

    async def elicit(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        """Ask the person; the `ElicitResult`. Raises CallFailed for a request that cannot be shown."""
        frame, item = self._question(server, params)
        self.audit("server->host", M.ELICITATION_CREATE, server=server, msg_id=frame.id, decision="asked",
                   reason="shown to the person", payload=params)
        try:
            answer = await self._ask(frame, item)
        except TimeoutError:
            answer = CANCEL
            self.audit("host->server", M.ELICITATION_CREATE, server=server, msg_id=frame.id, decision="declined",
                       reason=f"no answer within elicitation_timeout ({self.limits.elicitation_timeout:g} s)")
        else:
            self.audit("host->server", M.ELICITATION_CREATE, server=server, msg_id=frame.id,
                       decision="consented" if answer["action"] == "accept" else "declined",
                       reason=f"the person chose {answer['action']}", payload=answer)
        return answer

    async def confirm(self, server: str, message: str) -> bool:
        """The host's own yes-or-no question about ``server``, in the same dialog (not a message of the
        protocol, so not audited as one); False when declined or not answered in `elicitation_timeout`."""
        frame, item = self._question(server, {"message": message, "requestedSchema": {"type": "object",
                                                                                       "properties": {}}})
        try:
            answer = await self._ask(frame, item)
        except TimeoutError:
            return False
        return bool(answer["action"] == "accept")

    async def _ask(self, frame: f.Elicit, item: _Open) -> dict[str, Any]:
        self._open[frame.id] = item
        self.page.send(frame)
        try:
            async with asyncio.timeout(self.limits.elicitation_timeout):
                return await item.answer
        finally:
            self._open.pop(frame.id, None)
            self.page.send(f.ElicitDismiss(id=frame.id))

    def _question(self, server: str, params: dict[str, Any]) -> tuple[f.Elicit, _Open]:
        message = str(params.get("message") or "")[:4000]
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        qid = next(self._ids)
        if params.get("mode") == "url":
            url = params.get("url")
            try:
                if not isinstance(url, str) or not url.lower().startswith(("http://", "https://")):
                    raise ValueError("only http and https links can be opened")
                link = describe_link(url)
            except ValueError as exc:
                raise CallFailed(f"{M.ELICITATION_CREATE}: the url cannot be opened: {exc}", INVALID_PARAMS) from exc
            href = link.href or url
            return (f.Elicit(id=qid, server=server, mode="url", message=message, display=link.display, href=href,
                             differs=link.differs, host_ascii=link.host_ascii, host_unicode=link.host_unicode,
                             warnings=list(link.warnings)), _Open(server, None, href, future))
        schema = params.get("requestedSchema")
        problem = schema_problem(schema, self.limits.max_elicitation_fields)
        if problem is not None:
            raise CallFailed(f"{M.ELICITATION_CREATE}: {problem}", INVALID_PARAMS)
        assert isinstance(schema, dict)
        return f.Elicit(id=qid, server=server, mode="form", message=message, requested_schema=schema), \
            _Open(server, schema, None, future)

    def reply(self, qid: int, action: str, content: dict[str, Any] | None) -> None:
        """The person's answer (`elicit-reply`)."""
        item = self._open.get(qid)
        if item is None or item.answer.done():
            return
        if action != "accept":
            item.answer.set_result({"action": action})
            return
        if item.schema is None:
            assert item.href is not None
            self.page.send(f.OpenLink(url=item.href))
            item.answer.set_result({"action": "accept"})
            return
        problem = content_problem(item.schema, content or {})
        if problem is not None:
            self.page.send(f.ElicitInvalid(id=qid, error=problem))
            return
        item.answer.set_result({"action": "accept", "content": content or {}})

    # ---- sampling ------------------------------------------------------------------------------

    async def ask_sampling(self, server: str, detail: str) -> bool:
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        def answered(allow: bool, _remember: bool) -> None:
            if not answer.done():
                answer.set_result(allow)

        self.consents.ask({"kind": "sampling", "server": server, "title": f"{server} wants to ask the model",
                           "detail": detail, "subject": M.SAMPLING_CREATE_MESSAGE, "can_remember": False},
                          None, answered)
        self._sampling.add(answer)
        try:
            async with asyncio.timeout(self.limits.elicitation_timeout):
                return await answer
        except TimeoutError:
            return False
        finally:
            self._sampling.discard(answer)

    def close(self) -> None:
        """The tab is going: nobody will answer."""
        for item in self._open.values():
            if not item.answer.done():
                item.answer.set_result(CANCEL)
        for waiting in self._sampling:
            if not waiting.done():
                waiting.set_result(False)
