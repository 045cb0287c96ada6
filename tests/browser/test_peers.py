"""The official third-party MCP App servers (npm, see tests/peers) in our host, over stdio
and over Streamable HTTP.

An app that renders its tool result here is evidence that the host speaks the protocol
the way real apps expect: these apps were written against another host.
One host per transport serves every peer; each test gets its own page.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from harness import (
    SAMPLE_PDF_PAGES,
    Host,
    HostLauncher,
    PeerLauncher,
    answer_consent,
    call_tool,
    peer_stdio_command,
    sample_pdf_page_text,
    view_frame,
    wait_view,
    write_sample_pdf,
)
from playwright.sync_api import Locator, Page, expect

pytestmark = pytest.mark.browser

# server name in the host -> npm bin
PEERS = {
    "vanilla": "mcp-server-basic-vanillajs",
    "react": "mcp-server-basic-react",
    "budget": "mcp-budget-allocator-server",
    "segments": "mcp-customer-segmentation-server",
    "pdf": "mcp-pdf-server",
    "debug": "mcp-server-debug",
    "map": "mcp-map-server",
}

VIEW_READY_MS = 30_000  # the pdf template is 4.3 MB; everything else is < 0.5 MB
APP_RENDER_MS = 20_000


@dataclass
class Peers:
    transport: str
    host: Host
    debug_log: Path
    pdf: Path


@pytest.fixture(scope="module", params=["stdio", "http"])
def peers(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Peers]:
    transport: str = request.param
    base = tmp_path_factory.mktemp(f"peers-{transport}")
    pdf = write_sample_pdf(base / "sample.pdf")
    debug_log = base / "debug-server.jsonl"
    # server-pdf only serves files named on its command line; server-debug appends one JSON
    # line per app event to its --log-file.
    extra = {"pdf": [str(pdf)], "debug": [f"--log-file={debug_log}"]}

    peer_launcher = PeerLauncher(base)
    host_launcher = HostLauncher(base)
    try:
        if transport == "stdio":
            servers = {name: peer_stdio_command(bin_name, *extra.get(name, ())) for name, bin_name in PEERS.items()}
        else:
            servers = {name: peer_launcher(bin_name, *extra.get(name, ())) for name, bin_name in PEERS.items()}
        host = host_launcher(servers)
        yield Peers(transport, host, debug_log, pdf)
    finally:
        # Closed here, not at module end, so the stdio and HTTP sets never run side by side.
        host_launcher.close()
        peer_launcher.close()


@pytest.fixture
def page(peers: Peers, page_for: Callable[..., Page]) -> Page:
    # The host keeps conversations: start each test on an empty one, not a replay of the last.
    return page_for(peers.host, new_conversation=True)


def show(page: Page, server: str, tool: str, args: dict[str, Any] | None = None,
         timeout: float = VIEW_READY_MS) -> Locator:
    call_tool(page, server, tool, args)
    view = wait_view(page, server, tool, "ready", timeout=timeout)
    # Chromium does not run animation frames in off-screen cross-origin frames, and some
    # apps (pdf.js) render only in them: look at the view, as a person would.
    view.scroll_into_view_if_needed()
    return view


# --------------------------------------------------------------------------- simple apps

ISO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


@pytest.mark.parametrize(("server", "time_selector"), [
    ("vanilla", "#server-time"),
    ("react", "main code"),
], ids=["vanilla", "react"])
def test_get_time_shows_the_result_time(page: Page, server: str, time_selector: str) -> None:
    before = datetime.now(UTC)
    view = show(page, server, "get-time", {})
    shown = view_frame(view).locator(time_selector)
    # "Loading..." until the tool result arrives; "[ERROR]" if it had no structuredContent.time.
    expect(shown).to_have_text(ISO_TIME, timeout=APP_RENDER_MS)
    time_text = shown.inner_text()
    stamp = datetime.fromisoformat(time_text.replace("Z", "+00:00"))
    assert before - timedelta(seconds=5) <= stamp <= datetime.now(UTC) + timedelta(seconds=5), stamp
    # The same result, as the conversation's card for the person's call shows it.
    card = page.locator(f"[data-testid=call][data-source=person][data-server={server}][data-tool=get-time]")
    expect(card.locator("[data-testid=call-result]")).to_contain_text(time_text)


def test_budget_allocator_renders_the_budget_data(page: Page) -> None:
    view = show(page, "budget", "get-budget-data", {})
    app = view_frame(view)
    # Everything below is built from structuredContent.config/analytics of the result.
    expect(app.locator("#budget-selector option")).to_have_count(4, timeout=APP_RENDER_MS)
    expect(app.locator("#budget-selector")).to_have_value("100000")
    expect(app.locator("#stage-selector option")).to_have_count(4)
    expect(app.locator("#sliders-container")).to_contain_text("Marketing")
    expect(app.locator("#sliders-container")).to_contain_text("Engineering")
    expect(app.locator("#sliders-container")).to_contain_text("R&D")
    # Default shares add up to 100 % of the $100,000 default budget.
    expect(app.locator("#status-bar")).to_contain_text(re.compile(r"Allocated: \$100,000 / \$100,000"))
    expect(app.locator("#comparison-summary")).not_to_have_text("Loading benchmarks...")


def test_customer_segmentation_renders_its_customers(page: Page) -> None:
    view = show(page, "segments", "get-customer-data", {})
    legend = view_frame(view).locator("#legend .legend-item")
    # The app fetches its data with its own tools/call (app -> host -> server) 100 ms after
    # start, possibly before the handshake finished; the legend appears only with the data.
    # The tool is visible to the model too, so the host asks the person first.
    expect(legend).to_have_count(0)
    answer_consent(page, "tool-call", expect_text="get-customer-data")
    expect(legend).to_have_count(4, timeout=APP_RENDER_MS)
    names = [n.strip() for n in legend.locator(".legend-label").all_inner_texts()]
    assert sorted(names) == ["Enterprise", "Mid-Market", "SMB", "Startup"]
    counts = [int(re.sub(r"\D", "", c)) for c in legend.locator(".legend-count").all_inner_texts()]
    assert sum(counts) == 250, counts


def test_pdf_viewer_renders_the_local_file(page: Page, peers: Peers) -> None:
    # display_pdf takes a URL: file:// of a file named on the server's command line.
    view = show(page, "pdf", "display_pdf", {"url": peers.pdf.as_uri()}, timeout=60_000)
    app = view_frame(view)
    # The viewer reads the bytes with the app-only read_pdf_bytes tool, then pdf.js renders;
    # it shows either the document or its error box.
    expect(app.locator("#viewer:visible, #error:visible")).to_have_count(1, timeout=30_000)
    if app.locator("#error").is_visible():
        pytest.fail(f"the PDF viewer shows an error: {app.locator('#error-message').inner_text()[:400]}")
    expect(app.locator("#viewer")).to_be_visible()
    expect(app.locator("#total-pages")).to_have_text(f"of {SAMPLE_PDF_PAGES}")
    expect(app.locator("#page-input")).to_have_value("1")
    expect(app.locator("#text-layer")).to_contain_text(sample_pdf_page_text(1), timeout=APP_RENDER_MS)
    expect(app.locator("#error")).to_be_hidden()
    # Paging works, so the whole document arrived.
    app.locator("#next-btn").click()
    expect(app.locator("#page-input")).to_have_value("2")
    expect(app.locator("#text-layer")).to_contain_text(sample_pdf_page_text(2), timeout=APP_RENDER_MS)


# --------------------------------------------------------------------------- offline map


def test_map_without_network_ends_in_error(page: Page) -> None:
    # Its template loads CesiumJS from a CDN before it connects; offline it never sends
    # ui/initialize, so the host's view init timeout must end the wait.
    started = time.monotonic()
    call_tool(page, "map", "show-map", {})
    view = wait_view(page, "map", "show-map", "error", timeout=90_000)
    elapsed = time.monotonic() - started
    assert elapsed < 90, elapsed
    error = view.locator("[data-testid=view-error]")
    expect(error).to_be_visible()
    assert error.inner_text().strip(), f"the error view says nothing: {view.inner_text()!r}"


# --------------------------------------------------------------------------- debug app


class DebugLog:
    """The JSON lines server-debug appends for each event its app reports."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.start = len(self._all())

    def _all(self) -> list[dict[str, Any]]:
        try:
            lines = self.path.read_text().splitlines()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in lines if line.strip()]

    def entries(self) -> list[dict[str, Any]]:
        """Entries written since this test began."""
        return self._all()[self.start:]

    def mark(self) -> int:
        return len(self.entries())

    def wait(self, kind: str, match: Callable[[Any], bool] = lambda p: True, since: int = 0,
             fail_on_error: bool = True, timeout: float = 15.0) -> dict[str, Any]:
        """The first entry of ``kind`` (from index ``since``) whose payload matches. An
        "error" entry (the app's promise was rejected) found first fails at once."""
        deadline = time.monotonic() + timeout
        while True:
            for entry in self.entries()[since:]:
                if entry.get("type") == kind and match(entry.get("payload")):
                    return entry
                if fail_on_error and entry.get("type") in ("error", "onerror"):
                    raise AssertionError(f"the app reported an error while waiting for {kind!r}: {entry}")
            if time.monotonic() > deadline:
                have = [(e.get("type"), e.get("payload")) for e in self.entries()[since:]][-20:]
                raise AssertionError(f"no {kind!r} entry in {self.path.name} within {timeout:.0f} s; last: {have}")
            time.sleep(0.1)


