"""Two tabs of one conversation: what one does, the other draws (through the bus, here in one process)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from mcp_apps_host.policy.trust import TemplateTrust
from tests.unit.tabdriver import app_for, open_tab
from tests.unit.test_failing_servers import call, ended, failing


def index_of(sent: list[tuple[dict[str, Any], Any]], frame: dict[str, Any]) -> int:
    return next(i for i, (f, _) in enumerate(sent) if f is frame)


@pytest.mark.anyio
async def test_a_call_that_ends_before_its_view_is_known_is_drawn_with_its_view_in_the_other_tab(
        tmp_path, monkeypatch):
    check = TemplateTrust.check

    def slow_check(self: TemplateTrust, template: Any) -> Any:
        time.sleep(0.5)  # the call ends while its template is still being checked
        return check(self, template)

    monkeypatch.setattr(TemplateTrust, "check", slow_check)
    app = app_for({"fine": failing("fine")}, f"sqlite:///{tmp_path}/h.db")
    async with open_tab(app) as here, open_tab(app, started=True) as there:
        call_id = await call(here, "fine", "fine-view")
        finished = await ended(here, call_id)
        mounted = await here.until(lambda f: f["type"] == "view-mount" and f["callId"] == call_id)
        assert index_of(here.sent, finished) < index_of(here.sent, mounted), "the call did not end first"
        await there.until(lambda f: f["type"] == "view-mount" and f["tool"] == "fine-view", timeout=30)
