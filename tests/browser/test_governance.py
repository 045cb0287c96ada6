"""Admins govern the servers while the host runs, in a real browser: the embed example (its own sign-in,
two workers, PostgreSQL), its admin adding and changing servers on the admin page, and people in two
groups seeing, calling and being refused what those changes say."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from embedded import embed_example, fixture_entry, server_names, sign_in, worker_of, worker_pids
from harness import answer_consent, call_tool, start_new_conversation, view_frame, wait_view
from playwright.sync_api import Browser, Locator, Page, expect

from tests.modelfakes import openai_fake, streamed_call, text
from tests.modelfakes._server import FakeServer

pytestmark = pytest.mark.browser

DEADLINE = 60.0  # seconds: a change reaches every worker within seconds; a busy machine gets more


# The model's one scripted turn (in the read-only test): it calls a tool the rule refuses, then says so.
MODEL_SCRIPT = [[*streamed_call("notes__write-note", json.dumps({"text": "by the model"}))],
                [text("The note was refused.")]]


@pytest.fixture(scope="module")
def model() -> Iterator[FakeServer]:
    with openai_fake.serve_script(MODEL_SCRIPT) as fake:
        yield fake


@pytest.fixture(scope="module")
def team(postgres, model: FakeServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The example with one server from its config file (`rec`, read-only on the admin page) and a model."""
    with embed_example(postgres, tmp_path_factory.mktemp("team"), {"rec": fixture_entry("rec")},
                       model={"spec": "openai:fake", "baseUrl": model.base_url}) as base:
        yield base


def open_admin(chromium: Browser, base: str) -> Page:
    """The tenant's admin on the admin page, reached by the console's link."""
    page = sign_in(chromium, base, "admin")
    page.locator("[data-testid=admin-link]").click()
    page.locator("[data-testid=admin]").wait_for()
    expect(admin_row(page, "rec")).to_have_attribute("data-source", "config")
    return page


def admin_row(admin: Page, name: str) -> Locator:
    return admin.locator(f"[data-testid=admin-server][data-server={name}]")


def save_server(admin: Page, name: str, *, entry: dict | None = None, groups: str | None = None,
                mode: str | None = None, views: dict[str, str] | None = None) -> Locator:
    """Add ``name`` (with ``entry``) or change it, on the admin page's editor."""
    if entry is not None:
        admin.locator("[data-testid=admin-add]").click()
        admin.locator("[data-testid=admin-name]").fill(name)
        admin.locator("[data-testid=admin-entry]").fill(json.dumps(entry))
    else:
        admin_row(admin, name).locator("[data-testid=admin-edit]").click()
    if groups is not None:
        admin.locator("[data-testid=admin-groups]").fill(groups)
    if mode is not None:
        admin.locator("[data-testid=admin-tools-mode]").select_option(mode)
    for key, rule in (views or {}).items():
        admin.locator(f"[data-testid=admin-view-{key}]").select_option(rule)
    admin.locator("[data-testid=admin-save]").click()
    expect(admin.locator("[data-testid=admin-editor]")).to_be_hidden()
    return admin_row(admin, name)


def wait_server(page: Page, name: str) -> None:
    """Until this person's page shows ``name`` connected (it appears without a reload)."""
    expect(page.locator(f"[data-testid=server][data-server={name}]")).to_have_attribute(
        "data-status", "ready", timeout=DEADLINE * 1000)


def call_until(page: Page, server: str, tool: str, args: dict, settled: str, what: str) -> str:
    """Call until the card's text says ``settled``: an admin's change reaches the worker within seconds,
    and a call made before it runs under the old rule. Returns the card's text."""
    deadline = time.monotonic() + DEADLINE
    # What a call leaves: its card, or a notice when the server is reconnecting after the change.
    answers = page.locator("[data-testid=call], [data-testid=notice][data-level=error]")
    while True:
        before = answers.count()
        call_tool(page, server, tool, args)
        answer = answers.nth(before)
        expect(answer).not_to_have_attribute("data-state", "running", timeout=DEADLINE * 1000)
        text = answer.inner_text()
        if settled in text:
            return text
        assert time.monotonic() < deadline, f"waited {DEADLINE:.0f} s for {what}; the last call said {text!r}"


