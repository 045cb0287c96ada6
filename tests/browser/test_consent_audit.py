"""Consent, audit trail and template trust, in a real browser with fixture servers."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sqlite3
import sys
import time
from pathlib import Path

import pytest
from harness import burst_answered, call_tool, view_frame, wait_view
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "servers.py"


def cmd(kind: str) -> str:
    return shlex.join([sys.executable, str(FIXTURES), kind])


def check(frame, name: str, timeout: float = 15_000) -> str:
    item = frame.locator(f'[data-check="{name}"]')
    item.wait_for(timeout=timeout)
    return item.inner_text()


def consent(page, kind: str):
    dialog = page.locator(f'[data-testid=consent][data-kind="{kind}"]')
    dialog.wait_for(timeout=15_000)
    return dialog


def audit_lines(page, host, **filters) -> list[dict]:
    query = "&".join(f"{k}={v}" for k, v in {"format": "jsonl", **filters}.items())
    response = page.request.get(f"{host.origin}/api/audit?{query}")
    assert response.ok, response.text()
    return [json.loads(line) for line in response.text().splitlines() if line.strip()]


def test_tool_call_consent_allow_deny_and_always_allow_across_restart(start_host, page_for, tmp_path):
    db = ["--db", f"sqlite:///{tmp_path}/keep.db"]
    host = start_host(servers={"rec": cmd("rec")}, extra_args=db)
    page = page_for(host)
    note = {"action": "call", "tool": "write-note", "text": "x"}

    call_tool(page, "rec", "record", note)
    dialog = consent(page, "tool-call")
    assert "write-note" in dialog.inner_text() and "rec" in dialog.inner_text()
    dialog.locator("[data-testid=consent-deny]").click()
    frame = view_frame(wait_view(page, "rec", "record"))
    assert check(frame, "call").startswith("error:") and "declined" in check(frame, "call")

    call_tool(page, "rec", "record", note)
    dialog = consent(page, "tool-call")
    dialog.locator("[data-testid=consent-remember]").check()
    dialog.locator("[data-testid=consent-allow]").click()
    frame = view_frame(page.locator('[data-testid=view][data-tool="record"]').nth(1))
    assert "noted x" in check(frame, "call")

    host.close()
    again = start_host(servers={"rec": cmd("rec")}, extra_args=db)
    page2 = page_for(again)
    call_tool(page2, "rec", "record", note)
    frame = view_frame(page2.locator('[data-testid=view][data-tool="record"]').last)
    assert "noted x" in check(frame, "call", timeout=20_000)
    assert page2.locator('[data-testid=consent][data-kind="tool-call"]').count() == 0
    decisions = {(e["method"], e["decision"]) for e in audit_lines(page2, again, server="rec")}
    assert ("tools/call", "allowed") in decisions


def test_open_link_consent_shows_the_real_host(start_host, page_for):
    host = start_host(servers={"rec": cmd("rec")})
    page = page_for(host)
    call_tool(page, "rec", "record", {"action": "open", "text": "http://xn--pple-43d.example/login"})
    dialog = consent(page, "open-link")
    text = dialog.inner_text()
    assert "аpple.example" in text and "xn--pple-43d.example" in text  # the Cyrillic host, and its real form
    dialog.locator("[data-testid=consent-deny]").click()
    frame = view_frame(wait_view(page, "rec", "record"))
    assert check(frame, "open").startswith("error:")

    from test_rules import Origin

    target = Origin()
    try:
        call_tool(page, "rec", "record", {"action": "open", "text": f"{target.url}/allowed"})
        dialog = consent(page, "open-link")
        with page.context.expect_page(timeout=30_000) as opened:
            dialog.locator("[data-testid=consent-allow]").click()
        opened.value.wait_for_load_state()
        # The opened tab may also ask for its favicon, sooner or later: only the link itself counts.
        pages = [hit for hit in target.hits if hit != "/favicon.ico"]
        assert opened.value.url == f"{target.url}/allowed" and pages == ["/allowed"]
        frame = view_frame(page.locator('[data-testid=view][data-tool="record"]').last)
        assert check(frame, "open").startswith("ok:")
    finally:
        target.close()


def test_download_consent(start_host, page_for):
    host = start_host(servers={"rec": cmd("rec")})
    page = page_for(host)
    call_tool(page, "rec", "record", {"action": "download", "text": "../../report.csv"})
    dialog = consent(page, "download")
    assert "report.csv" in dialog.inner_text()
    with page.expect_download(timeout=10_000) as saved:
        dialog.locator("[data-testid=consent-allow]").click()
    assert saved.value.suggested_filename == "report.csv"
    frame = view_frame(wait_view(page, "rec", "record"))
    assert check(frame, "download").startswith("ok:")

    call_tool(page, "rec", "record", {"action": "download", "text": "again.csv"})
    consent(page, "download").locator("[data-testid=consent-deny]").click()
    frame = view_frame(page.locator('[data-testid=view][data-tool="record"]').last)
    assert check(frame, "download").startswith("error:")


def test_audit_export_has_the_refused_cross_server_call_and_csp_violation(start_host, page_for, tmp_path):
    from test_rules import Origin, fixture_config

    blocked = Origin()
    try:
        config = fixture_config(tmp_path, {"vis": "vis", "other": "other", "csp": "csp"},
                                {"ALLOWED_ORIGIN": "http://127.0.0.1:9", "BLOCKED_ORIGIN": blocked.url})
        host = start_host(config=config)
        page = page_for(host)
        call_tool(page, "vis", "vis-view", {})
        frame = view_frame(wait_view(page, "vis", "vis-view"))
        assert check(frame, "other-server").startswith("error:")
        call_tool(page, "csp", "csp-view", {})
        frame = view_frame(wait_view(page, "csp", "csp-view"))
        check(frame, "blocked")
        deadline = time.monotonic() + 15
        while True:
            lines = audit_lines(page, host)
            refused = [e for e in lines if e["decision"] == "refused" and e["method"] == "tools/call"
                       and "not a tool of server" in (e["reason"] or "")]
            violations = [e for e in lines if e["method"] == "csp-violation"]
            if refused and violations:
                break
            assert time.monotonic() < deadline, lines[-20:]
            time.sleep(0.3)
        assert "not a tool of server 'vis'" in refused[0]["reason"] and refused[0]["direction"] == "view->host"
        assert refused[0]["server"] == "vis" and refused[0]["view"]
        assert blocked.url in violations[0]["reason"] and "connectDomains" in violations[0]["reason"]
        # Each view's policy is on record once, with what it declared; the person is told where the csp view
        # may send data, and nothing is said of the view that declared nothing.
        policies = {e["view"]: e for e in lines if e["method"] == "view-csp"}
        csp_view = page.locator('[data-testid=view][data-server="csp"]').get_attribute("data-view")
        vis_view = page.locator('[data-testid=view][data-server="vis"]').get_attribute("data-view")
        assert [e["view"] for e in lines if e["method"] == "view-csp"].count(csp_view) == 1
        assert "connect-src http://127.0.0.1:9" in policies[csp_view]["reason"]
        assert "connect-src 'none'" in policies[vis_view]["reason"]
        assert "csp-report" not in policies[csp_view]["reason"]  # the report address is a signed handle
        expect(page.locator(f'[data-view="{csp_view}"] [data-testid=view-csp-warning]')).to_contain_text(
            "http://127.0.0.1:9")
        expect(page.locator(f'[data-view="{vis_view}"] [data-testid=view-csp-warning]')).to_have_count(0)
        for field in ("ts", "conversation", "view", "server", "direction", "method", "id", "decision", "reason"):
            assert field in lines[0]
        assert {e["direction"] for e in lines} >= {"view->host", "host->view", "host->server", "server->host"}
        assert blocked.hits == []
    finally:
        blocked.close()


def test_changed_template_is_held_until_accepted(start_host, page_for, tmp_path):
    from test_rules import fixture_config

    db = ["--db", f"sqlite:///{tmp_path}/trust.db"]
    host = start_host(config=fixture_config(tmp_path, {"ver": "ver"}, {"TEMPLATE_VERSION": "1"}), extra_args=db)
    page = page_for(host)
    call_tool(page, "ver", "ver-view", {})
    assert check(view_frame(wait_view(page, "ver", "ver-view")), "version") == "1"
    host.close()

    (tmp_path / "v2").mkdir()
    again = start_host(config=fixture_config(tmp_path / "v2", {"ver": "ver"}, {"TEMPLATE_VERSION": "2"}), extra_args=db)
    page2 = page_for(again, new_conversation=True)  # not the replay of the first conversation's view
    call_tool(page2, "ver", "ver-view", {})
    notice = page2.locator("[data-testid=trust-notice]")
    notice.wait_for(timeout=15_000)
    assert "ver" in notice.inner_text()
    assert page2.locator('[data-testid=view][data-tool="ver-view"] iframe').count() == 0
    time.sleep(1)
    assert page2.locator('[data-testid=view][data-tool="ver-view"] iframe').count() == 0  # still held
    notice.locator("[data-testid=trust-accept]").click()
    assert check(view_frame(wait_view(page2, "ver", "ver-view")), "version") == "2"


def test_servers_cannot_read_each_others_storage(start_host, page_for):
    host = start_host(servers={"alpha": cmd("rec"), "beta": cmd("rec")})
    page = page_for(host)
    # Each view writes its own key and lists every key it can see.
    call_tool(page, "alpha", "record", {"action": "storage", "tool": "first", "text": "alpha"})
    a = json.loads(check(view_frame(wait_view(page, "alpha", "record")), "storage"))
    assert a == {"first": "alpha"}
    # A second view of the same server reads what the first wrote: storage outlives a view, so
    # the other server not seeing it below is the origins' doing.
    call_tool(page, "alpha", "record", {"action": "storage", "tool": "second", "text": "alpha again"})
    # The newest view is the second only once it is drawn: until then "last" is the first.
    expect(page.locator('[data-testid=view][data-server="alpha"][data-tool="record"]')).to_have_count(2)
    again = json.loads(check(view_frame(wait_view(page, "alpha", "record")), "storage"))
    assert again == {"first": "alpha", "second": "alpha again"}
    call_tool(page, "beta", "record", {"action": "storage", "tool": "third", "text": "beta"})
    b = json.loads(check(view_frame(wait_view(page, "beta", "record")), "storage"))
    assert b == {"third": "beta"}  # nothing of alpha's
    origins = page.locator("[data-testid=view] iframe.proxy").evaluate_all("els => els.map(e => new URL(e.src).origin)")
    assert len(set(origins)) == 2


def test_audit_survives_kill_9_during_a_burst(start_host, page_for, tmp_path, monkeypatch):
    # The burst answers each ping before the next: fast enough to pass max_view_messages_per_second,
    # which is not what this test is about.
    monkeypatch.setenv("MCP_APPS_HOST_MAX_VIEW_MESSAGES_PER_SECOND", "100000")
    db_path = tmp_path / "audit.db"
    host = start_host(servers={"rec": cmd("rec")}, extra_args=["--db", f"sqlite:///{db_path}"])
    page = page_for(host)
    call_tool(page, "rec", "record", {"action": "burst", "n": 3000})
    frame_page = page.locator("[data-testid=view] iframe.proxy")
    frame_page.wait_for(timeout=20_000)
    # Wait until the view has had a good part of its pings answered, then kill the host outright.
    deadline = time.monotonic() + 30
    acked = 0
    while time.monotonic() < deadline:
        acked = burst_answered(page)
        if acked >= 300:
            break
        time.sleep(0.02)
    assert acked >= 300, f"only {acked} pings were answered"
    os.killpg(host.proc.pid, signal.SIGKILL)
    acked_at_kill = burst_answered(page, acked)
    host.proc.wait(10)
    with sqlite3.connect(db_path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        replies = db.execute("SELECT COUNT(*) FROM audit_events WHERE direction='host->view' AND payload_preview "
                             "LIKE '%\"result\"%' AND method IS NULL").fetchone()[0]
        pings = db.execute(
            "SELECT COUNT(*) FROM audit_events WHERE direction='view->host' AND method='ping'").fetchone()[0]
    # Every reply the view received was on record before it was sent.
    assert pings >= acked_at_kill and replies >= acked_at_kill, (pings, replies, acked_at_kill)
