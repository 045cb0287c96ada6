"""The tab's page as the host sees it: where frames go."""

from __future__ import annotations

from collections.abc import Callable

from .frames import HostFrame, Notice


class Page:
    def __init__(self, send: Callable[[HostFrame], None]) -> None:
        self.send = send

    def notice(self, text: str, level: str = "info") -> None:
        self.send(Notice(level="error" if level == "error" else "info", text=text))
