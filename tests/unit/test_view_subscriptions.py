"""A view follows a resource of its own server (`resources/subscribe`): the server's update of that
resource reaches that view, and no other — not a view that did not subscribe, not one that
unsubscribed, not for another resource. Both server eras: a 2026-07-28 server's updates come on its
`subscriptions/listen` stream, an older one's as `notifications/resources/updated` after
`resources/subscribe`. The subscription and each update are in the audit trail."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_apps_host.servers.watching import ResourceWatchers
from tests.unit.tabdriver import Socket, app_for, open_tab, reply_to
from tests.unit.test_failing_servers import call, ended, ready_view

SERVERS = Path(__file__).resolve().parents[1] / "fixtures" / "servers.py"
COUNTER, OTHER = "data://era/counter", "data://era/other"


def era(kind: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SERVERS), kind], "apps": True}


def updates(tab: Socket, view: str) -> list[str]:
    """The uris the host told ``view`` were updated, in order."""
    return [f["message"]["params"]["uri"] for f in tab.frames(
        lambda f: f["type"] == "view-post" and f["view"] == view
        and f["message"].get("method") == "notifications/resources/updated")]


async def ask(tab: Socket, view: str, msg_id: int, method: str, uri: str) -> dict[str, Any]:
    tab.put({"type": "view-message", "view": view,
             "message": {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": {"uri": uri}}})
    return dict((await tab.until(reply_to(view, msg_id)))["message"])


async def bump(tab: Socket, which: str) -> None:
    done = await ended(tab, await call(tab, "era", "bump", {"which": which}))
    assert done["type"] == "call-finished", done


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["modern", "legacy"])
async def test_only_the_view_that_subscribed_hears_its_resource_change(tmp_path, kind: str) -> None:
    app = app_for({"era": era(kind)}, f"sqlite:///{tmp_path}/h.db")
    async with open_tab(app) as tab:
        follower = await ready_view(tab, "era", "era-view")
        bystander = await ready_view(tab, "era", "era-view")
        assert (await ask(tab, follower, 20, "resources/subscribe", COUNTER)) == {"jsonrpc": "2.0", "id": 20,
                                                                                   "result": {}}
        await bump(tab, "counter")
        await tab.until(lambda f: updates(tab, follower) == [COUNTER], timeout=60)
        read = await ask(tab, follower, 21, "resources/read", COUNTER)
        assert read["result"]["contents"][0]["text"] == "1", read

        # The bystander subscribes to the other resource: a change of it reaches the bystander alone, and
        # proves by its arrival that the follower's silence is not a slow update.
        await ask(tab, bystander, 30, "resources/subscribe", OTHER)
        await bump(tab, "other")
        await tab.until(lambda f: updates(tab, bystander) == [OTHER], timeout=60)
        assert updates(tab, follower) == [COUNTER]

        # Unsubscribed, the follower hears no more of the counter; the bystander, now following it, does.
        assert "result" in await ask(tab, follower, 22, "resources/unsubscribe", COUNTER)
        await ask(tab, bystander, 31, "resources/subscribe", COUNTER)
        await bump(tab, "counter")
        await tab.until(lambda f: updates(tab, bystander) == [OTHER, COUNTER], timeout=60)
        assert updates(tab, follower) == [COUNTER]

        bad = await ask(tab, follower, 23, "resources/subscribe", "")
        assert bad["error"]["code"] == -32602 and "uri" in bad["error"]["message"], bad

    audit = app.host.audit
    assert audit is not None
    asked = audit.query(server="era", direction="view->host")
    said = sorted((r["view"] == follower, r["method"], r["decision"] or "") for r in asked
                  if "subscribe" in r["method"])
    assert said == [(False, "resources/subscribe", "")] * 2 + [(True, "resources/subscribe", ""),
                                                               (True, "resources/subscribe", "refused"),
                                                               (True, "resources/unsubscribe", "")], said
    told = [r for r in audit.query(server="era", direction="host->view")
            if r["method"] == "notifications/resources/updated"]
    assert sorted((r["view"], json.loads(r["payload"])["params"]["uri"]) for r in told) == sorted(
        [(follower, COUNTER), (bystander, OTHER), (bystander, COUNTER)]), told


def test_one_follower_failing_does_not_keep_the_update_from_the_others() -> None:
    watchers, heard = ResourceWatchers(), []

    def broken(uri: str) -> None:
        raise RuntimeError("a view that cannot take it")

    assert watchers.add(COUNTER, broken) and not watchers.add(COUNTER, heard.append)
    watchers.updated(COUNTER)  # raises nothing: the connection that calls it goes on
    watchers.updated(OTHER)
    assert heard == [COUNTER]
    assert not watchers.remove(COUNTER, broken) and watchers.remove(COUNTER, heard.append)
    assert watchers.uris() == []
