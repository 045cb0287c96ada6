"""A view's own call: its answer reaches the page before the call's card is finished, so the page hands the
answer on before it draws anything; the card still ends with the call's result. A call that ends soon gets
its card a moment later, start and end together; one that runs on gets it while it runs."""

from __future__ import annotations

import pytest

from mcp_apps_host.host.tab.runner import VIEW_CARD_AFTER_S
from tests.unit.tabdriver import app_for, open_tab, reply_to
from tests.unit.test_failing_servers import failing, ready_view


def _call(tab, view: str, msg_id: int, name: str, arguments: dict) -> None:
    tab.put({"type": "view-message", "view": view,
             "message": {"jsonrpc": "2.0", "id": msg_id, "method": "tools/call",
                         "params": {"name": name, "arguments": arguments}}})


@pytest.mark.anyio
async def test_a_views_answer_goes_to_the_page_before_its_calls_card_is_finished(tmp_path) -> None:
    app = app_for({"fine": failing("fine")}, f"sqlite:///{tmp_path}/h.db")
    async with open_tab(app) as tab:
        view = await ready_view(tab, "fine", "fine-view")
        _call(tab, view, 7, "echo", {"text": "hi"})
        await tab.until(reply_to(view, 7))
        started = await tab.until(lambda f: f["type"] == "call-started" and f["source"] == "view")
        finished = await tab.until(lambda f: f["type"] == "call-finished" and f["callId"] == started["callId"])
        assert "echo: hi" in str(finished["result"])
        order = [frame for frame, _ in tab.sent]
        assert order.index(tab.frames(reply_to(view, 7))[0]) < order.index(finished)


@pytest.mark.anyio
async def test_a_view_call_that_ends_soon_is_drawn_after_its_answer_start_and_end_together(tmp_path) -> None:
    app = app_for({"fine": failing("fine")}, f"sqlite:///{tmp_path}/h.db")
    async with open_tab(app) as tab:
        view = await ready_view(tab, "fine", "fine-view")
        _call(tab, view, 7, "echo", {"text": "hi"})
        await tab.until(reply_to(view, 7))
        started = await tab.until(lambda f: f["type"] == "call-started" and f["source"] == "view")
        assert started["tool"] == "echo" and started["arguments"] == {"text": "hi"}
        finished = await tab.until(lambda f: f["type"] == "call-finished" and f["callId"] == started["callId"])
        order = [frame for frame, _ in tab.sent]
        # Not drawn while the server worked on it, nor as its answer went: later, in one go.
        assert order.index(tab.frames(reply_to(view, 7))[0]) < order.index(started)
        assert order.index(finished) == order.index(started) + 1


@pytest.mark.anyio
async def test_a_view_call_that_runs_on_is_drawn_while_it_runs(tmp_path) -> None:
    app = app_for({"fine": failing("fine")}, f"sqlite:///{tmp_path}/h.db")
    async with open_tab(app) as tab:
        view = await ready_view(tab, "fine", "fine-view")
        seconds = VIEW_CARD_AFTER_S * 20
        _call(tab, view, 8, "pause", {"seconds": seconds})
        started = await tab.until(lambda f: f["type"] == "call-started" and f["source"] == "view")
        assert started["tool"] == "pause"
        # Drawn while the call runs: no answer yet, nor an end to its card.
        assert not tab.frames(reply_to(view, 8))
        ended = ("call-finished", "call-failed")
        assert not tab.frames(lambda f: f["type"] in ended and f["callId"] == started["callId"])
        await tab.until(reply_to(view, 8))
        finished = await tab.until(lambda f: f["type"] == "call-finished" and f["callId"] == started["callId"])
        assert f"paused {seconds} s" in str(finished["result"])
        assert len(tab.frames(lambda f: f["type"] == "call-started" and f["source"] == "view")) == 1
