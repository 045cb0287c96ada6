"""What the chat box understands without a model: `/call`, `/servers`, `/help`; the rest goes to the model."""

from __future__ import annotations

import json

from .services import TabServices
from .turns import Turns

HELP = (
    "Commands: /call SERVER TOOL [JSON arguments] — call a tool, e.g. /call chart show-chart {\"metric\": \"users\"}; "
    "/servers — list servers and tools; /help — this text."
)


class Commands:
    def __init__(self, tab: TabServices, turns: Turns | None) -> None:
        self.tab = tab
        self.turns = turns

    def chat(self, text: str) -> None:
        text = text.strip()
        page = self.tab.page
        if not text:
            return
        if text in ("/help", "/?"):
            page.notice(HELP)
        elif text == "/servers":
            page.notice(self._servers() or "No servers are configured.")
        elif not text.startswith("/"):
            if self.turns is None:
                page.notice("There is no model in this console (start it with --model): call tools with "
                            "/call SERVER TOOL [JSON]. " + HELP)
            else:
                self.turns.say(text)
        elif not text.startswith("/call"):
            page.notice(f"Unknown command {text.split()[0]!r}. " + HELP, "error")
        else:
            self._call(text)

    def _servers(self) -> str:
        lines = []
        for s in self.tab.host.servers.snapshot():
            tools = ", ".join(t["name"] for t in s["tools"]) or "no tools"
            lines.append(f"{s['name']} ({s['status']}): {tools}")
        return "\n".join(lines)

    def _call(self, text: str) -> None:
        parts = text.split(maxsplit=3)
        if parts[0] != "/call" or len(parts) < 3:
            self.tab.page.notice("Usage: /call SERVER TOOL [JSON arguments]", "error")
            return
        raw_args = parts[3] if len(parts) > 3 else "{}"
        try:
            arguments = json.loads(raw_args)
        except json.JSONDecodeError as exc:
            self.tab.page.notice(f"/call {parts[1]} {parts[2]}: the arguments are not valid JSON "
                                 f"({exc.msg} at column {exc.colno})", "error")
            return
        self.tab.calls.from_page(parts[1], parts[2], arguments)
