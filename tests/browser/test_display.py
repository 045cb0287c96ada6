"""Display modes in a real browser: inline, fullscreen and pip, only when the view declared them,
switched by the view or from its header, announced with the container's new dimensions, and never
reloading the view (a value typed into it is still there, its document was loaded once)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from harness import (
    REPO,
    HostLauncher,
    call_tool,
    click_in_page,
    open_inspector,
    start_new_conversation,
    view_frame,
    wait_view,
)
from playwright.sync_api import FrameLocator, Locator, Page, expect

pytestmark = pytest.mark.browser

DISPLAY = f"{sys.executable} {REPO / 'tests' / 'fixtures' / 'display_server.py'}"


def box(locator: Locator) -> dict[str, float]:
    b = locator.bounding_box()
    assert b is not None, "not drawn"
    return b


def dims(view: Locator) -> dict[str, int]:
    text = view_frame(view).locator("#dims").inner_text()
    return json.loads(text) if text else {}


def leave_view_focus(page: Page) -> None:
    """Keys go to the page again (a click into the view gives its frame the focus)."""
    page.evaluate("() => { if (document.activeElement instanceof HTMLElement) document.activeElement.blur(); }")


def drag_released_past_its_moves(page: Page, at: tuple[float, float], by: tuple[float, float],
                                 then: tuple[float, float]) -> None:
    """Presses the left button at `at`, moves `by` in five steps, and releases `then` further on with no move
    before it: what a busy browser leaves of a drag when it coalesces the last moves away. Sent over a DevTools
    session, since Playwright's mouse releases only where it last moved."""
    cdp = page.context.new_cdp_session(page)

    def send(kind: str, x: float, y: float, buttons: int) -> None:
        cdp.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left",
                                              "buttons": buttons, "clickCount": 1})

    x, y = at
    send("mouseMoved", x, y, 0)
    send("mousePressed", x, y, 1)
    for step in range(1, 6):
        send("mouseMoved", x + by[0] * step / 5, y + by[1] * step / 5, 1)
    send("mouseReleased", x + by[0] + then[0], y + by[1] + then[1], 0)
    cdp.detach()


def modes_view(start_host: HostLauncher, page_for: Callable[..., Page]) -> tuple[Page, Locator, FrameLocator]:
    """A 1200 by 800 page with the view that declares every mode, called once: the page, the view, its app."""
    page = page_for(start_host({"display": DISPLAY}))
    page.set_viewport_size({"width": 1200, "height": 800})
    call_tool(page, "display", "modes-view", {"n": 1})
    view = wait_view(page, "display", "modes-view")
    return page, view, view_frame(view)


def test_declared_modes_switch_without_reloading_the_view(
        start_host: HostLauncher, page_for: Callable[..., Page]) -> None:
    page, view, app = modes_view(start_host, page_for)
    expect(app.locator("#result")).to_contain_text('"n":1')
    app.locator("#typed").fill("typed before any switch")

    # The header offers the three modes the view declared.
    for mode in ("inline", "fullscreen", "pip"):
        expect(view.locator(f"[data-testid=view-mode-{mode}]")).to_be_visible()
    inline_box = box(view)

    # Fullscreen from the header: the container covers the page, the view hears the mode with the
    # space its frame has, and the conversation keeps the view's place.
    click_in_page(view.locator("[data-testid=view-mode-fullscreen]"))
    expect(view).to_have_attribute("data-display-mode", "fullscreen")
    expect(app.locator("#mode")).to_have_text("fullscreen")
    full = box(view)
    assert (full["x"], full["y"], full["width"], full["height"]) == (0, 0, 1200, 800), full
    frame_box = box(view.locator(".view-frame"))
    expect(app.locator("#dims")).not_to_have_text("")
    seen = dims(view)
    assert seen == {"width": round(frame_box["width"]), "height": round(frame_box["height"])}, (seen, frame_box)
    assert json.loads(app.locator("#insets").inner_text()) == {"top": 0, "right": 0, "bottom": 0, "left": 0}
    slot = page.locator("[data-testid=view-mode-slot]")
    expect(slot).to_have_count(1)
    assert abs(box(slot)["height"] - inline_box["height"]) < 1

    # The close control is the page's, drawn above the view's frame, and the frame cannot reach it.
    close = view.locator("[data-testid=fullscreen-close]")
    expect(close).to_be_visible()
    # The header's way back to inline is there too, in fullscreen as in pip (and not when inline).
    expect(view.locator("[data-testid=view-exit-mode]")).to_be_visible()
    assert box(close)["y"] + box(close)["height"] <= frame_box["y"]

    # A theme toggle reaches the fullscreen view as a context change, not a reload.
    page.locator("[data-testid=theme-toggle]").dispatch_event("click")
    expect(app.locator("#theme")).to_have_text("dark")
    expect(view).to_have_attribute("data-display-mode", "fullscreen")
    expect(app.locator("#typed")).to_have_value("typed before any switch")
    expect(app.locator("#loads")).to_have_text("1")

    # Escape leaves fullscreen; the view is told it is inline again, with a flexible height.
    leave_view_focus(page)
    page.keyboard.press("Escape")
    expect(view).to_have_attribute("data-display-mode", "inline")
    expect(app.locator("#mode")).to_have_text("inline")
    expect(slot).to_have_count(0)
    expect(app.locator("#dims")).to_contain_text("maxHeight")
    expect(view.locator("[data-testid=view-exit-mode]")).to_be_hidden()
    assert box(view)["width"] == pytest.approx(inline_box["width"], abs=1)

    # The view asks for fullscreen itself; the page's close control takes it back.
    app.locator("#fs").click()
    expect(app.locator("#granted")).to_have_text("fullscreen")
    expect(view).to_have_attribute("data-display-mode", "fullscreen")
    close.click()
    expect(view).to_have_attribute("data-display-mode", "inline")
    expect(app.locator("#mode")).to_have_text("inline")

    expect(app.locator("#typed")).to_have_value("typed before any switch")
    expect(app.locator("#loads")).to_have_text("1")
    events = app.locator("#events li")
    announced = [json.loads(t) for t in events.all_inner_texts()]
    modes = [e["displayMode"] for e in announced if "displayMode" in e]
    assert modes == ["fullscreen", "inline", "fullscreen", "inline"], announced
    assert all("containerDimensions" in e for e in announced if "displayMode" in e), announced