def say(page: Page, line: str) -> None:
    box = page.locator("[data-testid=chat-input]")
    box.fill(line)
    box.press("Enter")


def view_check(page: Page, server: str, tool: str, name: str) -> str:
    item = view_frame(wait_view(page, server, tool)).locator(f'[data-check="{name}"]')
    item.wait_for(state="attached", timeout=DEADLINE * 1000)  # a tab in the background draws nothing
    return item.inner_text()


def test_a_server_added_on_the_admin_page_is_its_groups_alone_and_renders_on_both_workers(chromium: Browser,
                                                                                      team: str):
    admin = open_admin(chromium, team)
    alice = sign_in(chromium, team, "alice", "sales")
    bob = sign_in(chromium, team, "bob", "eng")
    # The admin page is the admin's: not linked for anyone else, and refused to them.
    expect(alice.locator("[data-testid=admin-link]")).to_be_hidden()
    assert alice.request.get(f"{team}/apps/admin").status == 403
    assert alice.request.get(f"{team}/apps/api/admin/servers").status == 403

    row = save_server(admin, "crm", entry=fixture_entry("rec"), groups="sales")
    expect(row).to_have_attribute("data-source", "registry")
    expect(row.locator("[data-testid=admin-server-grants]")).to_have_text("groups sales")

    # Alice's open tab gets it without a reload; then a tab on each of the two workers renders its view.
    wait_server(alice, "crm")
    tabs = {worker_of(alice): alice}
    for _ in range(60):  # the kernel gives each connection to a worker: new tabs until one lands on the other
        if len(tabs) == 2:
            break
        tab = alice.context.new_page()
        tab.goto(f"{team}/apps/")
        if tabs.setdefault(worker_of(tab), tab) is not tab:
            tab.close()
    assert len(tabs) == 2, f"no tab landed on the second worker: {worker_pids(team)}"
    for worker, tab in tabs.items():
        wait_server(tab, "crm")
        start_new_conversation(tab)
        call_tool(tab, "crm", "record", {"text": f"on worker {worker}"})
        assert f"on worker {worker}" in view_check(tab, "crm", "record", "result")

    # Bob is in another group: the server is not his to see, and a call to it is refused, the rule named.
    expect(bob.locator("[data-testid=server][data-server=rec]")).to_have_attribute("data-status", "ready")
    assert "crm" not in server_names(bob, team)
    expect(bob.locator("[data-testid=server][data-server=crm]")).to_have_count(0)
    call_tool(bob, "crm", "record", {"text": "not mine"})
    expect(bob.locator("[data-testid=notice][data-level=error]").last).to_contain_text(
        "policy: server crm is granted to groups sales")


def test_read_only_set_on_the_admin_page_refuses_the_persons_the_models_and_a_views_call(
        chromium: Browser, team: str, model: FakeServer):
    admin = open_admin(chromium, team)
    carol = sign_in(chromium, team, "carol")
    save_server(admin, "notes", entry=fixture_entry("rec"))  # everyone's
    wait_server(carol, "notes")
    call_until(carol, "notes", "write-note", {"text": "before"}, "noted before", "the new server's tool to run")

    row = save_server(admin, "notes", mode="read-only")
    expect(row.locator("[data-testid=admin-server-tools]")).to_have_text("read-only")
    # The person's call (the picker's and /call's frame), refused with the rule named, once the change is in.
    refused = call_until(carol, "notes", "write-note", {"text": "after"}, "policy:", "the read-only rule")
    assert "policy: notes is read-only: write-note is not annotated readOnlyHint" in refused
    # From the tool picker, the same.
    carol.locator("[data-testid=server][data-server=notes] [data-testid=tool][data-tool=write-note]").click()
    carol.locator("[data-testid=picker-form] input").first.fill("picked")
    carol.locator("[data-testid=picker-submit]").click()
    expect(carol.locator("[data-testid=call]").last.locator("[data-testid=call-error]")).to_contain_text(
        "policy: notes is read-only: write-note is not annotated readOnlyHint")
    # The model is not offered the tool, and its call of it anyway is refused alike.
    say(carol, "write a note")
    carol.get_by_text("The note was refused.").wait_for(timeout=DEADLINE * 1000)
    offered = {t["function"]["name"] for t in model.requests[0].body["tools"]}
    assert "notes__record" in offered and "notes__write-note" not in offered
    told = json.dumps([m for m in model.requests[1].body["messages"] if m["role"] == "tool"])
    assert "policy: notes is read-only" in told, told
    # Its read-only tool still runs and shows its view; the view's call of the other tool is refused alike,
    # without asking the person.
    start_new_conversation(carol)
    call_tool(carol, "notes", "record", {"action": "call", "tool": "write-note", "text": "from the view"})
    said = view_check(carol, "notes", "record", "call")
    assert said.startswith("error:") and "policy: notes is read-only" in said, said
    expect(carol.locator("[data-testid=consent]")).to_have_count(0)
    # The same call from a view of a server without the rule is put to the person, and runs.
    call_tool(carol, "rec", "record", {"action": "call", "tool": "write-note", "text": "elsewhere"})
    answer_consent(carol, "tool-call", allow=True, expect_text="write-note")
    said = view_check(carol, "rec", "record", "call")
    assert said.startswith("ok:") and "noted elsewhere" in said, said


