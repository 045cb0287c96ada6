"""What an admin governs per server: its tools (one rule for the person's, the model's and a view's calls),
what its views may do, its own limits, and who the host says is calling (header templates)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mcp_apps_host.config.host import HostConfig
from mcp_apps_host.errors import ConfigError
from mcp_apps_host.settings import Limits
from mcp_apps_host.values.identity import Identity
from mcp_apps_host.web.socket import run_tab
from tests.modelfakes import args, openai_fake, text, tool_call
from tests.unit.tabdriver import Socket, app_for, open_tab, reply_to, servers_ready
from tests.unit.test_embedding import free_port, wait_listening

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REC = {"command": sys.executable, "args": [str(FIXTURES / "servers.py"), "rec"], "apps": True}
READ_ONLY = {**REC, "tools": {"mode": "read-only"}}


# ---- the entry's keys, and their errors ----------------------------------------------------------


@pytest.mark.parametrize(("entry", "says"), [
    ({"tools": {"mode": "some"}}, "mcpServers.crm.tools.mode: expected all, read-only or only, not 'some'"),
    ({"tools": {"mode": "all", "allow": ["a"]}}, 'mcpServers.crm.tools.allow: only used with "mode": "only"'),
    ({"tools": {"deny": "delete"}}, "mcpServers.crm.tools.deny: expected a list of tool names"),
    ({"views": {"message": "maybe"}}, "mcpServers.crm.views.message: expected allow, ask or deny, not 'maybe'"),
    ({"views": {"popups": "allow"}}, "mcpServers.crm.views.popups: unknown"),
    ({"limits": {"maxTemplateBytes": 10 ** 12}}, "mcpServers.crm.limits.maxTemplateBytes: expected a number from"),
    ({"limits": {"toolCallTimeout": "long"}}, "mcpServers.crm.limits.toolCallTimeout: expected a number"),
    ({"limits": {"cpu": 1}}, "mcpServers.crm.limits.cpu: unknown"),
    ({"consent": {"delete": "never"}}, "mcpServers.crm.consent.delete: expected allow, ask or deny"),
    ({"url": "http://crm.test/mcp", "headers": {"X-User": "{user}\r\nX-Admin: yes"}},
     "mcpServers.crm.headers.X-User: control characters"),
    ({"url": "http://crm.test/mcp", "headers": {"X-User": "{email}"}}, "{email} is unknown"),
])
def test_a_bad_key_is_named_with_its_value(entry: dict[str, Any], says: str):
    entry = {"command": "crm-server", **entry} if "url" not in entry else entry
    with pytest.raises(ConfigError) as err:
        HostConfig.from_dict({"mcpServers": {"crm": entry}}, "config")
    assert says in str(err.value)


def test_the_entry_keys_are_read():
    config = HostConfig.from_dict({"mcpServers": {"crm": {
        "url": "http://crm.test/mcp", "tools": {"mode": "only", "allow": ["find"], "deny": ["drop"]},
        "views": {"message": "deny", "openLink": "allow"}, "limits": {"maxTemplateBytes": 5_000_000},
        "consent": {"find": "allow"}, "headers": {"X-User": "{user}"}}},
        "allowedServerHosts": ["crm.internal", "10.1.2.0/24", "*.corp.example"]}, "config")
    crm = config.servers[0]
    assert (crm.tools.mode, crm.tools.allow, crm.tools.deny) == ("only", {"find"}, {"drop"})
    assert crm.views.rule("message") == "deny" and crm.views.rule("openLink") == "allow"
    assert crm.views.rule("download") == "ask"  # not named: asked, as without a rule
    assert crm.limits.as_dict() == {"max_template_bytes": 5_000_000}
    assert crm.consent == {"find": "allow"}
    assert config.allowed_server_hosts.names == {"crm.internal", "*.corp.example"}
    with pytest.raises(ConfigError, match="allowedServerHosts: 'crm internal' is not a host name"):
        HostConfig.from_dict({"allowedServerHosts": ["crm internal"]}, "config")


# ---- tools: one rule for the person, the model and a view ----------------------------------------


def _view_message(view: str, request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"type": "view-message", "view": view,
            "message": {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}}


async def _ready_view(tab: Socket, server: str) -> str:
    """Call the server's view tool and bring its view up (proxy ready, initialize, initialized)."""
    seen = {f["view"] for f in tab.frames(lambda f: f["type"] == "view-mount")}
    tab.put({"type": "call", "server": server, "tool": "record", "arguments": {}})
    mount = await tab.until(lambda f: f["type"] == "view-mount" and f["view"] not in seen and f["server"] == server)
    view = mount["view"]
    tab.put({"type": "view-message", "view": view, "message": {
        "jsonrpc": "2.0", "method": "ui/notifications/sandbox-proxy-ready", "params": {}}})
    tab.put(_view_message(view, 1, "ui/initialize", {
        "appInfo": {"name": "t", "version": "1"}, "appCapabilities": {}, "protocolVersion": "2026-01-26"}))
    await tab.until(reply_to(view, 1))
    tab.put({"type": "view-message", "view": view,
             "message": {"jsonrpc": "2.0", "method": "ui/notifications/initialized", "params": {}}})
    return str(view)


