"""Accessibility of everything the host draws (WCAG 2.2 AA), checked with axe-core in each state of the
console: empty, a conversation with views, each consent dialog (sampling included), elicitation, the trust
prompt, fullscreen, pip, the pinned panel, a view's own calls (closed and open), the inspector, the tool picker,
and the admin page. The views' own documents are the servers' and are not scanned; the frames the host puts
them in are.

Also: each view's frames are named after server and tool, dialogs trap the focus and give it back,
calling a tool and answering its consent works with keys alone, and the person's reduced-motion and
contrast preferences reach the page and the views' host context."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from harness import REPO, HostLauncher, call_tool, click_in_page, open_inspector, view_frame, wait_view
from playwright.sync_api import Locator, Page, expect

from tests.modelfakes import openai_fake, text

pytestmark = pytest.mark.browser

FIXTURES = REPO / "tests" / "fixtures" / "servers.py"
DISPLAY = f"{sys.executable} {REPO / 'tests' / 'fixtures' / 'display_server.py'}"
BLOCKING = ("serious", "critical")
# The views' documents are the servers' own: axe stays out of the frames (the host's <iframe>
# elements themselves, their names included, are checked like the rest of the page).
AXE_OPTIONS = {"iframes": False, "resultTypes": ["violations"],
               "runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa",
                                                     "best-practice"]}}
AXE = Axe()


def cmd(kind: str) -> str:
    return shlex.join([sys.executable, str(FIXTURES), kind])


def axe_findings(page: Page) -> list[dict[str, object]]:
    """The violations axe finds on the page as it is now."""
    return list(AXE.run(page, options=AXE_OPTIONS).response["violations"])


def assert_accessible(page: Page, state: str) -> None:
    """No serious or critical violation; the message names each rule and the elements it found."""
    findings = axe_findings(page)
    blocking = [v for v in findings if v.get("impact") in BLOCKING]
    count = sum(len(v["nodes"]) for v in blocking)  # type: ignore[arg-type]
    print(f"axe {state}: {count} serious or critical, {sum(len(v['nodes']) for v in findings)} in all",  # type: ignore[arg-type]
          sorted({f"{v['id']} ({v['impact']})" for v in findings}))
    lines = [f"{v['id']} ({v['impact']}): {v['help']} -> {node['target']}"  # type: ignore[index]
             for v in blocking for node in v["nodes"]]  # type: ignore[attr-defined]
    assert not lines, f"{state}: {count} serious or critical axe violations:\n" + "\n".join(lines)


def consent(page: Page, kind: str) -> Locator:
    dialog = page.locator(f'[data-testid=consent][data-kind="{kind}"]')
    dialog.wait_for(timeout=20_000)
    expect(dialog.locator("[data-testid=consent-allow], [data-testid=elicit-accept]").first).to_be_enabled()
    return dialog


def tab_into(page: Page, dialog: Locator) -> None:
    for _ in range(10):
        if dialog.evaluate("d => d.contains(document.activeElement)"):
            return
        page.keyboard.press("Tab")
    raise AssertionError("Tab never reached the dialog")


def answer_by_keyboard(page: Page, dialog: Locator, button: str) -> None:
    """Tab into the dialog and press Enter on ``button``: it closes and the focus is back in the chat box."""
    tab_into(page, dialog)
    dialog.get_by_test_id(button).press("Enter")
    expect(dialog).to_have_count(0)
    expect(page.locator("[data-testid=chat-input]")).to_be_focused()


def view_names(page: Page) -> list[str]:
    """The titles of every view frame (host proxy frames and the views' frames inside them)."""
    outer = page.locator("[data-testid=view] iframe.proxy").evaluate_all("els => els.map(e => e.title)")
    inner = [f.frame_element().get_attribute("title") or "" for f in page.frames
             if f.parent_frame is not None and f.parent_frame.parent_frame is not None]
    return [*outer, *inner]


# --------------------------------------------------------------------------- axe, state by state


def test_empty_console_and_a_conversation_with_views(start_host: HostLauncher,
                                                      page_for: Callable[..., Page]) -> None:
    page = page_for(start_host({"rec": cmd("rec"), "fx": cmd("checks")}))
    assert_accessible(page, "empty")
    call_tool(page, "rec", "record", {"action": "none", "text": "hi"})
    wait_view(page, "rec", "record")
    call_tool(page, "fx", "good", {})
    wait_view(page, "fx", "good")
    assert_accessible(page, "conversation with views")
    # Each frame of each view is named after its server and tool.
    names = view_names(page)
    assert len(names) >= 4, names  # each view's proxy frame and its own frame (a page may hold spares)
    for name in names:
        assert ("rec" in name and "record" in name) or ("fx" in name and "good" in name), names


@pytest.mark.parametrize("kind,args", [
    ("tool-call", {"action": "call", "tool": "write-note", "text": "x"}),
    ("message", {"action": "message", "text": "hello"}),
    ("open-link", {"action": "open", "text": "https://example.com/page"}),
    ("download", {"action": "download", "text": "file"}),
])
def test_consent_dialogs(start_host: HostLauncher, page_for: Callable[..., Page], kind: str,
                         args: dict[str, str]) -> None:
    page = page_for(start_host({"rec": cmd("rec")}))
    call_tool(page, "rec", "record", args)
    dialog = consent(page, kind)
    assert_accessible(page, f"consent {kind}")
    # The chat box keeps the caret of someone typing; Tab from it reaches the dialog, which then holds
    # the focus while it is open; answered, the focus goes back where it was.
    tab_into(page, dialog)
    for _ in range(8):
        page.keyboard.press("Tab")
        assert dialog.evaluate("d => d.contains(document.activeElement)"), "Tab left the dialog"
    for _ in range(8):
        page.keyboard.press("Shift+Tab")
        assert dialog.evaluate("d => d.contains(document.activeElement)"), "Shift+Tab left the dialog"
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    expect(page.locator("[data-testid=chat-input]")).to_be_focused()


def test_sampling_consent(start_host: HostLauncher, page_for: Callable[..., Page], tmp_path: Path) -> None:
    # A view asking the host's model (sampling is offered only with a model configured and the server enabled).
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"mcpServers": {"rec": {"command": sys.executable, "args": [str(FIXTURES), "rec"]}},
                                  "sampling": {"rec": {"enabled": True}}}))
    with openai_fake.serve_script([[text("never asked")]]) as fake:
        page = page_for(start_host(config=config, extra_args=["--model", "openai:fake",
                                                              "--model-base-url", fake.base_url]))
        call_tool(page, "rec", "record", {"action": "sample", "text": "write a haiku"})
        dialog = consent(page, "sampling")
        assert_accessible(page, "consent sampling")
        answer_by_keyboard(page, dialog, "consent-deny")
        assert not fake.requests  # declined: the model was never asked


