"""Today's MCP in a real browser: views that offer tools of their own (the model calls them, the person
calls them, they go with their view), server-pdf's roots and form elicitation over stdio, servers that
speak only 2026-07-28 or only the initialize handshake, and a 2026-07-28 server that is restarted."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from harness import (
    click_in_page,
    free_port,
    kill_group,
    peer_bin,
    server_list,
    view_frame,
    wait_servers,
    wait_view,
    write_form_pdf,
)
from playwright.sync_api import expect
from test_consent_audit import audit_lines
from test_peers import DebugLog

from tests.modelfakes import openai_fake, streamed_call, text

pytestmark = pytest.mark.browser

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "servers.py"


def say(page, line: str) -> None:
    box = page.locator("[data-testid=chat-input]")
    box.fill(line)
    box.press("Enter")


def call_card(page, tool: str, server: str | None = None):
    where = f'[data-server="{server}"]' if server else ""
    return page.locator(f'[data-testid=call][data-tool="{tool}"]{where}').last


def finished_text(page, tool: str, timeout: float = 20_000, server: str | None = None) -> str:
    card = call_card(page, tool, server)
    card.wait_for(state="attached", timeout=timeout)
    expect(card).to_have_attribute("data-state", re.compile("done|error"), timeout=timeout)
    return card.locator("[data-testid=call-result]").inner_text()


# --------------------------------------------------------------------------- a view's own tools


def test_view_tools_are_listed_called_by_the_model_audited_and_gone_with_the_view(start_host, page_for, tmp_path):
    debug_log = tmp_path / "debug.jsonl"
    servers = {"budget": shlex.join([peer_bin("mcp-budget-allocator-server"), "--stdio"]),
               "debug": shlex.join([peer_bin("mcp-server-debug"), "--stdio", f"--log-file={debug_log}"])}
    name = "budget_view0__get-allocations"  # the view of call 0 offers get-allocations
    script = [[text("Reading the view. "), *streamed_call(name, "{}")], [text("Allocations read.")],
              [*streamed_call(name, "{}")], [text("It is gone.")]]
    with openai_fake.serve_script(script) as fake:
        host = start_host(servers=servers, extra_args=["--model", "openai:fake", "--model-base-url", fake.base_url])
        page = page_for(host)
        say(page, "/call budget get-budget-data")
        view = wait_view(page, "budget", "get-budget-data", timeout=30_000)
        tools = view.locator("[data-testid=view-tools]")
        expect(tools).to_be_visible(timeout=15_000)  # listed after the view's initialized
        tools.locator("summary").click()
        listed = sorted(tools.locator("[data-testid=view-tool]").evaluate_all("bs => bs.map(b => b.dataset.tool)"))
        assert listed == ["get-allocations", "get-benchmark-comparison", "set-allocation", "set-company-stage",
                          "set-total-budget"]
        assert name in tools.inner_text()  # the name the model knows it by

        say(page, "what are the allocations?")
        dialog = page.locator('[data-testid=consent][data-kind="app-tool-call"]')
        dialog.wait_for(timeout=15_000)  # not annotated read-only: the person is asked
        asked = dialog.inner_text()
        assert "get-allocations" in asked and "view0" in asked
        assert "which says it is Budget Allocator" in asked  # the view's own appInfo, shown as its word
        dialog.locator("[data-testid=consent-allow]").click()
        page.get_by_text("Allocations read.").wait_for(timeout=20_000)
        card = call_card(page, "get-allocations")
        assert card.get_attribute("data-app-tool-of") == "view0"
        assert "totalBudget" in card.locator("[data-testid=call-result]").inner_text()
        offered = {t["function"]["name"]: t["function"]["description"] for t in fake.requests[0].body["tools"]}
        assert name in offered and "budget view view0" in offered[name]
        result_message = [m for m in fake.requests[1].body["messages"] if m["role"] == "tool"][-1]
        assert "totalBudget" in result_message["content"]

        # Every step is on record with its view: the decision, the request to the view and its answer.
        handle = view.get_attribute("data-view")
        rows = audit_lines(page, host, view=handle)
        decisions = [(r["direction"], r["method"], r["decision"]) for r in rows]
        assert ("model->host", "tools/call", "asked") in decisions
        assert ("model->host", "tools/call", "consented") in decisions
        sent = [r for r in rows if r["direction"] == "host->view" and r["method"] == "tools/call"]
        assert sent and "get-allocations" in sent[-1]["payload"]
        assert any(r["direction"] == "view->host" and r["id"] == sent[-1]["id"] and "totalBudget" in r["payload"]
                   for r in rows)

        # The view closes: its tools go with it, and a call by the old name fails cleanly.
        click_in_page(view.locator("[data-testid=view-close]"))
        expect(view).to_have_attribute("data-state", "closed", timeout=10_000)
        expect(view.locator("[data-testid=view-tools]")).to_have_count(0)
        say(page, "read them again")
        page.get_by_text("It is gone.").wait_for(timeout=20_000)
        assert name not in {t["function"]["name"] for t in fake.requests[2].body.get("tools", [])}
        error = [m for m in fake.requests[3].body["messages"] if m["role"] == "tool"][-1]["content"]
        assert f"no tool named {name!r}" in error

        # The debug view declares tools of its own and is asked for them (it lists none).
        log = DebugLog(debug_log)
        say(page, "/call debug debug-tool " + json.dumps({"contentType": "text"}))
        debug = wait_view(page, "debug", "debug-tool", timeout=30_000)
        log.wait("onlisttools")
        assert debug.locator("[data-testid=view-tools]").count() == 0


def test_a_person_calls_a_views_tool_from_the_list_on_the_view(start_host, page_for):
    host = start_host(servers={"modern": shlex.join([sys.executable, str(FIXTURES), "modern"]),
                               "legacy": shlex.join([sys.executable, str(FIXTURES), "legacy"])})
    page = page_for(host)
    versions = {s["name"]: s["protocolVersion"] for s in server_list(page, host)}
    assert versions == {"modern": "2026-07-28", "legacy": "2025-11-25"}
    expect(page.locator('[data-testid=server][data-server="modern"] [data-testid=server-protocol]')) \
        .to_have_text("MCP 2026-07-28")
    for kind, version in versions.items():
        say(page, f"/call {kind} era-view")
        view = wait_view(page, kind, "era-view")
        frame = view_frame(view)
        expect(frame.locator('[data-check="protocol"]')).to_have_text(version, timeout=15_000)
        tools = view.locator("[data-testid=view-tools]")
        expect(tools).to_be_visible(timeout=15_000)
        tools.locator("summary").click()
        tools.locator('[data-testid=view-tool][data-tool="view-echo"]').click()
        page.locator("[data-testid=picker-form] input").first.fill(f"hi {kind}")
        page.locator("[data-testid=picker-submit]").click()
        assert f"echo: hi {kind}" in finished_text(page, "view-echo", server=kind)
        expect(frame.locator('[data-check="echoed"]')).to_have_text(f"hi {kind}")

        # The server's tools change: the view is told, and its tools/list has the new one (and no
        # tool without "app" visibility: all of these have it).
        say(page, f"/call {kind} grow")
        grown = finished_text(page, "grow", server=kind).split()[0]
        expect(frame.locator('[data-check="server-tools-changed"]').first).to_have_text("yes", timeout=15_000)
        tools.locator('[data-testid=view-tool][data-tool="server-tools"]').click()
        page.locator("[data-testid=picker-submit]").click()
        names = finished_text(page, "server-tools", server=kind)
        assert grown.startswith("grown-") and grown in names and "era-view" in names


# --------------------------------------------------------------------------- server-pdf: roots and elicitation


def test_pdf_over_stdio_gets_its_roots_and_asks_for_form_input(start_host, page_for, tmp_path):
    papers, more = tmp_path / "papers", tmp_path / "more"
    papers.mkdir()
    more.mkdir()
    form = write_form_pdf(papers / "form.pdf")
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {
        "pdf": {"command": peer_bin("mcp-pdf-server"), "args": ["--stdio"], "roots": ["papers"]}}}))
    host = start_host(config=config)
    page = page_for(host)
    expect(page.locator('[data-testid=server][data-server="pdf"] [data-testid=server-roots]')) \
        .to_contain_text(papers.as_uri())

    say(page, "/call pdf list_pdfs")
    listed = finished_text(page, "list_pdfs")
    assert str(papers) in listed and form.as_uri() in listed

    # The roots change: a server before 2026-07-28 is told, and asks again.
    say(page, f"/roots pdf add {more}")
    page.get_by_text(f"pdf: roots are now {papers.as_uri()}, {more.as_uri()}").wait_for(timeout=10_000)
    write_form_pdf(more / "other.pdf")
    deadline = time.monotonic() + 20
    while (more / "other.pdf").as_uri() not in listed:
        assert time.monotonic() < deadline, listed
        say(page, "/call pdf list_pdfs")
        page.wait_for_function("n => document.querySelectorAll('[data-testid=call][data-tool=list_pdfs]').length >= n",
                               arg=page.locator('[data-testid=call][data-tool="list_pdfs"]').count(), timeout=10_000)
        listed = finished_text(page, "list_pdfs")

    arguments = {"url": str(form), "elicit_form_inputs": True}
    say(page, "/call pdf display_pdf " + json.dumps(arguments))
    dialog = page.locator('[data-testid=consent][data-kind="elicit"]')
    dialog.wait_for(timeout=30_000)
    assert 'Please fill in the PDF form fields for "form.pdf"' in dialog.inner_text()
    assert "pdf" in dialog.locator(".consent-who").inner_text()  # attributed to the server, outside any view
    dialog.locator('[data-field="name"] input').fill("Ada Lovelace")
    dialog.locator('[data-field="agree"] input').check()
    dialog.locator("[data-testid=elicit-accept]").click()
    expect(dialog).to_have_count(0, timeout=10_000)
    result = finished_text(page, "display_pdf", timeout=30_000)
    assert "name: Ada Lovelace" in result and "agree: checked" in result

    say(page, "/call pdf display_pdf " + json.dumps(arguments))
    dialog.wait_for(timeout=30_000)
    dialog.locator("[data-testid=elicit-decline]").click()
    deadline = time.monotonic() + 30
    while "Form elicitation was declined by the user." not in (result := finished_text(page, "display_pdf")):
        assert time.monotonic() < deadline, result
        time.sleep(0.2)

    decisions = [(r["direction"], r["decision"]) for r in audit_lines(page, host, server="pdf",
                                                                      method="elicitation/create")]
    assert decisions.count(("server->host", "asked")) == 2
    assert ("host->server", "consented") in decisions and ("host->server", "declined") in decisions
    assert audit_lines(page, host, server="pdf", method="roots/list")


# --------------------------------------------------------------------------- a restarted 2026-07-28 server


def test_a_modern_server_killed_and_restarted_is_reconnected_without_a_loop(start_host, page_for, tmp_path):
    port = free_port()
    command = [sys.executable, str(FIXTURES), "modern", "--http", str(port)]

    def serve() -> subprocess.Popen[bytes]:
        return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True, env=dict(os.environ))

    server = serve()
    try:
        # A health check every 10 s, each waiting as long for its answer: a working server is not given up on
        # for being slow on a busy machine, and a check this generation cannot answer fails at once.
        os.environ["MCP_APPS_HOST_SERVER_HEALTH_INTERVAL"] = "10"
        os.environ["MCP_APPS_HOST_RECONNECT_MAX_DELAY"] = "2"
        try:
            host = start_host(servers={"modern": f"http://127.0.0.1:{port}/mcp"})
        finally:
            del os.environ["MCP_APPS_HOST_SERVER_HEALTH_INTERVAL"], os.environ["MCP_APPS_HOST_RECONNECT_MAX_DELAY"]
        page = page_for(host)
        readies = lambda: host.log_text().count("server modern: ready (MCP 2026-07-28)")  # noqa: E731
        time.sleep(12)  # a health check: it may not end the connection
        assert readies() == 1, host.log_text()
        kill_group(server)
        deadline = time.monotonic() + 60
        while server_list(page, host)[0]["status"] == "ready":
            assert time.monotonic() < deadline, "the host did not notice the server went away"
            time.sleep(0.2)
        server = serve()
        wait_servers(page, host, ["modern"], timeout=60)
        time.sleep(12)
        assert readies() == 2, host.log_text()  # reconnected once, then stays
        say(page, "/call modern era-view")
        frame = view_frame(wait_view(page, "modern", "era-view"))
        expect(frame.locator('[data-check="protocol"]')).to_have_text("2026-07-28", timeout=15_000)
    finally:
        kill_group(server)
