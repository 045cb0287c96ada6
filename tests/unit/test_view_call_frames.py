"""A view's own call: its answer reaches the page before the call's card is finished, so the page hands the
answer on before it draws anything; the card still ends with the call's result."""

from __future__ import annotations

import pytest

from tests.unit.tabdriver import app_for, open_tab, reply_to
from tests.unit.test_failing_servers import failing, ready_view


@pytest.mark.anyio
async def test_a_views_answer_goes_to_the_page_before_its_calls_card_is_finished(tmp_path) -> None:
    app = app_for({"fine": failing("fine")}, f"sqlite:///{tmp_path}/h.db")
    async with open_tab(app) as tab:
        view = await ready_view(tab, "fine", "fine-view")
        echo = {"name": "echo", "arguments": {"text": "hi"}}
        tab.put({"type": "view-message", "view": view,
                 "message": {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": echo}})
        await tab.until(reply_to(view, 7))
        started = await tab.until(lambda f: f["type"] == "call-started" and f["source"] == "view")
        finished = await tab.until(lambda f: f["type"] == "call-finished" and f["callId"] == started["callId"])
        assert "echo: hi" in str(finished["result"])
        order = [frame for frame, _ in tab.sent]
        assert order.index(tab.frames(reply_to(view, 7))[0]) < order.index(finished)
