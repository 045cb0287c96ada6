"""Traces in a real browser: a view's tool call is one trace, from its request through the host's decision,
the person's consent, the server (whose own span joins it through `_meta.traceparent`) and the audit commit,
to the answer; exported to a fixture OTLP collector only when the OTEL_* variables ask for it."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from harness import answer_consent, call_tool, view_frame, wait_view

from tests.fixtures.otlp_collector import CollectedSpan, Collector

pytestmark = pytest.mark.browser

TRACED = Path(__file__).resolve().parent.parent / "fixtures" / "traced_server.py"
SERVICE = "hosts-under-test"
SECRET = "s3cr3t-argument-value"  # a value the view passes on: never an attribute
OTEL_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER",
                  "OTEL_SDK_DISABLED", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER",
                  "OTEL_EXPORTER_OTLP_PROTOCOL", "MCP_APPS_HOST_TRACE_ARGUMENTS")


def traced_server(collector_url: str | None = None) -> str:
    return shlex.join([sys.executable, str(TRACED), *([collector_url] if collector_url else [])])


def check(frame, name: str, timeout: float = 60_000) -> str:
    item = frame.locator(f'[data-check="{name}"]')
    item.wait_for(timeout=timeout)
    return item.inner_text()


def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host starts with only the OTEL_* variables a test sets (the harness passes the environment on)."""
    for name in OTEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def view_call(page) -> dict[str, str]:
    """The person calls traced-view; its view calls echo-trace, which asks the person; what the view saw."""
    call_tool(page, "traced", "traced-view", {"secret": SECRET})
    frame = view_frame(wait_view(page, "traced", "traced-view", timeout=60_000))
    answer_consent(page, "tool-call", allow=True, expect_text="echo-trace", timeout=60_000)
    assert check(frame, "echo") == "ok"
    return {key: check(frame, key) for key in ("traceparent", "trace_id", "span_id")}


def values_of(span: CollectedSpan) -> str:
    return json.dumps([span.name, span.attributes, span.status_message])


def test_a_view_call_is_one_trace_with_the_servers_span_inside(start_host, page_for, monkeypatch):
    clean_env(monkeypatch)
    with Collector() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
        monkeypatch.setenv("OTEL_SERVICE_NAME", SERVICE)
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")  # ms: batches leave at once
        host = start_host(servers={"traced": traced_server(collector.url)})
        page = page_for(host)
        seen = view_call(page)

        def complete(spans: list[CollectedSpan]) -> bool:
            roots = [s for s in spans if s.service == SERVICE and s.name == "tools/call echo-trace"]
            if not roots:
                return False
            names = {s.name for s in spans if s.trace_id == roots[0].trace_id}
            return {"consent tool-call", "MCP send tools/call echo-trace", "audit commit"} <= names and \
                any(s.service == "traced-server" and s.trace_id == roots[0].trace_id for s in spans)

        try:
            spans = collector.wait_for(complete, what="the view call's trace")
        except AssertionError:
            for s in collector.snapshot():
                print(s.service, s.name, s.trace_id[:8], s.span_id[:8], s.parent_id[:8], s.attributes)
            raise
        assert not collector.errors

    # One trace for the view's call: its request is the root, and nothing of that call is anywhere else.
    roots = [s for s in spans if s.service == SERVICE and s.name == "tools/call echo-trace"]
    assert len(roots) == 1, roots
    root = roots[0]
    assert root.parent_id == "" and root.kind == "server"
    assert root.attributes["mcp_apps_host.caller"] == "view"
    assert root.attributes["mcp_apps_host.server"] == "traced"
    assert root.attributes["gen_ai.tool.name"] == "echo-trace"
    assert root.attributes["mcp.method.name"] == "tools/call"
    assert root.attributes["mcp_apps_host.decision"] == "asked"
    assert root.attributes["mcp_apps_host.outcome"] == "ok"
    elsewhere = [s for s in spans if "echo-trace" in s.name and s.trace_id != root.trace_id]
    assert elsewhere == []
    trace = [s for s in spans if s.trace_id == root.trace_id]
    by_name = {s.name: s for s in trace}

    # The view handle is the one the audit trail names for that request.
    audit = page.request.get(f"{host.origin}/api/audit?format=jsonl&server=traced&method=tools/call"
                             "&direction=view-%3Ehost")
    assert audit.ok, audit.text()
    views = {json.loads(line)["view"] for line in audit.text().splitlines() if line.strip()}
    assert root.attributes["mcp_apps_host.view"] in views and len(views) == 1

    # The host's steps, inside the root.
    consent = by_name["consent tool-call"]
    assert consent.parent_id == root.span_id and consent.attributes["mcp_apps_host.outcome"] == "allowed"
    commit = by_name["audit commit"]
    assert commit.parent_id == root.span_id
    client = by_name["MCP send tools/call echo-trace"]  # the MCP SDK's own client span
    assert client.kind == "client" and client.parent_id == root.span_id

    # The server's span joins the trace under the host's request, through _meta.traceparent.
    served = [s for s in trace if s.service == "traced-server"]
    assert [s.name for s in served] == ["tools/call echo-trace"] and served[0].parent_id == client.span_id
    version, trace_id, parent_id, flags = seen["traceparent"].split("-")
    assert (version, trace_id, parent_id) == ("00", root.trace_id, client.span_id)
    assert int(flags, 16) & 1  # sampled (the SDK may set the random-trace-id flag too)
    assert (seen["trace_id"], seen["span_id"]) == (root.trace_id, served[0].span_id)

    # ... and back: the answer left after the server answered and the audit trail committed.
    assert consent.end_ns <= client.start_ns
    assert served[0].end_ns <= commit.start_ns <= commit.end_ns <= root.end_ns

    # The person's own call is a trace of its own.
    person = [s for s in spans if s.service == SERVICE and s.name == "tools/call traced-view"]
    assert len(person) == 1 and person[0].attributes["mcp_apps_host.caller"] == "person"
    assert person[0].trace_id != root.trace_id

    # No argument value anywhere: not the host's, not the SDK's, not the server's.
    assert not [values_of(s) for s in spans if SECRET in values_of(s)]
    assert not [s for s in spans if "mcp_apps_host.arguments" in s.attributes]


def test_nothing_is_exported_unless_asked_and_the_call_works(start_host, page_for, monkeypatch):
    """An endpoint alone would export; OTEL_TRACES_EXPORTER=none says no. The host's stop flushes what it
    batched, so once it has exited, a collector that got nothing means nothing was sent."""
    clean_env(monkeypatch)
    with Collector() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
        monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
        host = start_host(servers={"traced": traced_server()})
        page = page_for(host)
        seen = view_call(page)
        assert seen["traceparent"] == "null"  # no trace to pass on: no made-up context either
        host.close()
        assert host.proc.returncode is not None
        assert collector.posts == 0 and collector.snapshot() == []
        assert "traces:" not in host.log_text()
