"""Running it as a service: the Prometheus endpoint (`--metrics-port`, its key), its call counts matched
against the audit trail after a burst of person and view calls in a real browser, and JSON log lines
(`--log-format json`) that name the person and the view and never a secret."""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from harness import (
    HOST_START_TIMEOUT,
    LIVE_HOSTS,
    RUNNING_RE,
    Host,
    answer_consent,
    call_tool,
    free_port,
    kill_group,
    tail,
    view_frame,
    wait_servers,
    wait_view,
)
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.browser

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "servers.py"
METRICS_KEY = "scrape-key-0123456789abcdef"
SERVER_SECRET = "server-secret-in-url-5f2c9a"
HEADER_SECRET = "header-secret-7d1e0b"
CallKey = tuple[str, str, str, str]  # server, tool, caller, outcome


def scrape(port: int, key: str | None = METRICS_KEY) -> tuple[int, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                     headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(text: str, name: str, **labels: str) -> float:
    return samples(text).get((name, frozenset(labels.items())), 0.0)


def tool_calls(text: str) -> Counter[CallKey]:
    counts: Counter[CallKey] = Counter()
    for (name, labels), count in samples(text).items():
        if name == "mcp_apps_host_tool_calls_total":
            by = dict(labels)
            counts[(by["server"], by["tool"], by["caller"], by["outcome"])] += int(count)
    return counts


def audit_events(host: Host) -> list[dict[str, Any]]:
    request = urllib.request.Request(f"{host.origin}/api/audit?format=json&limit=10000",
                                     headers={"Cookie": f"mah_session={host.token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return list(json.load(response)["events"])


def _json(text: str | None) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def calls_on_record(events: list[dict[str, Any]], tools: set[str]) -> Counter[CallKey]:
    """The audit trail's own account of the tool calls, in the metric's labels: a call made is its
    host->server tools/call ("called by the …") and the server's answer or its failure; a view's call
    that never ran is its view->host tools/call refused, or asked and then declined by the person."""
    counts: Counter[CallKey] = Counter()
    # (conversation, id) -> server, tool, caller of the calls made and not answered yet: first made, first
    # answered (two tabs of one conversation each number their calls from 0, so an id may repeat).
    made: dict[tuple[str | None, Any], list[tuple[str, str, str]]] = {}
    asked: dict[tuple[str | None, Any], str] = {}  # a view's request put to the person -> its tool
    for e in events:
        where = (e["conversation"], e["id"])
        if e["method"] == "tools/call" and e["direction"] == "host->server":
            caller = (e["reason"] or "").removeprefix("called by the ")
            made.setdefault(where, []).append((e["server"], _json(e["payload"])["name"], caller))
        elif e["method"] == "tools/call" and e["direction"] == "server->host" and made.get(where):
            server, tool, caller = made[where].pop(0)
            result = _json(e["payload"])
            outcome = ("timeout" if "did not answer in time" in e["reason"] else "failed") if e["reason"] \
                else "error" if result.get("isError") is True else "ok"
            counts[(server, tool, caller, outcome)] += 1
        elif e["method"] == "notifications/cancelled" and e["direction"] == "host->server" and made.get(where):
            server, tool, caller = made[where].pop(0)
            counts[(server, tool, caller, "cancelled")] += 1
        elif e["method"] == "tools/call" and e["direction"] == "view->host":
            params = (_json(e["payload"]) or {}).get("params") or {}
            name = params.get("name") if params.get("name") in tools else "(unknown)"
            if e["decision"] == "refused":
                counts[(e["server"], name, "view", "refused")] += 1
            elif e["decision"] == "asked":
                asked[(e["view"], e["id"])] = name
            elif e["decision"] == "declined":
                counts[(e["server"], asked[(e["view"], e["id"])], "view", "declined")] += 1
    return counts


def wait_for(condition: Callable[[], Any], what: str | Callable[[], str], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        assert time.monotonic() < deadline, f"{what if isinstance(what, str) else what()} did not happen " \
                                            f"within {timeout:.0f} s"
        time.sleep(0.2)
    return result


def check(frame, name: str, timeout: float = 30_000) -> str:
    item = frame.locator(f'[data-check="{name}"]')
    item.wait_for(timeout=timeout)
    return str(item.inner_text())


def start_json_host(tmp_path: Path, config: dict[str, Any], extra_args: list[str]) -> tuple[Host, Path, int]:
    """`serve --log-format json --metrics-port P` with stderr kept apart from the banner on stdout."""
    port, sandbox_port, metrics_port = free_port(), free_port(), free_port()
    while len({port, sandbox_port, metrics_port}) < 3:
        sandbox_port, metrics_port = free_port(), free_port()
    config_path = tmp_path / "host.json"
    config_path.write_text(json.dumps(config))
    token = "console-token-3b8e41d2a9"
    cmd = [sys.executable, "-m", "mcp_apps_host", "serve", "--no-open", "--port", str(port),
           "--sandbox-port", str(sandbox_port), f"--token={token}", "--db", f"sqlite:///{tmp_path}/host.db",
           "--config", str(config_path), "--log-format", "json", "--metrics-port", str(metrics_port), *extra_args]
    out, err = tmp_path / "stdout.log", tmp_path / "stderr.log"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, cwd=tmp_path,
                                env=dict(os.environ, PYTHONUNBUFFERED="1"), start_new_session=True)
    host = Host(url="", origin=f"http://127.0.0.1:{port}", port=port, sandbox_port=sandbox_port, token=token,
                log_path=err, proc=proc)
    LIVE_HOSTS.append(host)
    deadline = time.monotonic() + HOST_START_TIMEOUT
    while not (m := RUNNING_RE.search(out.read_text(errors="replace"))):
        assert proc.poll() is None, f"the host exited with {proc.returncode}:\n{tail(err.read_text())}"
        assert time.monotonic() < deadline, f"the host did not start:\n{tail(err.read_text())}"
        time.sleep(0.1)
    host.url = m.group(1)
    return host, err, metrics_port


def rec_config() -> dict[str, Any]:
    rec = {"command": sys.executable, "args": [str(FIXTURES), "rec"]}
    # A server that is never there, its URL and headers carrying secrets: the log says it cannot connect.
    gone = {"url": f"http://127.0.0.1:{free_port()}/mcp?token={SERVER_SECRET}",
            "headers": {"Authorization": f"Bearer {HEADER_SECRET}"}}
    return {"mcpServers": {"rec": rec, "gone": gone}, "consent": {"rec": {"rec-app-only": "deny"}},
            "metrics": {"key": METRICS_KEY}}


def test_metrics_count_what_the_audit_trail_records_and_logs_are_json(tmp_path, page_for):
    host, stderr, metrics_port = start_json_host(tmp_path, rec_config(), [])
    try:
        # The endpoint is off the console's origin and wants its key; the console does not serve it.
        assert scrape(metrics_port, key=None)[0] == 401
        assert scrape(metrics_port, key="not-the-key-0123456789")[0] == 401
        status, before = scrape(metrics_port)
        assert status == 200, before
        page = page_for(host, wait_ready=False)
        wait_servers(page, host, ["rec"])  # "gone" never is
        assert value(scrape(metrics_port)[1], "mcp_apps_host_tabs") == 1

        def view_call(args: dict[str, Any], allow: bool | None = None) -> str:
            views = page.locator('[data-testid=view][data-tool="record"]').count()
            call_tool(page, "rec", "record", {"action": "call", **args})
            wait_for(lambda: page.locator('[data-testid=view][data-tool="record"]').count() > views, "the view")
            if allow is not None:
                answer_consent(page, "tool-call", allow=allow, expect_text="write-note")
            return check(view_frame(wait_view(page, "rec", "record")), "call")

        # A burst of calls: the person's (each mounts a view) and their views' (allowed, asked and then
        # declined or allowed, refused by the policy, refused as a tool the server does not have).
        assert view_call({"tool": "record"}).startswith("ok:")
        assert "declined" in view_call({"tool": "write-note", "text": "a"}, allow=False)
        assert "noted b" in view_call({"tool": "write-note", "text": "b"}, allow=True)
        assert "denied" in view_call({"tool": "rec-app-only"})
        assert view_call({"tool": "no-such-tool"}).startswith("error:")
        call_tool(page, "rec", "write-note", {"text": 42})  # arguments the server refuses: an error result

        tools = {"record", "record-slow", "rec-app-only", "write-note"}
        expected_made = {("rec", "record", "person", "ok"): 5, ("rec", "record", "view", "ok"): 1,
                         ("rec", "write-note", "view", "ok"): 1, ("rec", "write-note", "person", "error"): 1,
                         ("rec", "write-note", "view", "declined"): 1, ("rec", "rec-app-only", "view", "refused"): 1,
                         ("rec", "(unknown)", "view", "refused"): 1}

        def settled() -> tuple[Counter[CallKey], Counter[CallKey]] | None:
            on_record = calls_on_record(audit_events(host), tools)
            counted = tool_calls(scrape(metrics_port)[1]) - tool_calls(before)
            return (on_record, counted) if on_record == Counter(expected_made) else None

        on_record, counted = wait_for(settled, "every call on record", timeout=90)
        assert counted == on_record  # the counter tells what the audit trail tells, label for label

        after = scrape(metrics_port)[1]
        events = audit_events(host)
        asked = sum(1 for e in events if e["method"] == "tools/call" and e["decision"] == "asked")
        assert value(after, "mcp_apps_host_consents_total", kind="tool-call", answer="asked") == asked == 2
        assert value(after, "mcp_apps_host_consents_total", kind="tool-call", answer="allowed") == 1
        assert value(after, "mcp_apps_host_consents_total", kind="tool-call", answer="denied") == 1
        # Host-added and server time, apart: one observation per call that reached the server.
        assert value(after, "mcp_apps_host_tool_call_server_seconds_count", server="rec") == 8
        assert value(after, "mcp_apps_host_tool_call_host_seconds_count", server="rec", caller="view") == 2
        assert value(after, "mcp_apps_host_tool_call_host_seconds_count", server="rec", caller="person") == 6
        assert value(after, "mcp_apps_host_audit_commit_seconds_count") > 0
        assert value(after, "mcp_apps_host_live_views") >= 6
        assert value(after, "mcp_apps_host_server_connections", server="rec", state="ready") == 1
        assert value(after, "mcp_apps_host_server_connections", server="gone", state="ready") == 0
        page.close()
        wait_for(lambda: value(scrape(metrics_port)[1], "mcp_apps_host_tabs") == 0, "the tab counted as gone")
        assert value(scrape(metrics_port)[1], "mcp_apps_host_live_views") == 0

        # Every line on stderr is one JSON object; the view's refused call is logged naming the view and person.
        lines = [json.loads(line) for line in stderr.read_text().splitlines() if line.strip()]
        assert lines and all({"time", "level", "logger", "message"} <= set(line) for line in lines)
        refused_at = next(e for e in events if e["decision"] == "refused" and "no-such-tool" in (e["payload"] or ""))
        about_view = [line for line in lines if "no-such-tool" in line["message"]]
        assert about_view, "the refused call of a view was not logged"
        assert about_view[0]["view"] == refused_at["view"]
        assert (about_view[0]["tenant"], about_view[0]["user"]) == ("default", "local")
        assert any(line["logger"].startswith("mcp_apps_host.servers") and "gone" in line["message"]
                   for line in lines), "the unreachable server's failure was not logged"
        text = stderr.read_text()
        for secret in (SERVER_SECRET, HEADER_SECRET, METRICS_KEY, host.token):
            assert secret not in text
    finally:
        kill_group(host.proc)
        LIVE_HOSTS.remove(host)


def test_a_bad_metrics_port_or_section_is_named(tmp_path):
    def serve(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mcp_apps_host", "serve", "--no-open", "--db",
                               f"sqlite:///{tmp_path}/h.db", *args], capture_output=True, text=True, timeout=120)

    done = serve("--metrics-port", "http")
    assert done.returncode == 2 and "--metrics-port" in done.stderr and "'http' is not a port number" in done.stderr
    done = serve("--metrics-port", "70000")
    assert done.returncode == 2 and "--metrics-port" in done.stderr
    port = free_port()
    done = serve("--port", str(port), "--metrics-port", str(port))
    assert done.returncode == 2 and "the metrics port" in done.stderr and "must differ" in done.stderr
    for section, words in (({"port": "9464"}, "metrics.port: '9464' is not a port number"),
                           ({"port": 9464, "key": "short"}, "metrics.key must be a string of at least 16"),
                           ({"prot": 9464}, '"metrics" must be an object like')):
        config = tmp_path / "bad.json"
        config.write_text(json.dumps({"metrics": section}))
        done = serve("--config", str(config))
        assert done.returncode == 2 and words in done.stderr, done.stderr
        assert "short" not in done.stderr.replace("metrics.key", "")  # a key is never repeated back
    with_port_taken = free_port()
    with socket.socket() as held:
        held.bind(("127.0.0.1", with_port_taken))
        held.listen(1)
        done = serve("--port", str(free_port()), "--sandbox-port", str(free_port()),
                     "--metrics-port", str(with_port_taken))
    assert done.returncode == 1 and f"cannot listen on 127.0.0.1:{with_port_taken} for /metrics" in done.stderr


def test_serve_runs_with_text_logs_unchanged(start_host):
    """The default stays the text format people read."""
    host = start_host(servers={"rec": shlex.join([sys.executable, str(FIXTURES), "rec"])},
                      extra_args=["--server", f"gone=http://127.0.0.1:{free_port()}/mcp?token={SERVER_SECRET}"])
    line = wait_for(lambda: next((x for x in host.log_text().splitlines() if "server gone" in x), None),
                    "the unreachable server's warning")
    assert " WARNING mcp_apps_host.servers" in line and not line.startswith("{")
    assert SERVER_SECRET not in line


# ---- two workers on PostgreSQL: one /metrics for both ----------------------------------------------------


def worker_of(page) -> int:
    page.wait_for_function("() => document.documentElement.dataset.worker !== undefined", timeout=60_000)
    return int(page.evaluate("document.documentElement.dataset.worker"))


def test_two_workers_are_counted_together(start_host, page_for, postgres):
    metrics_port = free_port()
    rec = shlex.join([sys.executable, str(FIXTURES), "rec"])
    host = start_host(servers={"rec": rec}, extra_args=["--db", postgres.database(), "--workers", "2",
                                                         "--metrics-port", str(metrics_port)])
    assert scrape(metrics_port, key=None)[0] == 200  # no key configured: open, on its own port
    before = tool_calls(scrape(metrics_port)[1])
    pages = [page_for(host, timeout=180)]
    by_worker = {worker_of(pages[0]): pages[0]}
    while len(by_worker) < 2:
        assert len(pages) < 24, "every tab landed on one worker"
        pages.append(page_for(host, timeout=180))
        by_worker.setdefault(worker_of(pages[-1]), pages[-1])
    # Every tab, whichever worker holds it, is counted by the one endpoint the parent serves.
    wait_for(lambda: value(scrape(metrics_port)[1], "mcp_apps_host_tabs") == len(pages), "every tab counted")
    for worker, page in by_worker.items():
        for n in range(3):
            call_tool(page, "rec", "record", {"text": f"worker {worker} call {n}"})
    tools = {"record", "record-slow", "rec-app-only", "write-note"}
    expected = Counter({("rec", "record", "person", "ok"): 6})
    seen: list[Counter[CallKey]] = []
    calls: list[tuple[Any, ...]] = []

    def on_record() -> bool:
        events = audit_events(host)
        seen.append(calls_on_record(events, tools))
        calls[:] = [(e["conversation"], e["id"], e["direction"], e["decision"], e["reason"]) for e in events
                    if e["method"] == "tools/call"]
        return seen[-1] == expected

    def pages_said() -> str:
        """What each calling tab shows: a line kept in its box, or a notice, says a call never left it."""
        return "; ".join(f"worker {worker}: box {page.locator('[data-testid=chat-input]').input_value()!r}, "
                         f"cards {page.locator('[data-testid=call]').count()}, notices "
                         f"{page.locator('[data-testid=notice]').all_text_contents()}"
                         for worker, page in by_worker.items())

    wait_for(on_record, lambda: f"the six calls on record (last seen: {seen[-1]}; tools/call events: {calls}; "
             f"the workers count {tool_calls(scrape(metrics_port)[1]) - before}; the tabs: {pages_said()})", 120)
    assert tool_calls(scrape(metrics_port)[1]) - before == expected
    assert value(scrape(metrics_port)[1], "mcp_apps_host_server_connections", server="rec", state="ready") == 2
    for page in pages:
        page.close()
    wait_for(lambda: value(scrape(metrics_port)[1], "mcp_apps_host_tabs") == 0, "the tabs counted as gone")
