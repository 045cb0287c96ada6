"""A view lists its own server's resources and resource templates (the host advertises serverResources):
proxied to that server, answered page by page, and recorded in the audit trail like its reads."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.tabdriver import Socket, app_for, open_tab, reply_to
from tests.unit.test_failing_servers import failing, ready_view


async def _ask(tab: Socket, view: str, msg_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    tab.put({"type": "view-message", "view": view,
             "message": {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}})
    return dict((await tab.until(reply_to(view, msg_id)))["message"])


@pytest.mark.anyio
async def test_a_view_lists_its_servers_resources_and_templates(tmp_path) -> None:
    app = app_for({"fine": failing("fine")}, f"sqlite:///{tmp_path}/h.db")
    async with open_tab(app) as tab:
        view = await ready_view(tab, "fine", "fine-view")
        listed = await _ask(tab, view, 7, "resources/list", {})
        assert {r["uri"] for r in listed["result"]["resources"]} >= {"notes://today"}, listed
        templates = await _ask(tab, view, 8, "resources/templates/list", {})
        assert [t["uriTemplate"] for t in templates["result"]["resourceTemplates"]] == ["notes://{day}"], templates
        read = await _ask(tab, view, 9, "resources/read", {"uri": "notes://monday"})
        assert read["result"]["contents"][0]["text"] == "the note of monday"
        bad = await _ask(tab, view, 10, "resources/list", {"cursor": 5})
        assert bad["error"]["code"] == -32602 and "cursor" in bad["error"]["message"]

    audit = app.host.audit
    assert audit is not None
    rows = audit.query(server="fine", direction="view->host")
    assert {"resources/list", "resources/templates/list"} <= {r["method"] for r in rows}, rows