def test_pip_stays_in_sight_while_the_conversation_scrolls_and_can_be_moved_and_resized(
        start_host: HostLauncher, page_for: Callable[..., Page]) -> None:
    page, view, app = modes_view(start_host, page_for)
    app.locator("#typed").fill("kept in pip")
    # The view asks for pip itself.
    app.locator("#pip").click()
    expect(app.locator("#granted")).to_have_text("pip")
    expect(view).to_have_attribute("data-display-mode", "pip")
    expect(app.locator("#mode")).to_have_text("pip")

    # Enough conversation below to scroll the view's place far out of sight.
    for n in range(2, 8):
        call_tool(page, "display", "inline-view", {"n": n})
        expect(page.locator("[data-testid=view][data-tool=inline-view][data-state=ready]")).to_have_count(n - 1)
    conversation = page.locator("[data-testid=conversation]")
    before = box(view)
    for top in ("0", "el.scrollHeight"):
        conversation.evaluate(f"el => {{ el.scrollTop = {top}; }}")
        after = box(view)
        assert (after["x"], after["y"], after["width"], after["height"]) == (
            before["x"], before["y"], before["width"], before["height"]), (before, after)
        assert after["y"] >= 0 and after["y"] + after["height"] <= 800
    slot = page.locator("[data-testid=view-mode-slot]")
    conversation.evaluate("el => { el.scrollTop = el.scrollHeight; }")
    expect(slot).not_to_be_in_viewport()
    expect(view).to_be_in_viewport()

    # Moved by its header to where the pointer is released, resized by its corner; the view hears its new size.
    h = box(view.locator(".view-source"))
    drag_released_past_its_moves(page, (h["x"] + 40, h["y"] + h["height"] / 2), by=(-340, -200), then=(-30, -20))
    moved = box(view)
    assert (moved["x"], moved["y"]) == pytest.approx((before["x"] - 370, before["y"] - 220), abs=2), (before, moved)
    old = dims(view)
    page.mouse.move(moved["x"] + moved["width"] - 3, moved["y"] + moved["height"] - 3)
    page.mouse.down()
    page.mouse.move(moved["x"] + moved["width"] + 97, moved["y"] + moved["height"] + 57, steps=5)
    page.mouse.up()
    grown = box(view)
    assert grown["width"] > moved["width"] + 20 and grown["height"] > moved["height"] + 20, (moved, grown)
    frame_box = box(view.locator(".view-frame"))
    expect(app.locator("#dims")).to_have_text(json.dumps({"width": round(frame_box["width"]),
                                                          "height": round(frame_box["height"])},
                                                         separators=(",", ":")))
    assert dims(view)["width"] > old["width"] + 20

    # Back inline from the header, in its place in the conversation, never reloaded.
    click_in_page(view.locator("[data-testid=view-mode-inline]"))
    expect(view).to_have_attribute("data-display-mode", "inline")
    expect(slot).to_have_count(0)
    expect(app.locator("#typed")).to_have_value("kept in pip")
    expect(app.locator("#loads")).to_have_text("1")