def test_elicitation(start_host: HostLauncher, page_for: Callable[..., Page]) -> None:
    page = page_for(start_host({"dual": cmd("dual")}))
    call_tool(page, "dual", "ask-name", {})
    dialog = consent(page, "elicit")
    assert_accessible(page, "elicitation")
    answer_by_keyboard(page, dialog, "elicit-cancel")


def test_trust_prompt(start_host: HostLauncher, page_for: Callable[..., Page], tmp_path: Path) -> None:
    from test_rules import fixture_config

    db = ["--db", f"sqlite:///{tmp_path}/trust.db"]
    host = start_host(config=fixture_config(tmp_path, {"ver": "ver"}, {"TEMPLATE_VERSION": "1"}), extra_args=db)
    page = page_for(host)
    call_tool(page, "ver", "ver-view", {})
    wait_view(page, "ver", "ver-view")
    host.close()
    (tmp_path / "v2").mkdir()
    again = start_host(config=fixture_config(tmp_path / "v2", {"ver": "ver"}, {"TEMPLATE_VERSION": "2"}),
                       extra_args=db)
    page2 = page_for(again, new_conversation=True)
    call_tool(page2, "ver", "ver-view", {})
    page2.locator("[data-testid=trust-notice]").wait_for(timeout=20_000)
    assert_accessible(page2, "trust prompt")


