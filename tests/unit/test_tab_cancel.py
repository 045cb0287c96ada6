"""Cancel on a call's card, and Stop during a model's turn, reach the MCP server as
`notifications/cancelled`: the server's own tool is cancelled (it writes down that it was), the card
ends as cancelled, and the server stays usable."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from tests.modelfakes import args, openai_fake, text, tool_call
from tests.unit.tabdriver import app_for, open_tab

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.anyio
async def test_cancel_from_the_page_reaches_the_server(tmp_path: Path):
    mark = tmp_path / "cancelled"
    server = {"command": sys.executable, "args": [str(FIXTURES / "failing.py"), "cancel"],
              "env": {"CANCEL_MARK": str(mark)}}
    app = app_for({"cancel": server}, f"sqlite:///{tmp_path}/h.db")
    async with open_tab(app) as tab:
        tab.put({"type": "call", "server": "cancel", "tool": "wait", "arguments": {"seconds": 60}})
        call_id = (await tab.until(lambda f: f["type"] == "call-started"))["callId"]
        await tab.until(lambda f: f["type"] == "call-progress" and f["callId"] == call_id)  # running on the server
        assert not mark.exists()
        tab.put({"type": "cancel", "callId": call_id})
        failed = await tab.until(lambda f: f["type"] == "call-failed" and f["callId"] == call_id)
        assert failed["cancelled"] is True, failed
        with anyio.fail_after(30):
            while not mark.exists():
                await anyio.sleep(0.05)
        assert mark.read_text() == "cancelled"
        # The server is still there for the next call.
        tab.put({"type": "call", "server": "cancel", "tool": "wait", "arguments": {"seconds": 0.2}})
        done = await tab.until(lambda f: f["type"] == "call-finished" and f["callId"] != call_id)
        assert done["result"]["content"][0]["text"] == "waited"


@pytest.mark.anyio
async def test_stop_during_a_model_turn_reaches_the_server(tmp_path: Path):
    mark = tmp_path / "cancelled"
    server = {"command": sys.executable, "args": [str(FIXTURES / "failing.py"), "cancel"],
              "env": {"CANCEL_MARK": str(mark)}}
    script = [[tool_call("cancel__wait"), args(json.dumps({"seconds": 60}))], [text("never reached")]]
    with openai_fake.serve_script(script) as fake:
        app = app_for({"cancel": server}, f"sqlite:///{tmp_path}/h.db",
                      model={"spec": "openai:fake", "baseUrl": fake.base_url})
        async with open_tab(app) as tab:
            tab.put({"type": "chat", "text": "wait for a minute"})
            call_id = (await tab.until(lambda f: f["type"] == "call-started" and f["source"] == "model"))["callId"]
            await tab.until(lambda f: f["type"] == "call-progress" and f["callId"] == call_id)
            assert not mark.exists()
            tab.put({"type": "stop"})
            with anyio.fail_after(30):
                while not mark.exists():
                    await anyio.sleep(0.05)
            assert mark.read_text() == "cancelled"
            failed = await tab.until(lambda f: f["type"] == "call-failed" and f["callId"] == call_id)
            assert failed["cancelled"] is True, failed
