"""A tab that waits for its next frame holds none it has sent: its last frames (a tool's result, however large)
were held until the next one, for as long as the tab stayed idle."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

import pytest

from mcp_apps_host.host.tab import frames as f
from mcp_apps_host.settings import Limits
from tests.unit.tabdriver import app_for, open_tab
from tests.unit.test_failing_servers import failing, ready_view
from tests.unit.test_view_call_kept import view_calls

pytestmark = pytest.mark.anyio


def sent_frames_alive(request_id: int, call_id: int) -> list[object]:
    """The frames of one view call that the host has sent: its answer, and its card's end."""
    gc.collect()
    return [o for o in gc.get_objects()
            if (isinstance(o, f.ViewPost) and isinstance(o.message, dict) and o.message.get("id") == request_id)
            or (isinstance(o, f.CallFinished) and o.call_id == call_id)]


async def test_an_idle_tab_holds_none_of_the_frames_it_sent(tmp_path: Path):
    # Nothing started ahead, so the call's card is the last thing the tab sends.
    quiet = Limits(prestarted_proxies_per_tab=0, prebooted_views_per_tab=0)
    async with open_tab(app_for({"fine": failing("fine")}, f"sqlite:///{tmp_path}/h.db", quiet)) as tab:
        view = await ready_view(tab, "fine", "fine-view")
        await view_calls(tab, view, 10, "echo", {"text": "hello"})
        # The call's card is drawn once its time comes (start and end together); after it nothing more is sent.
        started = await tab.until(lambda fr: fr["type"] == "call-started" and fr["source"] == "view")
        call_id = started["callId"]
        await tab.until(lambda fr: fr["type"] == "call-finished" and fr["callId"] == call_id)
        try:
            async with asyncio.timeout(10):
                while sent_frames_alive(10, call_id):
                    await asyncio.sleep(0.05)
        except TimeoutError:
            raise AssertionError(f"the idle tab still holds {sent_frames_alive(10, call_id)}") from None
