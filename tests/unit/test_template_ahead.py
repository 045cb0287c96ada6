"""A template ahead of its call: when the page says which tool the person is about to call (`intent` with
`server` and `tool`), the host sends that tool's template to the page (`template-ahead`), once per tab, and
the view mounted by the call then gets its `sandbox-resource-ready` without the HTML. Only a template read
when its server connected, of a tool the person may call, never one on a block-list; an unknown tool is
no error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcp_apps_host.host.process.compat import view_html
from tests.unit.tabdriver import Socket, app_for, open_tab
from tests.unit.test_failing_servers import call
from tests.unit.test_later_results import REC, mounted_for

pytestmark = pytest.mark.anyio


def ahead(tab: Socket) -> list[dict[str, Any]]:
    return tab.frames(lambda f: f["type"] == "template-ahead")


async def settled(tab: Socket) -> None:
    """Everything the host did for the frames put so far has reached the socket: a frame it answers at once
    (an unknown `/` command's notice) comes after them."""
    count = len(tab.frames(lambda f: f["type"] == "notice"))
    tab.put({"type": "chat", "text": "/nothing"})
    await tab.until(lambda f: len(tab.frames(lambda g: g["type"] == "notice")) > count)


async def test_the_tool_named_by_an_intent_has_its_template_sent_ahead_and_its_view_mounts_without_it(tmp_path: Path):
    app = app_for({"rec": REC}, f"sqlite:///{tmp_path}/h.db")
    async with open_tab(app) as tab:
        tab.put({"type": "intent", "server": "rec", "tool": "record"})
        sent = await tab.until(lambda f: f["type"] == "template-ahead")
        template = app.host.servers.template_read("rec", "record")
        assert template is not None and sent["sha256"] == template.sha256
        assert sent["html"] == view_html(template)  # the document the view's proxy would have been given

        tab.put({"type": "intent", "server": "rec", "tool": "record"})  # the page has it: not again
        call_id = await call(tab, "rec", "record")
        mount = await tab.until(mounted_for(call_id))
        assert mount["templateSha256"] == template.sha256
        ready = await tab.until(lambda f: f["type"] == "view-post" and f["view"] == mount["view"]
                                and f["message"].get("method") == "ui/notifications/sandbox-resource-ready")
        assert "html" not in ready["message"]["params"], "the view's mount carried the template again"
        await settled(tab)
        assert len(ahead(tab)) == 1


@pytest.mark.parametrize("server, tool", [("rec", "nope"), ("nope", "record"), ("rec", "rec-app-only")],
                         ids=["unknown-tool", "unknown-server", "a-tool-only-views-call"])
async def test_an_intent_naming_no_tool_of_the_persons_sends_nothing_and_is_no_error(
        tmp_path: Path, server: str, tool: str):
    async with open_tab(app_for({"rec": REC}, f"sqlite:///{tmp_path}/h.db")) as tab:
        tab.put({"type": "intent", "server": server, "tool": tool})
        await settled(tab)
        assert ahead(tab) == []
        assert not tab.frames(lambda f: f["type"] == "notice" and f.get("level") == "error"
                              and "frame" in f.get("text", ""))


async def test_a_template_on_a_block_list_is_not_sent_ahead(tmp_path: Path):
    app = app_for({"rec": REC}, f"sqlite:///{tmp_path}/h.db", trust={"blockServers": ["rec"]})
    async with open_tab(app) as tab:
        tab.put({"type": "intent", "server": "rec", "tool": "record"})
        await settled(tab)
        assert ahead(tab) == []
