"""What the chat box understands without a model: `/call`, `/servers`, `/help`; the rest goes to the model."""

from __future__ import annotations

import json
from collections.abc import Awaitable
from pathlib import Path

from ...config.roots import root_uri
from ...errors import ConfigError, ServerUnavailable
from ...values.protocol import ROOTS_LIST_CHANGED
from .services import TabServices
from .turns import Turns

HELP = (
    "Commands: /call SERVER TOOL [JSON arguments] — call a tool, e.g. /call chart show-chart {\"metric\": \"users\"}; "
    "/servers — list servers and tools; /roots [SERVER add|remove PATH] — the directories servers may work in; "
    "/help — this text."
)


class Commands:
    def __init__(self, tab: TabServices, turns: Turns | None) -> None:
        self.tab = tab
        self.turns = turns

    def chat(self, text: str) -> Awaitable[None] | None:
        text = text.strip()
        page = self.tab.page
        if not text:
            return None
        if text == "/roots" or text.startswith("/roots "):
            return self._roots(text.split()[1:])
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
        return None

    def _servers(self) -> str:
        lines = []
        for s in self.tab.host.servers.snapshot():
            tools = ", ".join(t["name"] for t in s["tools"]) or "no tools"
            version = f", MCP {s['protocolVersion']}" if s.get("protocolVersion") else ""
            lines.append(f"{s['name']} ({s['status']}{version}): {tools}")
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

    async def _roots(self, words: list[str]) -> None:
        """`/roots` lists every server's roots; `/roots SERVER add|remove PATH` changes one server's."""
        page, servers = self.tab.page, self.tab.host.servers
        if not words:
            lines = [f"{c.name}: {', '.join(c.roots) or 'no roots'}" for c in servers.connections.values()]
            page.notice("\n".join(lines) or "No servers are configured.")
            return
        if len(words) != 3 or words[1] not in ("add", "remove"):
            page.notice("Usage: /roots [SERVER add|remove PATH]", "error")
            return
        name, action, target = words
        try:
            conn = servers.get(name)
            if action == "add":
                uri = root_uri(target, Path.cwd(), f"/roots {name} add")
            else:  # a root may be removed after its folder is gone
                uri = target if "://" in target else Path(target).expanduser().resolve().as_uri()
        except (ServerUnavailable, ConfigError) as exc:
            page.notice(str(exc), "error")
            return
        kept = [r for r in conn.roots if r != uri]
        roots = tuple(dict.fromkeys([*conn.roots, uri])) if action == "add" else tuple(kept)
        if roots == conn.roots:
            page.notice(f"{name}: {uri} is {'already' if action == 'add' else 'not'} one of its roots")
            return
        await servers.set_roots(name, roots)
        self.tab.audit("host->server", ROOTS_LIST_CHANGED, server=name, reason=f"{action} {uri} by the person",
                       payload={"roots": list(roots)})
        page.notice(f"{name}: roots are now {', '.join(roots) or 'none'}")