def test_undeclared_modes_are_neither_offered_nor_granted(
        start_host: HostLauncher, page_for: Callable[..., Page]) -> None:
    host = start_host({"display": DISPLAY})
    page = page_for(host)
    call_tool(page, "display", "inline-view", {"n": 1})
    view = wait_view(page, "display", "inline-view")
    app = view_frame(view)
    expect(app.locator("#result")).to_contain_text('"n":1')
    # Nothing to switch to: the header has no mode controls.
    expect(view.locator("[data-testid=view-modes]")).to_be_hidden()
    expect(view.locator("[data-testid=view-mode-fullscreen]")).to_be_hidden()
    # The view asks anyway: the reply is the mode in effect, and nothing moves.
    app.locator("#fs").click()
    expect(app.locator("#granted")).to_have_text("inline")
    app.locator("#pip").click()
    expect(app.locator("#granted")).to_have_text("inline")
    expect(view).to_have_attribute("data-display-mode", "inline")
    expect(app.locator("#events li")).to_have_count(0)


def test_a_pinned_view_stays_live_across_conversations_and_comes_back_after_a_reload_and_a_restart(
        start_host: HostLauncher, page_for: Callable[..., Page], tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/keep.db"
    host = start_host({"display": DISPLAY}, extra_args=["--db", db])
    page = page_for(host)
    page.set_viewport_size({"width": 1400, "height": 900})
    call_tool(page, "display", "modes-view", {"n": 1})
    view = wait_view(page, "display", "modes-view")
    app = view_frame(view)
    expect(app.locator("#result")).to_contain_text('"n":1')
    handle = view.get_attribute("data-view")
    app.locator("#typed").fill("typed before pinning")
    first_conversation = page.locator("[data-testid=conversation-item].current").get_attribute("data-id")

    click_in_page(view.locator("[data-testid=view-pin]"))
    panel = page.locator("[data-testid=pinned-panel]")
    expect(panel).to_be_visible()
    expect(view).to_have_attribute("data-pinned", "over")
    # Drawn over its slot in the panel, the frame never moved in the DOM.
    p, v = box(panel), box(view)
    assert p["x"] <= v["x"] and v["x"] + v["width"] <= p["x"] + p["width"] + 1, (p, v)

    # Another conversation, and a turn in it: the same view, live, never reloaded.
    start_new_conversation(page)
    call_tool(page, "display", "inline-view", {"n": 2})
    expect(view_frame(page.locator("[data-testid=view][data-tool=inline-view]")).locator("#result")).to_contain_text(
        '"n":2')
    pinned = page.locator(f'[data-testid=view][data-view="{handle}"]')
    expect(pinned).to_be_visible()
    expect(pinned).to_have_attribute("data-state", "ready")
    expect(view_frame(pinned).locator("#typed")).to_have_value("typed before pinning")
    expect(view_frame(pinned).locator("#loads")).to_have_text("1")
    # Its audit trail goes on under the same handle.
    view_frame(pinned).locator("#inline").click()
    expect(view_frame(pinned).locator("#granted")).to_have_text("inline")
    audit = page.request.get(f"{host.origin}/api/audit?format=json&view={handle}&method=ui/request-display-mode")
    assert [e for e in audit.json()["events"] if e["direction"] == "view->host"], audit.text()
    # Its inspector still opens: the other conversation's views went, not this one's panel.
    expect(open_inspector(pinned)).to_be_visible()
    pinned.locator("[data-testid=view-inspect]").click()

    # Back to its own conversation: it is not mounted a second time.
    page.locator(f'[data-testid=conversation-item][data-id="{first_conversation}"] .conversation-open').click()
    expect(page.locator("[data-testid=conversation-item].current")).to_have_attribute("data-id", first_conversation)
    expect(page.locator("[data-testid=view][data-tool=modes-view]")).to_have_count(1)
    expect(view_frame(pinned).locator("#typed")).to_have_value("typed before pinning")

    # A reload brings it back in the panel, given its input and result again.
    page.reload()
    restored = panel.locator("[data-testid=view][data-tool=modes-view]")
    expect(restored).to_have_attribute("data-state", "ready", timeout=30_000)
    expect(view_frame(restored).locator("#input")).to_have_text('{"n":1}')
    expect(view_frame(restored).locator("#result")).to_contain_text('"n":1')
    expect(page.locator("[data-testid=view][data-tool=modes-view]")).to_have_count(1)

    # So does a restart of the host: the pins are kept per person in the database.
    host.close()
    host = start_host({"display": DISPLAY}, extra_args=["--db", db])
    page = page_for(host)
    panel = page.locator("[data-testid=pinned-panel]")
    restored = panel.locator("[data-testid=view][data-tool=modes-view]")
    expect(restored).to_have_attribute("data-state", "ready", timeout=30_000)
    expect(view_frame(restored).locator("#result")).to_contain_text('"n":1')
    page.locator(f'[data-testid=conversation-item][data-id="{first_conversation}"] .conversation-open').click()
    expect(page.locator("[data-testid=conversation-item].current")).to_have_attribute("data-id", first_conversation)
    expect(page.locator("[data-testid=view][data-tool=modes-view]")).to_have_count(1)

    # Unpinned, it goes back under its call and the panel closes; after a reload it stays there.
    click_in_page(restored.locator("[data-testid=view-pin]"))
    expect(panel).to_be_hidden()
    back = page.locator("[data-testid=call] [data-testid=view][data-tool=modes-view]")
    expect(back).to_have_attribute("data-state", "ready", timeout=30_000)
    expect(view_frame(back).locator("#result")).to_contain_text('"n":1')
    page.reload()
    expect(page.locator("[data-testid=view][data-tool=modes-view]")).to_have_attribute("data-state", "ready")
    expect(panel).to_be_hidden()


def test_a_view_sized_with_100vh_stops_growing_at_the_inline_cap_and_is_told_why(
        start_host: HostLauncher, page_for: Callable[..., Page]) -> None:
    host = start_host({"display": DISPLAY})
    page = page_for(host)
    call_tool(page, "display", "tall-view", {"n": 1})
    view = wait_view(page, "display", "tall-view")
    log = view.locator("[data-testid=view-log]")
    expect(log).to_contain_text("more than inline_max_height (800 px)")
    frame = view.locator("iframe.proxy")
    expect(frame).to_have_js_property("offsetHeight", 800)
    # Settled: the next frames leave it where it is.
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    assert frame.evaluate("el => el.offsetHeight") == 800
    expect(log.locator(".log-line")).to_have_count(1)


def test_the_conversation_does_not_move_when_a_view_above_resizes(
        start_host: HostLauncher, page_for: Callable[..., Page]) -> None:
    host = start_host({"display": DISPLAY})
    page = page_for(host)
    page.set_viewport_size({"width": 1200, "height": 600})
    for n in range(1, 6):
        call_tool(page, "display", "inline-view", {"n": n})
        expect(page.locator("[data-testid=view][data-tool=inline-view][data-state=ready]")).to_have_count(n)
    views = page.locator("[data-testid=view][data-tool=inline-view]")
    # The person reads the fourth view; the first is far above.
    views.nth(3).evaluate("el => el.scrollIntoView({block: 'start'})")
    page.locator("[data-testid=conversation]").evaluate("el => { el.scrollTop -= 20; }")
    before = box(views.nth(3))
    first_frame = views.nth(0).locator("iframe.proxy")
    height = first_frame.evaluate("el => el.offsetHeight")
    view_frame(views.nth(0)).locator("body").evaluate(
        """() => window.parent.postMessage({jsonrpc: "2.0", method: "ui/notifications/size-changed",
                                            params: {height: document.documentElement.scrollHeight + 300}}, "*")""")
    expect(first_frame).to_have_js_property("offsetHeight", height + 300)
    after = box(views.nth(3))
    assert after["y"] == pytest.approx(before["y"], abs=1), (before, after)


def test_the_width_a_view_reports_is_the_least_it_needs_and_never_holds_its_frame_narrow(
        start_host: HostLauncher, page_for: Callable[..., Page]) -> None:
    """A view measures the frame it was given and reports that. Measured before its frame was laid out (a
    frame in another process learns its size late on a busy machine) the width is 0; measured in a narrower
    window, it is that window's. Taken as the frame's width, either would hold the frame there for good: the
    frame fills its place whatever width the view reports, and follows the window."""
    page = page_for(start_host({"display": DISPLAY}))
    page.set_viewport_size({"width": 1200, "height": 800})
    call_tool(page, "display", "inline-view", {"n": 1})
    view = wait_view(page, "display", "inline-view")
    frame = view.locator("iframe.proxy")

    def report(width: int, height: int) -> None:
        view_frame(view).locator("body").evaluate(
            """(_, size) => window.parent.postMessage(
                   {jsonrpc: "2.0", method: "ui/notifications/size-changed", params: size}, "*")""",
            {"width": width, "height": height})
        expect(frame).to_have_js_property("offsetHeight", height)  # the report arrived and was applied

    def fills_its_place() -> None:
        place = frame.evaluate("el => el.parentElement.clientWidth")
        assert place > 300, place
        expect(frame).to_have_js_property("offsetWidth", place)

    report(0, 321)
    fills_its_place()
    page.set_viewport_size({"width": 900, "height": 800})
    report(frame.evaluate("el => el.offsetWidth"), 322)
    page.set_viewport_size({"width": 1200, "height": 800})
    fills_its_place()