def _proxy_height(view: Locator) -> float:
    return float(view.locator("iframe.proxy").evaluate("e => e.clientHeight"))


def _wait_height(view: Locator, want: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while abs(_proxy_height(view) - want) > 2:
        if time.monotonic() > deadline:
            raise AssertionError(f"proxy iframe is {_proxy_height(view)} px high, expected {want}")
        time.sleep(0.1)


def test_debug_app_drives_every_host_feature(page: Page, peers: Peers) -> None:
    log = DebugLog(peers.debug_log)
    args = {"contentType": "text", "multipleBlocks": False}
    view = show(page, "debug", "debug-tool", args)
    app = view_frame(view)

    def act(button: str, kind: str, match: Callable[[Any], bool] = lambda p: True) -> Any:
        """Click a button in the app; return the payload of the entry it reports."""
        since = log.mark()
        app.locator(button).click()
        return log.wait(kind, match, since=since)["payload"]

    # Handshake, tool input and tool result reached the app; its reports reached the server
    # through the app-only debug-log tool, which the host proxies for it.
    log.wait("connected")
    log.wait("ontoolinput", lambda p: p.get("arguments") == args)
    result = log.wait("ontoolresult")["payload"]
    assert result["structuredContent"]["config"]["contentType"] == "text", result
    assert result["content"] == [{"type": "text", "text": "Debug text content"}], result
    expect(app.locator("#event-log")).to_contain_text("ontoolresult")
    expect(app.locator("#host-context-info")).to_contain_text("mcp-apps-host")

    # Logging at every level shows up in the view's log on the page.
    for level in ("debug", "info", "warning", "error"):
        text = f"debug peer log at {level}"
        app.locator("#log-data").fill(text)
        act(f"#log-{level}-btn", "send-log", lambda p, level=level, text=text: p == {"level": level, "data": text})
        line = view.locator(f"[data-testid=view-log] li[data-level={level}]").filter(has_text=text)
        expect(line).to_have_count(1)

    # ui/message asks the person first; allowed, it lands in the conversation.
    message = "Hello from the debug peer"
    app.locator("#message-text").fill(message)
    since = log.mark()
    app.locator("#send-message-text-btn").click()
    consent = page.locator("[data-testid=consent][data-kind=message]")
    expect(consent).to_be_visible()
    expect(consent).to_contain_text(message)
    consent.locator("[data-testid=consent-allow]").click()
    expect(consent).to_have_count(0)
    sent = log.wait("send-message-result", since=since)["payload"]
    assert not sent.get("isError"), sent
    said = page.locator("[data-testid=chat-message][data-role=user]").filter(has_text=message)
    expect(said).to_have_count(1)
    expect(said).to_contain_text("debug")  # says which server's view sent it

    # Model context: text, structured and image updates are all accepted.
    app.locator("#context-text").fill("the debug peer's state")
    # The page shows the latest one under the view.
    context = view.locator("[data-testid=view-context]")
    act("#update-context-text-btn", "update-context",
        lambda p: p == {"type": "text", "value": "the debug peer's state"})
    expect(context).to_contain_text("the debug peer's state")
    act("#update-context-structured-btn", "update-context", lambda p: p == {"type": "structured"})
    expect(context).to_contain_text("debugState")
    act("#update-context-image-btn", "update-context", lambda p: p == {"type": "image"})
    expect(context).to_contain_text("image/png")

    # Display mode: the app declared no modes, so the host stays inline and says so.
    shown = act("#display-fullscreen-btn", "display-mode-result")
    assert shown == {"mode": "fullscreen", "result": {"mode": "inline"}}, shown

    # ui/open-link: declined first (the app must not see success), then allowed (a tab opens).
    url = "https://modelcontextprotocol.io/"
    page.context.route(url, lambda route: route.fulfill(body="<title>opened</title>", content_type="text/html"))
    app.locator("#link-url").fill(url)
    consent = page.locator("[data-testid=consent][data-kind=open-link]")
    since = log.mark()
    app.locator("#open-link-btn").click()
    expect(consent).to_be_visible()
    expect(consent).to_contain_text(url)
    consent.locator("[data-testid=consent-deny]").click()
    expect(consent).to_have_count(0)
    # A refusal reaches the app as a JSON-RPC error (reported as "error") or as isError.
    log.wait("error", since=since, fail_on_error=False)
    assert not any(e["type"] == "open-link-result" and not e["payload"].get("isError")
                   for e in log.entries()[since:]), "a declined link was reported as opened"
    declined_at = log.mark()

    app.locator("#open-link-btn").click()
    expect(consent).to_be_visible()
    with page.context.expect_page(timeout=10_000) as new_tab:
        consent.locator("[data-testid=consent-allow]").click()
    new_tab.value.wait_for_url(url)
    opened = log.wait("open-link-result", since=declined_at)["payload"]
    assert not opened.get("isError"), opened

    # Size: with auto-resize off, each requested height is applied to the proxy iframe.
    act("#auto-resize-toggle", "auto-resize-toggle", lambda p: p == {"enabled": False})
    act("#resize-800x600-btn", "manual-resize", lambda p: p == {"width": 800, "height": 600})
    _wait_height(view, 600)
    act("#resize-400x300-btn", "manual-resize", lambda p: p == {"width": 400, "height": 300})
    _wait_height(view, 300)

    # Tool calls from the app: the model-visible debug-tool and the app-only debug-refresh.
    # debug-tool is visible to the model as well, so the host asks the person first;
    # debug-refresh (like debug-log) is app-only and needs no question.
    app.locator("#tool-content-type").select_option("image")
    act("#call-debug-tool-btn", "call-server-tool")
    answer_consent(page, "tool-call", expect_text="debug-tool")
    called = log.wait("server-tool-result", lambda p: p["structuredContent"]["config"]["contentType"] == "image",
                      since=declined_at)["payload"]
    assert [b["type"] for b in called["content"]] == ["image"], called  # "Multiple blocks" is unticked
    # The page shows the app's call as a card of its own, marked as coming from the view.
    card = page.locator("[data-testid=call][data-source=view][data-server=debug][data-tool=debug-tool]")
    expect(card).to_have_count(1)
    expect(card).to_have_attribute("data-state", "done")
    expect(card.locator("[data-testid=content-image]")).to_have_count(1)
    since = log.mark()
    app.locator("#call-debug-refresh-btn").click()
    refreshed = log.wait("server-tool-result", lambda p: "config" not in (p.get("structuredContent") or {}),
                         since=since)["payload"]
    assert not refreshed.get("isError"), refreshed
    assert refreshed["content"][0]["text"].startswith("Server timestamp: "), refreshed
    card = page.locator("[data-testid=call][data-source=view][data-tool=debug-refresh]")
    expect(card).to_have_attribute("data-state", "done")
    expect(card.locator("[data-testid=call-result]")).to_contain_text(refreshed["content"][0]["text"])

    # Nothing else the app did failed.
    errors = [e for e in log.entries() if e.get("type") in ("error", "onerror")]
    assert len(errors) == 1, errors
    assert view.get_attribute("data-state") == "ready"
