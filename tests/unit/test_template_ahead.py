"""A template ahead of its call: when the page says which tool the person is about to call (`intent` with
`server` and `tool`), the host sends that tool's template to the page (`template-ahead`), once per tab, and
the view mounted by the call then gets its `sandbox-resource-ready` without the HTML; and the tool's view
boots ahead when a call would render it without asking, a template never seen included, for the call to
take. Only a template read when its server connected, of a tool the person may call, never one on a
block-list; an unknown tool is no error."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_apps_host.host.process.compat import view_html
from mcp_apps_host.policy.trust import TemplateTrust
from tests.unit.tabdriver import CONSOLE, Socket, app_for, open_tab
from tests.unit.test_failing_servers import call
from tests.unit.test_later_results import REC

pytestmark = pytest.mark.anyio


def ahead(tab: Socket) -> list[dict[str, Any]]:
    return tab.frames(lambda f: f["type"] == "template-ahead")


def booted(tab: Socket) -> list[dict[str, Any]]:
    return tab.frames(lambda f: f["type"] == "view-mount" and f["prebooted"])


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
        # The view booted ahead for the call is mounted without the template.
        mount = await tab.until(lambda f: f["type"] == "view-mount" and f["prebooted"], timeout=30)
        assert mount["templateSha256"] == template.sha256
        ready = await tab.until(lambda f: f["type"] == "view-post" and f["view"] == mount["view"]
                                and f["message"].get("method") == "ui/notifications/sandbox-resource-ready")
        assert "html" not in ready["message"]["params"], "the view's mount carried the template again"
        await settled(tab)
        assert len(ahead(tab)) == 1


async def test_the_view_of_a_template_never_seen_boots_on_the_intent_pins_nothing_and_the_call_takes_it(
        tmp_path: Path):
    app = app_for({"rec": REC}, f"sqlite:///{tmp_path}/h.db")
    async with open_tab(app) as tab:
        template = app.host.servers.template_read("rec", "record")
        trust = app.host.for_person(CONSOLE).trust  # the tab's person's pins
        assert template is not None and trust is not None
        assert trust.pins.get("rec", template.uri) is None  # never seen
        tab.put({"type": "intent", "server": "rec", "tool": "record"})
        mount = await tab.until(lambda f: f["type"] == "view-mount" and f["prebooted"], timeout=30)
        assert mount["tool"] == "record" and mount["callId"] is None and mount["templateSha256"] == template.sha256
        assert trust.pins.get("rec", template.uri) is None, "booting ahead pinned the template"

        call_id = await call(tab, "rec", "record")
        adopted = await tab.until(lambda f: f["type"] == "view-adopt" and f["callId"] == call_id, timeout=30)
        assert adopted["view"] == mount["view"]
        assert not tab.frames(lambda f: f["type"] == "view-mount" and f["callId"] == call_id), \
            "the call mounted a view of its own"
        pin = trust.pins.get("rec", template.uri)
        assert pin is not None and pin["sha256"] == template.sha256  # pinned by its first use, the call


async def test_a_template_that_changed_since_the_person_accepted_it_does_not_boot_on_an_intent(tmp_path: Path):
    """A call of it would ask the person first: nothing of it runs before they answer."""
    app = app_for({"rec": REC}, f"sqlite:///{tmp_path}/h.db")
    async with open_tab(app) as tab:
        template = app.host.servers.template_read("rec", "record")
        trust = app.host.for_person(CONSOLE).trust  # the tab's person's pins
        assert template is not None and trust is not None
        trust.accept("rec", template.uri, "0" * 64, 1)  # what the person accepted was other HTML
        tab.put({"type": "intent", "server": "rec", "tool": "record"})
        await tab.until(lambda f: f["type"] == "template-ahead")
        await settled(tab)
        assert booted(tab) == []


async def test_an_intent_for_a_template_whose_view_a_call_is_starting_boots_no_second_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Enter right after the line: the call mounts the view while the intent's trust check runs. Another view
    of it booted then would only take the CPU from the one the person waits for; the next boots once that is up."""
    answered = threading.Event()
    asked = TemplateTrust.renders_unasked

    def renders_unasked(self: TemplateTrust, template: Any) -> bool:
        try:
            return asked(self, template)
        finally:
            answered.set()

    monkeypatch.setattr(TemplateTrust, "renders_unasked", renders_unasked)
    app = app_for({"rec": REC}, f"sqlite:///{tmp_path}/h.db")
    async with open_tab(app) as tab:
        call_id = await call(tab, "rec", "record")
        await tab.until(lambda f: f["type"] == "view-mount" and f["callId"] == call_id, timeout=30)
        tab.put({"type": "intent", "server": "rec", "tool": "record"})
        assert await anyio.to_thread.run_sync(answered.wait, 30), "the intent's trust check never ran"
        await settled(tab)
        assert booted(tab) == [], "a second view of the template booted beside the call's"


@pytest.mark.parametrize("server, tool", [("rec", "nope"), ("nope", "record"), ("rec", "rec-app-only")],
                         ids=["unknown-tool", "unknown-server", "a-tool-only-views-call"])
async def test_an_intent_naming_no_tool_of_the_persons_sends_nothing_and_is_no_error(
        tmp_path: Path, server: str, tool: str):
    async with open_tab(app_for({"rec": REC}, f"sqlite:///{tmp_path}/h.db")) as tab:
        tab.put({"type": "intent", "server": server, "tool": tool})
        await settled(tab)
        assert ahead(tab) == [] and booted(tab) == []
        assert not tab.frames(lambda f: f["type"] == "notice" and f.get("level") == "error"
                              and "frame" in f.get("text", ""))


async def test_a_template_on_a_block_list_is_not_sent_ahead(tmp_path: Path):
    app = app_for({"rec": REC}, f"sqlite:///{tmp_path}/h.db", trust={"blockServers": ["rec"]})
    async with open_tab(app) as tab:
        tab.put({"type": "intent", "server": "rec", "tool": "record"})
        await settled(tab)
        assert ahead(tab) == [] and booted(tab) == []