def test_fullscreen_pip_and_pinned_panel(start_host: HostLauncher, page_for: Callable[..., Page]) -> None:
    page = page_for(start_host({"display": DISPLAY}))
    page.set_viewport_size({"width": 1400, "height": 900})
    call_tool(page, "display", "modes-view", {"n": 1})
    view = wait_view(page, "display", "modes-view")
    click_in_page(view.locator("[data-testid=view-mode-fullscreen]"))
    expect(view).to_have_attribute("data-display-mode", "fullscreen")
    assert_accessible(page, "fullscreen")
    view.locator("[data-testid=fullscreen-close]").click()
    expect(view).to_have_attribute("data-display-mode", "inline")
    click_in_page(view.locator("[data-testid=view-mode-pip]"))
    expect(view).to_have_attribute("data-display-mode", "pip")
    assert_accessible(page, "pip")
    click_in_page(view.locator("[data-testid=view-exit-mode]"))
    expect(view).to_have_attribute("data-display-mode", "inline")
    click_in_page(view.locator("[data-testid=view-pin]"))
    expect(page.locator("[data-testid=pinned-panel]")).to_be_visible()
    assert_accessible(page, "pinned panel")


def test_a_views_own_calls_closed_and_opened_by_keyboard(start_host: HostLauncher,
                                                          page_for: Callable[..., Page]) -> None:
    page = page_for(start_host({"rec": cmd("rec")}))
    call_tool(page, "rec", "record", {"action": "calls", "tool": "rec-app-only", "text": "x", "n": 3})
    frame = view_frame(wait_view(page, "rec", "record"))
    expect(frame.locator('[data-check="calls-done"]')).to_have_text("3", timeout=20_000)
    line = page.locator("[data-testid=view-calls]")
    expect(line.locator("[data-testid=view-calls-count]")).to_have_text("3 calls from its view")
    assert_accessible(page, "a view's own calls, closed")
    line.locator(":scope > summary").focus()
    page.keyboard.press("Enter")
    expect(line.locator("[data-testid=call]").first).to_be_visible()
    assert_accessible(page, "a view's own calls, open")


def test_inspector(start_host: HostLauncher, page_for: Callable[..., Page]) -> None:
    page = page_for(start_host({"fx": cmd("checks")}))
    call_tool(page, "fx", "good", {})
    view = wait_view(page, "fx", "good")
    inspector = open_inspector(view)
    expect(inspector).to_be_visible()
    expect(inspector.locator("[data-testid=inspector-record]").first).to_be_attached()
    inspector.locator("[data-testid=inspector-record] .inspector-row").first.click()  # one expanded too
    expect(inspector.locator("[data-testid=inspector-json]").first).to_be_visible()
    assert_accessible(page, "inspector")


def test_tool_picker(start_host: HostLauncher, page_for: Callable[..., Page]) -> None:
    page = page_for(start_host({"rec": cmd("rec")}))
    opener = page.locator("[data-testid=server][data-server=rec] [data-testid=tool][data-tool=write-note]")
    if not opener.is_visible():
        page.locator("[data-testid=server][data-server=rec] .server-head").click()
    opener.click()
    picker = page.locator("[data-testid=picker]")
    expect(picker).to_be_visible()
    assert_accessible(page, "tool picker")
    assert picker.evaluate("d => d.contains(document.activeElement)")
    for _ in range(8):
        page.keyboard.press("Tab")
        assert picker.evaluate("d => d.contains(document.activeElement)"), "Tab left the picker"
    page.keyboard.press("Escape")
    expect(picker).to_be_hidden()
    expect(opener).to_be_focused()


def test_admin_page(start_host: HostLauncher, page_for: Callable[..., Page]) -> None:
    host = start_host({"rec": cmd("rec")})
    page = page_for(host)
    page.goto(f"{host.origin}/admin")
    page.locator("[data-testid=admin-server]").first.wait_for(timeout=20_000)
    assert_accessible(page, "admin")
    page.locator("[data-testid=admin-add]").click()
    expect(page.locator("[data-testid=admin-editor]")).to_be_visible()
    assert_accessible(page, "admin editor")


# --------------------------------------------------------------------------- keyboard alone


