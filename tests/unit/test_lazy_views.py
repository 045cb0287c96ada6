"""Which views a long conversation puts away, how, and how they come back (host/lazy.py)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

import mcp_apps_host as vs
from mcp_apps_host.host.tab import frames as f
from mcp_apps_host.host.tab.driver import ViewDriver, ViewPorts
from mcp_apps_host.host.tab.lazy import PARK_REASON, LazyViews, to_tear_down
from mcp_apps_host.host.tab.liveviews import LiveViews
from mcp_apps_host.settings import Limits
from mcp_apps_host.values.tools import tool_entry
from mcp_apps_host.views import events as ev

TOOL = tool_entry("srv", {"name": "show", "inputSchema": {"type": "object"},
                          "_meta": {"ui": {"resourceUri": "ui://srv/show.html"}}})


# ---- the choice ----------------------------------------------------------------------------------


def test_nothing_is_put_away_within_the_limit():
    assert to_tear_down(["a", "b"], {}, set(), set(), max_live=2) == []


def test_the_longest_out_of_sight_go_first_never_one_in_sight_or_kept():
    live = ["a", "b", "c", "d", "e"]
    seen = {"a": 5, "b": 1, "c": 3, "d": 2, "e": 4}
    # Three over the limit of two; "b" is in sight and "d" must keep running.
    assert to_tear_down(live, seen, visible={"b"}, keep={"d"}, max_live=2) == ["c", "e", "a"]


def test_ties_go_in_mount_order_and_fewer_candidates_than_needed_is_fine():
    assert to_tear_down(["x", "y", "z"], {}, set(), set(), max_live=1) == ["x", "y"]
    assert to_tear_down(["x", "y", "z"], {}, visible={"x", "y"}, keep=set(), max_live=1) == ["z"]


# ---- putting away and bringing back, with real view sessions -------------------------------------


class FakeViews:
    """The parts of `LiveViews` that lazy.py uses: views are real drivers, messages for them are kept, and what
    each driver tells of its view's coming and going goes through the host's own `LiveViews.ready` and `ended`."""

    ready = LiveViews.ready
    ended = LiveViews.ended

    def __init__(self, max_live: int) -> None:
        self.host = SimpleNamespace(limits=Limits(max_live_views=max_live), hung=lambda origin: None)
        self.sent: list[Any] = []
        self.page = SimpleNamespace(send=self._send)
        nothing = SimpleNamespace(message=lambda template, message: message, withdraw=lambda handle: None)
        self.ports = ViewPorts(self.host, self.page, lambda *a, **k: None, nothing, None, None, self,
                               nothing)  # type: ignore[arg-type]
        self.live: dict[str, ViewDriver] = {}
        self.posted: dict[str, list[dict[str, Any]]] = {}
        self.replayed: list[tuple[str, Any, Any, Any]] = []
        self.forgotten: list[str] = []
        self._n = 0
        self.lazy = LazyViews(self)
        self.prebooted = SimpleNamespace(view_up=lambda view: None, failed=lambda view: False)

    def mount(self, call_id: int, entry: Any, template: Any, trust: str = "unchecked", instance: str | None = None,
              widget_state: dict[str, Any] | None = None, replaces: str | None = None) -> ViewDriver:
        self._n += 1
        handle = f"h{self._n}"
        spec = vs.ViewSpec(server="srv", tool=entry, html="<p>hi</p>", call_id=call_id, csp={}, permissions={},
                           allow="", app_tools=frozenset({"show"}), all_tools=frozenset({"show"}),
                           widget_state=widget_state)
        session = vs.ViewSession(spec, vs.HostEnvironment(), self.host.limits)
        view = ViewDriver(SimpleNamespace(handle=handle, template=template, origin="http://srv.localhost:1"),
                          session, self.ports, call_id, instance, trust=trust)  # type: ignore[arg-type]
        self.live[handle] = view
        self.sent.append(("mount", handle, replaces))
        self.lazy.mounted(view)
        return view

    def replay(self, view: ViewDriver, arguments: Any, result: Any, cancelled: Any) -> None:
        self.replayed.append((view.handle, arguments, result, cancelled))

    def _send(self, frame: Any) -> None:
        if isinstance(frame, f.ViewPost):
            self.posted.setdefault(frame.view, []).append(frame.message)
        self.sent.append(frame)

    def forget(self, view: ViewDriver, remove: bool) -> None:
        self.forgotten.append(view.handle)
        self.live.pop(view.handle, None)
        self.lazy.forget(view.handle)


def shown(views: FakeViews, call_id: int) -> ViewDriver:
    """A view mounted, through its handshake, given its input and result."""
    view = views.mount(call_id, TOOL, template=f"template-{call_id}", trust="trusted", instance=f"i{call_id}")
    s = view.session
    s.receive({"jsonrpc": "2.0", "method": "ui/notifications/sandbox-proxy-ready"})
    s.receive({"jsonrpc": "2.0", "id": 0, "method": "ui/initialize", "params": {
        "appInfo": {}, "appCapabilities": {"availableDisplayModes": ["pip"]}}})
    s.receive({"jsonrpc": "2.0", "method": "ui/notifications/initialized"})
    s.tool_input({"n": call_id})
    s.tool_result({"content": [], "structuredContent": {"n": call_id}})
    return view


def teardown_request(views: FakeViews, handle: str) -> dict[str, Any]:
    [msg] = [m for m in views.posted.get(handle, []) if m.get("method") == "ui/resource-teardown"]
    return msg


@pytest.mark.anyio
async def test_a_view_out_of_sight_is_asked_to_tear_down_and_waits_as_a_placeholder_until_it_answers():
    views = FakeViews(max_live=2)
    a, b = shown(views, 1), shown(views, 2)
    await views.lazy.visibility(a.handle, False)
    assert a.handle not in views.posted  # within the limit: nothing happens
    c = shown(views, 3)
    # Three running, two allowed: the one out of sight is asked to tear down, and nothing else.
    request = teardown_request(views, a.handle)
    assert request["params"] == {"reason": PARK_REASON}
    assert b.handle not in views.posted and c.handle not in views.posted
    assert a.handle in views.live and not any(isinstance(m, f.ViewParked) for m in views.sent)
    # Its reply: it is put away, and the page keeps a placeholder instead of a closed view.
    a.drive(ev.FromView({"jsonrpc": "2.0", "id": request["id"], "result": {}}))
    assert a.handle not in views.live and a.handle in views.lazy.parked
    assert f.ViewParked(view=a.handle) in views.sent

    # In sight again: mounted in the placeholder's place and given the same input and result.
    async def back() -> ViewDriver | None:
        await views.lazy.visibility(b.handle, False)
        return await views.lazy.unpark(a.handle)
    new = await back()
    assert new is not None and ("mount", new.handle, a.handle) in views.sent
    assert new.mounted.template == "template-1" and new.trust == "trusted" and new.instance == "i1"
    assert (new.handle, {"n": 1}, {"content": [], "structuredContent": {"n": 1}}, None) in views.replayed
    assert a.handle not in views.lazy.parked
    # Mounting it made one too many: b, out of sight, is asked in turn.
    teardown_request(views, b.handle)


@pytest.mark.anyio
async def test_a_view_that_never_answers_is_put_away_when_the_teardown_times_out():
    views = FakeViews(max_live=1)
    a = shown(views, 1)
    await views.lazy.visibility(a.handle, False)
    shown(views, 2)
    teardown_request(views, a.handle)
    a.drive(ev.TeardownTimedOut())
    assert a.handle in views.lazy.parked


@pytest.mark.anyio
async def test_views_in_pip_busy_or_still_waiting_for_their_result_keep_running():
    views = FakeViews(max_live=1)
    pip, busy = shown(views, 1), shown(views, 2)
    pip.session.set_display_mode("pip")
    busy.session.receive({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "show",
                                                                                      "arguments": {}}})
    waiting = views.mount(3, TOOL, template="t3")
    s = waiting.session
    s.receive({"jsonrpc": "2.0", "method": "ui/notifications/sandbox-proxy-ready"})
    s.receive({"jsonrpc": "2.0", "id": 0, "method": "ui/initialize", "params": {"appInfo": {}, "appCapabilities": {}}})
    s.receive({"jsonrpc": "2.0", "method": "ui/notifications/initialized"})
    s.tool_input({"n": 3})
    for view in (pip, busy, waiting):
        await views.lazy.visibility(view.handle, False)
    assert not views.posted.get(pip.handle) and not views.posted.get(waiting.handle)
    assert not any(m.get("method") == "ui/resource-teardown" for m in views.posted.get(busy.handle, []))
    # Once it has its result, the waiting one may go: it is the longest out of sight that may.
    waiting.drive(ev.ToolResult({"content": []}))
    await views.lazy.visibility(waiting.handle, False)
    teardown_request(views, waiting.handle)


@pytest.mark.anyio
async def test_a_replayed_placeholder_is_mounted_once_when_it_comes_into_sight():
    views = FakeViews(max_live=1)
    calls: list[str] = []

    async def restore(replaces: str) -> ViewDriver | None:
        calls.append(replaces)
        return None

    handle = views.lazy.add_placeholder(4, "srv", "show", "http://srv.localhost:1", restore)
    [frame] = [m for m in views.sent if isinstance(m, f.ViewMount)]
    assert frame.parked and frame.proxy_url is None and frame.view == handle
    await views.lazy.visibility(handle, False)
    assert calls == []  # out of sight: still a placeholder
    await views.lazy.visibility(handle, True)
    await views.lazy.visibility(handle, True)  # a second report while it mounts
    assert calls == [handle] and handle not in views.lazy.parked


@pytest.mark.anyio
async def test_a_view_mounted_on_the_way_past_is_put_away_once_it_has_started():
    """Placeholders the page scrolls through are mounted; still starting, they cannot be torn down
    then, and must not stay running out of sight once they are up."""
    views = FakeViews(max_live=1)
    end = shown(views, 1)
    passed = views.mount(2, TOOL, template="template-2")  # a placeholder scrolled past, starting
    await views.lazy.visibility(passed.handle, False)
    # Two running, one allowed: the end of the conversation is in sight and the other still starting.
    assert not views.posted.get(passed.handle) and not views.posted.get(end.handle)
    s = passed.session
    s.receive({"jsonrpc": "2.0", "method": "ui/notifications/sandbox-proxy-ready"})
    passed.drive(ev.FromView({"jsonrpc": "2.0", "id": 0, "method": "ui/initialize", "params": {
        "appInfo": {}, "appCapabilities": {}}}))
    passed.drive(ev.FromView({"jsonrpc": "2.0", "method": "ui/notifications/initialized"}))
    teardown_request(views, passed.handle)
    assert not [m for m in views.posted.get(end.handle, []) if m.get("method") == "ui/resource-teardown"]