def _refused_rows(app: Any, server: str) -> list[dict[str, Any]]:
    """After the app stopped: everything it recorded is written."""
    return app.host.audit.query(server=server, decision="refused", method="tools/call", limit=None)


@pytest.mark.anyio
async def test_read_only_refuses_the_persons_call_and_a_views_with_the_rule_named(tmp_path: Path):
    app = app_for({"crm": READ_ONLY, "open": REC}, f"sqlite:///{tmp_path}/h.db")
    async with open_tab(app) as tab:
        tab.put({"type": "call", "server": "crm", "tool": "write-note", "arguments": {"text": "x"}})
        failed = await tab.until(lambda f: f["type"] == "call-failed")
        assert "policy: crm is read-only: write-note is not annotated readOnlyHint" in failed["error"]
        # The same tool of a server without the rule runs.
        tab.put({"type": "call", "server": "open", "tool": "write-note", "arguments": {"text": "y"}})
        done = await tab.until(lambda f: f["type"] == "call-finished")
        assert "noted y" in json.dumps(done["result"])
        # A read-only tool of the read-only server runs, and its view asks for the other tool: refused.
        view = await _ready_view(tab, "crm")
        tab.put(_view_message(view, 2, "tools/call", {"name": "write-note", "arguments": {"text": "z"}}))
        reply = (await tab.until(reply_to(view, 2)))["message"]
        assert "policy: crm is read-only" in reply["error"]["message"], reply
        assert not tab.frames(lambda f: f["type"] == "consent"), "a refused call is not put to the person"
    rows = _refused_rows(app, "crm")
    assert any("policy: crm is read-only" in (r["reason"] or "") for r in rows), rows
    assert not _refused_rows(app, "open")


@pytest.mark.anyio
async def test_read_only_refuses_the_models_call_and_does_not_offer_the_tool(tmp_path: Path):
    script = [[tool_call("crm__write-note"), args(json.dumps({"text": "x"}))], [text("done")]]
    with openai_fake.serve_script(script) as fake:
        app = app_for({"crm": READ_ONLY}, f"sqlite:///{tmp_path}/h.db",
                      model={"spec": "openai:fake", "baseUrl": fake.base_url})
        async with open_tab(app) as tab:
            tab.put({"type": "chat", "text": "write a note"})
            failed = await tab.until(lambda f: f["type"] == "call-failed" and f.get("callId") is not None)
            assert "policy: crm is read-only: write-note" in failed["error"]
            await tab.until(lambda f: f["type"] == "turn-state" and f["running"] is False)
        offered = [t["function"]["name"] for t in fake.requests[0].body["tools"]]
        assert "crm__record" in offered and "crm__write-note" not in offered
        # What the model was told names the rule too.
        told = json.dumps(fake.requests[1].body["messages"][-1])
        assert "policy: crm is read-only" in told, told
    assert any("policy: crm is read-only" in (r["reason"] or "") for r in _refused_rows(app, "crm"))


@pytest.mark.anyio
async def test_only_and_deny(tmp_path: Path):
    only = {**REC, "tools": {"mode": "only", "allow": ["record"]}}
    denied = {**REC, "tools": {"deny": ["record"]}}
    app = app_for({"only": only, "denied": denied}, f"sqlite:///{tmp_path}/h.db")
    async with open_tab(app) as tab:
        tab.put({"type": "call", "server": "only", "tool": "write-note", "arguments": {}})
        failed = await tab.until(lambda f: f["type"] == "call-failed")
        assert "policy: only allows only record: write-note is not in tools.allow" in failed["error"]
        tab.put({"type": "call", "server": "denied", "tool": "record", "arguments": {}})
        failed = await tab.until(lambda f: f["type"] == "call-failed" and "denied" in f["error"])
        assert "policy: denied denies record (tools.deny)" in failed["error"]