def test_a_message_denied_for_one_server_while_another_servers_view_asks(chromium: Browser, team: str):
    admin = open_admin(chromium, team)
    dave = sign_in(chromium, team, "dave")
    save_server(admin, "quiet", entry=fixture_entry("rec"), views={"message": "deny"})
    expect(admin_row(admin, "quiet").locator("[data-testid=admin-server-views]")).to_have_text("message deny")
    wait_server(dave, "quiet")
    call_tool(dave, "quiet", "record", {"action": "message", "text": "hello from quiet"})
    said = view_check(dave, "quiet", "record", "message")
    assert said.startswith("error:") and "policy: quiet views.message = deny" in said, said
    expect(dave.locator("[data-testid=consent]")).to_have_count(0)
    call_tool(dave, "rec", "record", {"action": "message", "text": "hello from rec"})
    answer_consent(dave, "message", allow=False, expect_text="hello from rec")


def test_removing_a_server_on_the_admin_page_takes_it_from_open_tabs(chromium: Browser, team: str):
    admin = open_admin(chromium, team)
    erin = sign_in(chromium, team, "erin")
    save_server(admin, "brief", entry=fixture_entry("rec"))
    wait_server(erin, "brief")
    remove = admin_row(admin, "brief").locator("[data-testid=admin-remove]")
    remove.click()
    expect(remove).to_have_text("Remove brief?")  # asked once more on the button itself
    remove.click()
    expect(admin_row(admin, "brief")).to_have_count(0)
    expect(erin.locator("[data-testid=server][data-server=brief]")).to_have_count(0, timeout=DEADLINE * 1000)
    # The config file's server cannot be changed here.
    expect(admin_row(admin, "rec").locator("[data-testid=admin-edit]")).to_have_count(0)
    assert admin.request.delete(f"{team}/apps/api/admin/servers/rec").status == 409


def test_the_admin_page_shows_a_bad_entry_named_and_keeps_the_editor_open(chromium: Browser, team: str,
                                                                          tmp_path: Path):
    admin = open_admin(chromium, team)
    admin.locator("[data-testid=admin-add]").click()
    admin.locator("[data-testid=admin-name]").fill("typo")
    admin.locator("[data-testid=admin-entry]").fill(json.dumps({"url": "https://crm.example/mcp", "colour": "red"}))
    admin.locator("[data-testid=admin-save]").click()
    expect(admin.locator("[data-testid=admin-error]")).to_contain_text("unknown key 'colour'")
    expect(admin.locator("[data-testid=admin-editor]")).to_be_visible()
    admin.locator("[data-testid=admin-entry]").fill("{not json")
    admin.locator("[data-testid=admin-save]").click()
    expect(admin.locator("[data-testid=admin-error]")).to_contain_text("The entry is not JSON")
    admin.locator("[data-testid=admin-cancel]").click()
    expect(admin_row(admin, "typo")).to_have_count(0)
