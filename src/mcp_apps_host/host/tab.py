"""One browser tab: its conversation, its tool calls and its views.

The page relays every view message here; `ViewSession` decides, `ViewHost`
carries the effects out, and this module runs the conversation: commands,
tool calls, what is kept on record and shown again after a reload or restart.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

from mcp.shared.exceptions import MCPError

from ..chat.markdown import render_markdown
from ..servers.catalog import ToolEntry, tool_entry
from ..servers.connection import ProgressFn, ServerUnavailable
from ..servers.templates import Template, TemplateError
from ..store.conversations import Conversation, Item
from ..views import session as vs
from ..views.jsonrpc import INTERNAL_ERROR
from ..views.theme import host_styles, parse_theme
from .core import Host
from .journal import Journal
from .turns import Turns
from .viewhost import CallFailed, LiveView, ViewHost, ViewListener, template_from_store, template_meta

log = logging.getLogger("mcp_apps_host.tab")

HELP = (
    "Commands: /call SERVER TOOL [JSON arguments] — call a tool, e.g. /call chart show-chart {\"metric\": \"users\"}; "
    "/servers — list servers and tools; /help — this text."
)


class TabSession(ViewListener):
    def __init__(self, host: Host, outbox: asyncio.Queue[dict[str, Any]]) -> None:
        self.host = host
        self._outbox = outbox
        self.env = vs.HostEnvironment(styles=host_styles())
        self.viewhost = ViewHost(host, self.env, self.emit, self._run_view_call, self,
                                 lambda: self.conversation.id if self.conversation else None)
        self.turns = Turns(self, host.agent) if host.agent is not None else None
        self.journal = Journal(host.store.conversations) if host.store else None
        self.conversation: Conversation | None = None
        self._calls: dict[int, asyncio.Task[None]] = {}
        self._next_call = 0
        self._held: dict[int, asyncio.Future[bool]] = {}  # views waiting for the person to accept a changed template
        self._unsubscribe = host.servers.subscribe(self._servers_changed)

    # ---- outgoing -------------------------------------------------------------------------

    def emit(self, message: dict[str, Any]) -> None:
        self._outbox.put_nowait(message)

    def _servers_changed(self) -> None:
        self.emit({"type": "servers", "servers": self.host.servers.snapshot()})

    def notice(self, text: str, level: str = "info", keep: bool = False) -> None:
        self.emit({"type": "notice", "level": level, "text": text})
        if keep:
            self.keep_display("notice", {"level": level, "text": text})

    def keep_display(self, kind: str, data: dict[str, Any]) -> int | None:
        if self.journal is None or self.conversation is None:
            return None
        return self.journal.append(self.conversation.id, kind, data)

    def _rekeep(self, key: int | None, data: dict[str, Any]) -> None:
        if self.journal is not None and key is not None:
            self.journal.update(key, data)

    # ---- incoming from the page --------------------------------------------------------------

    async def handle(self, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        try:
            if kind == "hello":
                await self._hello(msg)
            elif kind == "chat":
                self._chat(msg.get("text"))
            elif kind == "call":
                self._call_from_page(msg.get("server"), msg.get("tool"), msg.get("arguments", {}))
            elif kind == "stop":
                if self.turns is not None:
                    self.turns.stop()
            elif kind == "cancel":
                self._cancel_call(msg.get("callId"))
            elif kind == "view-message":
                self.viewhost.message(msg.get("view"), msg.get("message"))
            elif kind == "view-display-mode":
                self.viewhost.display_mode(msg.get("view"), msg.get("mode"))
            elif kind == "view-close":
                self.viewhost.close(msg.get("view"), "closed by the person")
            elif kind == "theme":
                self._set_theme(msg.get("theme"))
            elif kind == "consent-reply":
                self.viewhost.consent_reply(msg.get("id"), msg.get("allow") is True, msg.get("remember") is True)
            elif kind == "trust-reply":
                held = self._held.pop(msg.get("callId"), None) if isinstance(msg.get("callId"), int) else None
                if held is not None and not held.done():
                    held.set_result(msg.get("accept") is True)
            elif kind in ("conversation-new", "conversation-open", "conversation-rename", "conversation-delete"):
                await self._conversation_command(kind, msg)
            else:
                log.info("page sent an unknown message type %r", kind)
        except Exception:  # noqa: BLE001 - one bad frame must not end the tab
            log.exception("could not handle a %r message from the page", kind)
            self.notice(f"The host could not handle that ({kind}); see the host's log.", "error")

    async def _hello(self, msg: dict[str, Any]) -> None:
        env = self.env
        env.theme = parse_theme(msg.get("theme"))
        for key, attr in (("locale", "locale"), ("timeZone", "time_zone"), ("userAgent", "user_agent")):
            value = msg.get(key)
            if isinstance(value, str) and 0 < len(value) <= 200:
                setattr(env, attr, value)
        env.touch = msg.get("touch") is True
        env.hover = msg.get("hover") is not False
        width = msg.get("viewportWidth")
        if isinstance(width, int) and not isinstance(width, bool) and width > 0:
            env.max_width = min(width, self.host.limits.max_view_width)
        self._send_theme()
        self._servers_changed()
        wanted = msg.get("conversation")
        await self._open_conversation(wanted if isinstance(wanted, str) else None)

    def _set_theme(self, theme: Any) -> None:
        self.env.theme = parse_theme(theme)
        self._send_theme()
        self.viewhost.context_changed(theme=self.env.theme, styles=self.env.styles)

    def _send_theme(self) -> None:
        self.emit({"type": "theme", "theme": self.env.theme, "variables": self.env.styles.get("variables", {})})

    def _chat(self, text: Any) -> None:
        if not isinstance(text, str) or not text.strip():
            return
        text = text.strip()
        if text in ("/help", "/?"):
            self.notice(HELP)
            return
        if text == "/servers":
            lines = []
            for s in self.host.servers.snapshot():
                tools = ", ".join(t["name"] for t in s["tools"]) or "no tools"
                lines.append(f"{s['name']} ({s['status']}): {tools}")
            self.notice("\n".join(lines) or "No servers are configured.")
            return
        if not text.startswith("/"):
            if self.turns is None:
                self.notice("There is no model in this console (start it with --model): call tools with "
                            "/call SERVER TOOL [JSON]. " + HELP)
            else:
                self.turns.say(text)
            return
        if not text.startswith("/call"):
            self.notice(f"Unknown command {text.split()[0]!r}. " + HELP, "error")
            return
        parts = text.split(maxsplit=3)
        if parts[0] != "/call" or len(parts) < 3:
            self.notice("Usage: /call SERVER TOOL [JSON arguments]", "error")
            return
        raw_args = parts[3] if len(parts) > 3 else "{}"
        try:
            arguments = json.loads(raw_args)
        except json.JSONDecodeError as exc:
            self.notice(f"/call {parts[1]} {parts[2]}: the arguments are not valid JSON ({exc.msg} at column {exc.colno})", "error")
            return
        self._call_from_page(parts[1], parts[2], arguments)

    # ---- conversations ---------------------------------------------------------------------------

    async def _conversation_command(self, kind: str, msg: dict[str, Any]) -> None:
        if self.journal is None:
            return
        conv_id = msg.get("id")
        repo = self.journal.conversations
        if kind == "conversation-new":
            await self._open_conversation(None, fresh=True)
        elif kind == "conversation-open" and isinstance(conv_id, str):
            await self._open_conversation(conv_id)
        elif kind == "conversation-rename" and isinstance(conv_id, str) and isinstance(msg.get("title"), str):
            try:
                await self.journal.call(repo.rename, conv_id, msg["title"])
            except ValueError as exc:
                self.notice(str(exc), "error")
            if self.conversation and self.conversation.id == conv_id:
                self.conversation = await self.journal.call(repo.get, conv_id)
            await self._send_conversation_list()
        elif kind == "conversation-delete" and isinstance(conv_id, str):
            await self.journal.call(repo.delete, conv_id)
            if self.conversation and self.conversation.id == conv_id:
                await self._open_conversation(None)
            else:
                await self._send_conversation_list()

    async def _send_conversation_list(self) -> None:
        if self.journal is None:
            return
        items = await self.journal.call(self.journal.conversations.list)
        self.emit({"type": "conversations", "current": self.conversation.id if self.conversation else None,
                   "items": [{"id": c.id, "title": c.title, "updated": c.updated} for c in items]})

    async def _open_conversation(self, conv_id: str | None, fresh: bool = False) -> None:
        if self.journal is None:
            return
        repo = self.journal.conversations
        conv = None if fresh or conv_id is None else await self.journal.call(repo.get, conv_id)
        if conv is None and not fresh:
            recent = await self.journal.call(repo.list, 1)
            conv = recent[0] if recent else None
        if conv is None:
            conv = await self.journal.call(repo.create)
        for task in list(self._calls.values()):
            task.cancel()
        self.viewhost.drop_all("another conversation was opened")
        self.conversation = conv
        self.emit({"type": "conversation-reset", "id": conv.id, "title": conv.title})
        await self._send_conversation_list()
        items = await self.journal.call(repo.items, conv.id)
        if self.turns is not None:
            self.turns.stop()
            self.turns.load([i.data for i in items if i.kind == "history"])
        for item in items:
            await self._replay(item)

    async def _replay(self, item: Item) -> None:
        data = item.data
        if item.kind == "user":
            self.emit({"type": "user-message", "text": data.get("text", "")})
        elif item.kind == "assistant":
            text = str(data.get("text", ""))
            self.emit({"type": "assistant-done", "turn": None, "text": text, "html": render_markdown(text)})
        elif item.kind == "notice":
            self.emit({"type": "notice", "level": data.get("level", "info"), "text": data.get("text", "")})
        elif item.kind == "view-message":
            self.emit({"type": "chat-message", **data, "view": None})
        elif item.kind == "tool-call":
            await self._replay_call(data)

    async def _replay_call(self, data: dict[str, Any]) -> None:
        call_id = self.new_call_id()
        status = data.get("status")
        self.emit({"type": "call-started", "callId": call_id, "server": data.get("server"), "tool": data.get("tool"),
                   "arguments": data.get("arguments", {}), "source": data.get("source", "person")})
        if status in ("ok", "tool-error"):
            self.emit({"type": "call-finished", "callId": call_id, "result": data.get("result"),
                       "isError": status == "tool-error", "durationMs": data.get("durationMs", 0)})
        else:
            interrupted = status == "running"
            self.emit({"type": "call-failed", "callId": call_id, "durationMs": data.get("durationMs", 0),
                       "error": "interrupted: the host stopped before the call finished" if interrupted
                       else data.get("error") or str(status), "cancelled": status == "cancelled" or interrupted})
        view = data.get("view")
        if not isinstance(view, dict) or self.journal is None:
            return
        row = await self.journal.call(self.journal.conversations.load_template, view.get("sha256"))
        entry = tool_entry(str(data.get("server")), data.get("definition") or {"name": data.get("tool")})
        if row is None:
            self.viewhost.mount_failed(call_id, entry.server, entry.name, "the stored template is missing")
            return
        live = self.viewhost.mount(call_id, entry, template_from_store(row))
        self._feed_view(live, data.get("arguments", {}), data)

    def _feed_view(self, live: LiveView, arguments: dict[str, Any], data: dict[str, Any]) -> None:
        session = live.session
        self.viewhost.apply(live, session.tool_input(arguments))
        status = data.get("status")
        if status in ("ok", "tool-error"):
            self.viewhost.apply(live, session.tool_result(data.get("result") or {"content": []}))
        elif status == "failed":
            self.viewhost.apply(live, session.tool_result(
                {"content": [{"type": "text", "text": data.get("error") or "failed"}], "isError": True}))
        else:
            self.viewhost.apply(live, session.tool_cancelled(
                "cancelled by the person" if status == "cancelled" else "interrupted: the host stopped"))

    # ---- tool calls ------------------------------------------------------------------------------

    def new_call_id(self) -> int:
        call_id = self._next_call
        self._next_call += 1
        return call_id

    def _call_from_page(self, server: Any, tool: Any, arguments: Any) -> None:
        if not isinstance(server, str) or not isinstance(tool, str):
            self.notice("A call needs a server and a tool name.", "error")
            return
        if not isinstance(arguments, dict):
            self.notice(f"/call {server} {tool}: the arguments must be a JSON object", "error")
            return
        try:
            conn = self.host.servers.get(server)
        except ServerUnavailable as exc:
            self.notice(str(exc), "error")
            return
        entry = conn.tools.get(tool)
        if entry is None:
            known = ", ".join(t.name for t in conn.tools.values() if t.model_visible) or "none yet"
            self.notice(f"server {server!r} has no tool {tool!r} (tools: {known})", "error")
            return
        if not entry.model_visible:
            # Same rule as for a model: tools meant only for their app are not called from the chat.
            self.notice(f"tool {tool!r} of server {server!r} is only callable by its app "
                        f"(visibility {sorted(entry.visibility)})", "error")
            return
        call_id = self.new_call_id()
        self._calls[call_id] = asyncio.create_task(self._run_call(call_id, entry, arguments))

    async def _run_call(self, call_id: int, entry: ToolEntry, arguments: dict[str, Any]) -> None:
        record: dict[str, Any] = {"server": entry.server, "tool": entry.name, "arguments": arguments, "source": "person",
                                  "definition": entry.definition, "status": "running"}
        # The call and the view start together: the template is normally cached, and a view
        # held back for the person's review must not hold back the call.
        key = self.keep_display("tool-call", record)
        call = asyncio.create_task(self.tracked_call(call_id, entry.server, entry.name, arguments, "person",
                                                      record=record, key=key))
        view: LiveView | None = None
        try:
            if entry.resource_uri:
                view = await self.mount_view(call_id, entry, record)
                self._rekeep(key, record)  # the call may have ended before its view was known
                if view is not None:
                    self.viewhost.apply(view, view.session.tool_input(arguments))
            try:
                result = await asyncio.shield(call)
            except CallFailed as exc:
                result = {"content": [{"type": "text", "text": str(exc)}], "isError": True}
        except asyncio.CancelledError:
            call.cancel()
            await asyncio.gather(call, return_exceptions=True)
            if view is not None:
                self.viewhost.apply(view, view.session.tool_cancelled("cancelled by the person"))
            raise
        finally:
            self._calls.pop(call_id, None)
        if view is not None:
            self.viewhost.apply(view, view.session.tool_result(result))

    async def mount_view(self, call_id: int, entry: ToolEntry, record: dict[str, Any]) -> LiveView | None:
        assert entry.resource_uri
        try:
            template = await self.host.servers.template(entry.server, entry.resource_uri)
        except (TemplateError, ServerUnavailable) as exc:
            self.viewhost.mount_failed(call_id, entry.server, entry.name, str(exc))
            record["viewError"] = str(exc)
            return None
        trust = "unchecked"
        if self.host.trust is not None:
            verdict = await asyncio.to_thread(self.host.trust.check, template)
            trust = verdict.status
            if verdict.status == "blocked":
                self.viewhost.mount_failed(call_id, entry.server, entry.name, verdict.reason)
                record["viewError"] = verdict.reason
                return None
            if not verdict.render and not await self._ask_trust(call_id, entry, verdict):
                reason = "the person did not accept the changed template"
                self.viewhost.mount_failed(call_id, entry.server, entry.name, reason)
                record["viewError"] = reason
                return None
        self._save_template(template)
        record["view"] = {"sha256": template.sha256, "uri": template.uri}
        return self.viewhost.mount(call_id, entry, template, trust)

    async def _ask_trust(self, call_id: int, entry: ToolEntry, verdict: Any) -> bool:
        """A server serves a different template for a URI the person has used: show old and new, wait for a yes."""
        held: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._held[call_id] = held
        self.emit({"type": "view-held", "callId": call_id, "server": entry.server, "tool": entry.name,
                   "uri": entry.resource_uri, "oldSha256": verdict.pinned_sha256, "newSha256": verdict.sha256,
                   "oldSize": verdict.pinned_size, "newSize": verdict.size, "reason": verdict.reason})
        self.viewhost.audit(None, "server->host", "template-changed", None, "asked", verdict.reason, server=entry.server)
        accepted = await held
        self.viewhost.audit(None, "server->host", "template-changed", None, "consented" if accepted else "declined",
                            "the person reviewed the changed template", server=entry.server)
        if accepted and self.host.trust is not None:
            await asyncio.to_thread(self.host.trust.accept, entry.server, str(entry.resource_uri), verdict.sha256,
                                    verdict.size)
        return accepted

    def _save_template(self, template: Template) -> None:
        if self.journal is None or template.sha256 in self.host.saved_templates:
            return
        self.host.saved_templates.add(template.sha256)
        repo = self.journal.conversations
        asyncio.ensure_future(self.journal.call(
            repo.save_template, template.sha256, template.server, template.uri, template.html, template_meta(template)))

    async def _run_view_call(self, server: str, tool: str, arguments: dict[str, Any], on_progress: ProgressFn) -> dict[str, Any]:
        record = {"server": server, "tool": tool, "arguments": arguments, "source": "view", "status": "running"}
        return await self.tracked_call(self.new_call_id(), server, tool, arguments, "view", on_progress, record)

    async def tracked_call(self, call_id: int, server: str, tool: str, arguments: dict[str, Any], source: str,
                            on_progress: ProgressFn | None = None, record: dict[str, Any] | None = None,
                            key: int | None = None) -> dict[str, Any]:
        """One tool call as the conversation shows it (started, progress, finished or failed), kept on record."""
        started = time.monotonic()
        record = record if record is not None else {}
        if key is None:
            key = self.keep_display("tool-call", record)

        def finish(status: str, result: dict[str, Any] | None, error: str | None) -> None:
            duration = round((time.monotonic() - started) * 1000)
            if result is not None:
                self.emit({"type": "call-finished", "callId": call_id, "result": result,
                           "isError": status == "tool-error", "durationMs": duration})
            else:
                self.emit({"type": "call-failed", "callId": call_id, "error": error or status,
                           "durationMs": duration, "cancelled": status == "cancelled"})
            record.update(status=status, result=result, error=error, durationMs=duration)
            self._rekeep(key, record)

        async def progress(value: float, total: float | None, message: str | None) -> None:
            self.emit({"type": "call-progress", "callId": call_id, "progress": value, "total": total, "message": message})
            if on_progress is not None:
                await on_progress(value, total, message)

        self.emit({"type": "call-started", "callId": call_id, "server": server, "tool": tool,
                   "arguments": arguments, "source": source})
        audit = self.viewhost.audit
        audit(None, "host->server", "tools/call", call_id, None, f"called by the {source}",
              {"name": tool, "arguments": arguments}, server=server)
        try:
            result = await self.host.servers.get(server).call_tool(tool, arguments, progress)
        except asyncio.CancelledError:
            finish("cancelled", None, None)
            audit(None, "host->server", "notifications/cancelled", call_id, None, "cancelled", server=server)
            raise
        except Exception as exc:  # noqa: BLE001 - every failure is shown where it happened
            error = _describe_call_error(server, tool, exc)
            finish("failed", None, error)
            audit(None, "server->host", "tools/call", call_id, None, error, server=server)
            raise CallFailed(error, exc.code if isinstance(exc, MCPError) else INTERNAL_ERROR) from exc
        finish("tool-error" if result.get("isError") is True else "ok", result, None)
        audit(None, "server->host", "tools/call", call_id, None, None, result, server=server)
        return result

    def _cancel_call(self, call_id: Any) -> None:
        task = self._calls.get(call_id) if isinstance(call_id, int) else None
        if task is not None:
            task.cancel()  # the SDK sends notifications/cancelled to the server

    # ---- what views send into the conversation ------------------------------------------------

    def chat_message(self, view: LiveView, message: vs.PostChatMessage) -> None:
        text = "\n".join(str(b.get("text", f"[{b.get('type')}]")) for b in message.content)
        data = {"role": message.role, "source": view.server, "text": text}
        self.emit({"type": "chat-message", **data, "view": view.handle})
        self.keep_display("view-message", data)
        if self.turns is not None:
            self.turns.say(text, source=view.server)  # the person approved it: it is their message now

    def model_context(self, view: LiveView, update: vs.ModelContextUpdated) -> None:
        if self.turns is not None:
            self.turns.context.update(view.handle, view.server, view.session.spec.tool.name,
                                      update.content, update.structured_content)

    def view_gone(self, view: LiveView) -> None:
        if self.turns is not None:
            self.turns.context.forget(view.handle)

    async def ask_model_consent(self, entry: ToolEntry, arguments: dict[str, Any]) -> bool:
        can_remember = self.host.consent.can_remember(entry.server, entry.name)
        allow, remember = await self.viewhost.ask_person(
            "tool-call", entry.server, f"The model wants to call {entry.server} · {entry.name}",
            f"{entry.server} · {entry.name}\n{json.dumps(arguments, ensure_ascii=False, indent=2)}", entry.name,
            can_remember)
        if allow and remember and can_remember:
            self.host.consent.remember_allow(entry.server, entry.name)
        return allow

    # ---- end of the tab ----------------------------------------------------------------------------

    async def close(self) -> None:
        """The tab went away: nobody can answer a teardown, so drop everything at once."""
        self._unsubscribe()
        if self.turns is not None:
            self.turns.stop()
        for task in list(self._calls.values()):
            task.cancel()
        self.viewhost.drop_all("the page was closed")
        await asyncio.gather(*self._calls.values(), return_exceptions=True)
        if self.journal is not None:
            await self.journal.close()


def _describe_call_error(server: str, tool: str, exc: Exception) -> str:
    if isinstance(exc, MCPError):
        return f"{server}/{tool} failed: {exc.message} (error {exc.code})"
    if isinstance(exc, TimeoutError):
        return f"{server}/{tool} did not answer in time"
    if isinstance(exc, ServerUnavailable):
        return str(exc)
    return f"{server}/{tool} failed: {exc or type(exc).__name__}"