# ---- what a view may do ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_denied_message_is_refused_while_another_servers_view_asks(tmp_path: Path):
    locked = {**REC, "views": {"message": "deny", "modelContext": "deny"}}
    app = app_for({"locked": locked, "open": REC}, f"sqlite:///{tmp_path}/h.db")
    message = {"role": "user", "content": [{"type": "text", "text": "hello"}]}
    async with open_tab(app) as tab:
        view = await _ready_view(tab, "locked")
        tab.put(_view_message(view, 2, "ui/message", message))
        reply = (await tab.until(reply_to(view, 2)))["message"]
        assert "policy: locked views.message = deny" in reply["error"]["message"], reply
        tab.put(_view_message(view, 3, "ui/update-model-context", {"content": [{"type": "text", "text": "x"}]}))
        reply = (await tab.until(reply_to(view, 3)))["message"]
        assert "policy: locked views.modelContext = deny" in reply["error"]["message"], reply
        assert not tab.frames(lambda f: f["type"] == "consent")

        other = await _ready_view(tab, "open")
        tab.put(_view_message(other, 2, "ui/message", message))
        asked = await tab.until(lambda f: f["type"] == "consent" and f["kind"] == "message")
        assert asked["view"] == other and asked["server"] == "open"
        tab.put(_view_message(other, 3, "ui/update-model-context", {"content": [{"type": "text", "text": "x"}]}))
        assert "result" in (await tab.until(reply_to(other, 3)))["message"]


@pytest.mark.anyio
async def test_an_allowed_link_is_opened_without_asking(tmp_path: Path):
    app = app_for({"free": {**REC, "views": {"openLink": "allow"}}}, f"sqlite:///{tmp_path}/h.db")
    async with open_tab(app) as tab:
        view = await _ready_view(tab, "free")
        tab.put(_view_message(view, 2, "ui/open-link", {"url": "https://example.com/a"}))
        assert "result" in (await tab.until(reply_to(view, 2)))["message"]
        await tab.until(lambda f: f["type"] == "open-link" and "example.com" in json.dumps(f))
        assert not tab.frames(lambda f: f["type"] == "consent")
    rows = app.host.audit.query(server="free", method="ui/open-link", decision="allowed", limit=None)
    assert any("policy: free views.openLink = allow" in (r["reason"] or "") for r in rows), rows


# ---- limits of its own ----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_server_allowed_a_larger_template_renders_it_where_the_global_limit_refuses(tmp_path: Path):
    limits = Limits(max_template_bytes=2048)  # the rec view's template is larger
    app = app_for({"big": {**REC, "limits": {"maxTemplateBytes": 4_000_000}}, "small": REC},
                  f"sqlite:///{tmp_path}/h.db", limits)
    async with open_tab(app) as tab:
        tab.put({"type": "call", "server": "big", "tool": "record", "arguments": {}})
        big = await tab.until(lambda f: f["type"] == "view-mount" and f["server"] == "big")
        tab.put({"type": "call", "server": "small", "tool": "record", "arguments": {}})
        small = await tab.until(lambda f: f["type"] == "view-mount" and f["server"] == "small")
        assert small["view"].startswith("failed-")
        await tab.until(lambda f: f.get("view") == small["view"] and "max_template_bytes (2048 bytes)" in json.dumps(f))
        assert not big["view"].startswith("failed-") and "max_template_bytes" not in json.dumps(big)
        # The big one's view really starts: its proxy is loaded and handed the template.
        tab.put({"type": "view-message", "view": big["view"], "message": {
            "jsonrpc": "2.0", "method": "ui/notifications/sandbox-proxy-ready", "params": {}}})
        await tab.until(lambda f: f["type"] == "view-post" and f["view"] == big["view"]
                        and f["message"].get("method") == "ui/notifications/sandbox-resource-ready")


# ---- identity to servers -------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def _tab_as(app: Any, identity: Identity) -> AsyncIterator[Socket]:
    socket = Socket()
    task = asyncio.create_task(run_tab(app.host.for_person(identity), socket))  # type: ignore[arg-type]
    try:
        socket.put({"type": "hello"})
        await socket.until(servers_ready())
        yield socket
    finally:
        socket.incoming.put_nowait(None)
        await asyncio.wait_for(task, 30)


@pytest.mark.anyio
async def test_header_templates_reach_the_server_with_each_persons_values(tmp_path: Path):
    port = free_port()
    server = subprocess.Popen([sys.executable, str(FIXTURES / "whoami.py"), str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, server)
        entry = {"url": f"http://127.0.0.1:{port}/mcp",
                 "headers": {"X-User": "{user}", "X-Tenant": "{tenant}", "X-Groups": "{groups}"}}
        app = app_for({"who": entry}, f"sqlite:///{tmp_path}/h.db", allowedServerHosts=["127.0.0.1"])
        async with app.lifespan():
            for identity, said in ((Identity("alice", "acme", groups=("sales", "eu")),
                                    {"x-user": "alice", "x-tenant": "acme", "x-groups": "sales,eu"}),
                                   (Identity("bob", "acme"), {"x-user": "bob", "x-tenant": "acme", "x-groups": ""})):
                async with _tab_as(app, identity) as tab:
                    tab.put({"type": "call", "server": "who", "tool": "who-headers", "arguments": {}})
                    done = await tab.until(lambda f: f["type"] == "call-finished")
                    assert json.loads(done["result"]["content"][0]["text"]) == said
    finally:
        server.terminate()
        server.wait(30)
