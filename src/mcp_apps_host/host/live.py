"""A view that is mounted in a tab now, and what the tab's conversation hears about its views."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..values.apptools import AppTool
from ..views import effects as fx
from ..views.session import ViewSession
from .core import MountedView


@dataclass
class LiveView:
    mounted: MountedView
    session: ViewSession
    call_id: int | None
    instance: str | None = None  # the conversation's id for this view, kept with its state
    trust: str = "unchecked"  # what the template check said when it was mounted
    pinned: bool = False  # in the side panel: live across turns and conversations until unpinned
    conversation: str | None = None  # the conversation it was mounted in
    in_panel: bool = False  # mounted straight into the side panel: it has no call card on the page
    tasks: dict[Any, asyncio.Task[None]] = field(default_factory=dict)  # proxied requests by view request id
    timers: list[asyncio.TimerHandle] = field(default_factory=list)
    app_calls: dict[Any, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)  # calls of its own tools

    @property
    def handle(self) -> str:
        return self.mounted.handle

    @property
    def server(self) -> str:
        return self.session.spec.server

    @property
    def label(self) -> str:
        """How the page and the model tell this view apart from the server's other views."""
        return f"view{self.call_id}" if self.call_id is not None else f"view-{self.handle[:6]}"


class ViewListener(Protocol):
    """What the conversation wants to hear about its views."""

    def chat_message(self, view: LiveView, message: fx.PostChatMessage) -> None: ...

    def model_context(self, view: LiveView, update: fx.ModelContextUpdated) -> None: ...

    def app_tools_changed(self, view: LiveView, tools: tuple[AppTool, ...]) -> None: ...

    def resized(self, view: LiveView, height: int) -> None: ...

    def view_gone(self, view: LiveView) -> None: ...