def test_calling_a_tool_answering_its_consent_and_reading_the_result_by_keyboard_alone(
        start_host: HostLauncher, page_for: Callable[..., Page]) -> None:
    page = page_for(start_host({"rec": cmd("rec")}))
    keys = page.keyboard
    # "/" puts the focus in the chat box; the call is typed and sent with Enter.
    page.locator("body").focus()
    keys.press("/")
    box = page.locator("[data-testid=chat-input]")
    expect(box).to_be_focused()
    keys.type("/call rec record " + json.dumps({"action": "call", "tool": "write-note", "text": "by keys"}))
    keys.press("Enter")
    # The view asks to call write-note: the dialog takes the focus, Tab reaches Allow, Enter answers.
    dialog = consent(page, "tool-call")
    expect(dialog).to_contain_text("write-note")
    for _ in range(12):
        if dialog.locator("[data-testid=consent-allow]").evaluate("b => b === document.activeElement"):
            break
        keys.press("Tab")
    expect(dialog.locator("[data-testid=consent-allow]")).to_be_focused()
    keys.press("Enter")
    expect(dialog).to_have_count(0)
    expect(box).to_be_focused()
    # The result: the view shows the note's answer, and Shift+Tab from the chat box reaches the call
    # card's view frame, whose name says which server and tool it is.
    item = view_frame(wait_view(page, "rec", "record")).locator('[data-check="call"]')
    expect(item).to_contain_text("noted by keys")
    for _ in range(40):
        keys.press("Shift+Tab")
        if page.evaluate("() => document.activeElement?.tagName") == "IFRAME":
            break
    focused = page.evaluate("() => document.activeElement?.title ?? ''")
    assert "rec" in focused and "record" in focused, focused


# --------------------------------------------------------------------------- announcements and preferences


def test_call_status_and_new_messages_are_announced_politely(start_host: HostLauncher,
                                                             page_for: Callable[..., Page]) -> None:
    page = page_for(start_host({"rec": cmd("rec")}))
    call_tool(page, "rec", "write-note", {"text": "x"})
    card = page.locator("[data-testid=call]").last
    expect(card).not_to_have_attribute("data-state", "running")
    # The card's status and the conversation itself are polite live regions.
    assert card.locator("[aria-live=polite], [role=status]").count() >= 1 or \
        card.evaluate("c => !!c.closest('[aria-live=polite]')")
    assert page.locator("[data-testid=conversation][aria-live=polite]").count() == 1


def test_reduced_motion_and_contrast_reach_the_page_and_the_views_context(
        start_host: HostLauncher, page_for: Callable[..., Page]) -> None:
    host = start_host({"fx": cmd("checks")})
    page = page_for(host)
    page.emulate_media(reduced_motion="reduce", contrast="more")
    page.reload()
    page.locator("[data-testid=chat-input]").wait_for()
    # The page knows (its own motion is off) and tells the host, which tells the view.
    assert page.evaluate("matchMedia('(prefers-reduced-motion: reduce)').matches")
    duration = page.locator("[data-testid=chat-input]").evaluate(
        "e => getComputedStyle(e).transitionDuration")
    assert all(float(d.rstrip("s")) <= 0.01 for d in duration.split(",")), duration
    call_tool(page, "fx", "good", {})
    view = wait_view(page, "fx", "good")
    shown = open_inspector(view).locator("[data-testid=inspector-context]")
    expect(shown).to_contain_text('"prefersReducedMotion": true')  # the view's context, as sent
    context = json.loads(shown.text_content() or "")
    assert context["mcp-apps-host/accessibility"] == {
        "prefersReducedMotion": True, "prefersContrast": "more", "forcedColors": False}, context

    # Changed while the page is open (a system setting): the open view is told, without a reload.
    page.emulate_media(reduced_motion="no-preference", contrast="no-preference", forced_colors="active")
    expect(shown).to_contain_text('"forcedColors": true', timeout=15_000)
    context = json.loads(shown.text_content() or "")
    assert context["mcp-apps-host/accessibility"] == {
        "prefersReducedMotion": False, "prefersContrast": "no-preference", "forcedColors": True}, context
    # The view itself heard it (its bridge reports each host-context-changed).
    expect(view_frame(view).locator('[data-check="context"]').last).to_contain_text('"forcedColors":true')
