"""Time to interactive: from submitting `/call` to the view showing its tool result, in headless
Chromium, for two npm peer apps, against the floor measured in the same run.

The floor is the app's own start-up from nothing: the same template written (`document.write`)
into a bare sandboxed iframe on a static page, with a minimal inline bridge that answers
`ui/initialize` and sends the tool input and result as soon as the app says it is initialized.

Ours, per round, in a fresh browser context (a fresh page):
  cold  the first view of the template in that page;
  warm  a second call of the same tool in the same page, a few seconds later (the host has shown
        the template before).
With `--never-seen`, instead of cold and warm:
  never-seen  a template the person has never opened: per round a fresh host with a fresh database
        (`--db sqlite:///…` in a new directory), so no pin and no allow-list accepts the template and no
        view of it is booted ahead when the page loads; a fresh page, one call, timed the same way.
        The host is started and its server ready before the page opens (its start is not timed).
        Where the time goes is printed from the page's frames, beside when the floor's own bridge heard
        ui/initialize and initialized.
        `--typing MS` leaves MS between the line being in the chat box and Enter, as a person finishing
        it would (the default 0: pasted and sent at once); the host hears which tool is named meanwhile.
Floor and ours alternate (which one goes first flips every round); the first round is a warm-up
and is not counted. "Shown" is the moment a MutationObserver in the app's document first sees the
result's text (both sides use the same observer), on the wall clock the submit was stamped with.

Run: PYTHONPATH=src .venv/bin/python bench/time_to_interactive.py [--rounds 12] [--servers vanilla,budget]
     PYTHONPATH=src .venv/bin/python bench/time_to_interactive.py --never-seen [--rounds 12] [--typing 500]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Locator, Page, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "browser"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    HostLauncher,
    PeerLauncher,
    peer_stdio_command,
    start_new_conversation,
    wait_servers,
)
from peerdata import PeerTool, peer_tool  # noqa: E402

# name in the host -> (npm bin, tool, arguments, JS predicate on the app's document: the result is shown)
APPS: dict[str, tuple[str, str, dict[str, Any], str]] = {
    "vanilla": ("mcp-server-basic-vanillajs", "get-time", {},
                "d => /^\\d{4}-\\d\\d-\\d\\dT/.test((d.querySelector('#server-time') || {}).textContent || '')"),
    "budget": ("mcp-budget-allocator-server", "get-budget-data", {},
               "d => ((d.querySelector('#sliders-container') || {}).textContent || '').includes('Marketing')"),
}
WARM_AFTER_S = 3.0  # "warm": the page has been open for a few seconds since the first view showed
SHOWN_TIMEOUT_MS = 60_000

# Runs in every frame of our page; only the view's document (srcdoc) watches for the result.
# Chromium runs init scripts in the view frame's initial about:blank only; its window (and the
# listeners on it) carry over to the srcdoc document, which arms the watch on its first event.
WATCH_JS = """
window.__ttiWatch = (doc, check) => {
  let done = false;
  const test = () => {
    if (done) return;
    let ok = false;
    try { ok = check(doc); } catch { ok = false; }
    if (ok) { done = true; observer.disconnect(); console.log("tti-shown " + Date.now()); }
  };
  const observer = new doc.defaultView.MutationObserver(test);
  observer.observe(doc, { subtree: true, childList: true, characterData: true, attributes: true });
  test();
};
"""

OURS_INIT = WATCH_JS + """
if (window !== window.top) {
  const arm = () => {
    if (location.href !== "about:srcdoc" || window.__ttiArmed === document) return;
    window.__ttiArmed = document;
    window.__ttiWatch(document, %(check)s);
  };
  arm();
  for (const type of ["readystatechange", "DOMContentLoaded", "message"]) window.addEventListener(type, arm, true);
  document.addEventListener("readystatechange", arm, true);
}
if (window === window.top) {
  // Every page frame in or out, stamped, for the never-seen trace: [ms, "in"|"out", type, method].
  window.__ttiFrames = [];
  const note = (dir, text) => {
    try {
      const f = JSON.parse(text), m = f.message || {};
      window.__ttiFrames.push([Date.now(), dir, f.type, m.method || ("result" in m ? "result" : "")]);
    } catch { /* not a page frame */ }
  };
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) { super(...args); this.addEventListener("message", (e) => note("in", e.data)); }
    send(data) { note("out", data); super.send(data); }
  };
  document.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && e.target && e.target.matches && e.target.matches("[data-testid=chat-input]"))
      window.__ttiSubmit = Date.now();
  }, true);
}
"""

FLOOR_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>floor</title></head>
<body style="margin:0"><script>
%(watch)s
const DATA = %(data)s;
window.floorStamps = {};  // ms from go() to what the floor's bridge heard, for the trace
window.go = () => {
  const started = Date.now();
  window.floorStarted = started;
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
  frame.style.cssText = "display:block;border:0;width:100%%;height:600px";
  window.addEventListener("message", (e) => {
    if (e.source !== frame.contentWindow) return;
    const m = e.data, post = (msg) => frame.contentWindow.postMessage(msg, "*");
    if (!m || typeof m !== "object") return;
    if (m.method === "ui/initialize" || m.method === "ui/notifications/initialized") {
      window.floorStamps[m.method] ??= Date.now() - started;
    }
    if (m.method === "ui/initialize") {
      post({ jsonrpc: "2.0", id: m.id, result: {
        protocolVersion: (m.params && m.params.protocolVersion) || "2026-01-26",
        hostInfo: { name: "floor", version: "0" }, hostCapabilities: {}, hostContext: {} } });
    } else if (m.method === "ui/notifications/initialized") {
      post({ jsonrpc: "2.0", method: "ui/notifications/tool-input", params: { arguments: DATA.arguments } });
      post({ jsonrpc: "2.0", method: "ui/notifications/tool-result", params: DATA.result });
    } else if (m.method && m.id !== undefined) {
      post({ jsonrpc: "2.0", id: m.id, result: {} });
    }
  });
  document.body.append(frame);
  const doc = frame.contentDocument;
  doc.open();
  doc.write(DATA.html);
  doc.close();
  window.__ttiWatch(doc, %(check)s);
  return started;
};
</script></body></html>"""


@dataclass
class Series:
    floor: list[float] = field(default_factory=list)
    cold: list[float] = field(default_factory=list)
    warm: list[float] = field(default_factory=list)
    never_seen: list[float] = field(default_factory=list)


def serve_floor_pages(pages: dict[str, str]) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path.strip("/"))
            if body is None:
                self.send_error(404)
                return
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def floor_page(tool: PeerTool, check: str) -> str:
    data = json.dumps({"html": tool.html, "arguments": tool.arguments, "result": tool.result})
    return FLOOR_PAGE % {"watch": WATCH_JS, "data": data.replace("</", "<\\/"), "check": check}


def shown_at(page: Page, action: Callable[[], None]) -> int:
    with page.expect_console_message(lambda m: m.text.startswith("tti-shown "), timeout=SHOWN_TIMEOUT_MS) as seen:
        action()
    return int(seen.value.text.split()[1])


def measure_floor(browser: Browser, url: str) -> tuple[float, dict[str, float]]:
    """The floor's time, and when its bridge heard ui/initialize and initialized (ms from the start)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(url)
        started: list[int] = []
        shown = shown_at(page, lambda: started.append(page.evaluate("go()")))
        return float(shown - started[0]), page.evaluate("window.floorStamps")
    finally:
        context.close()


def open_console(context: Any, host: Any, server: str, tool: str, check: str) -> tuple[Page, Locator]:
    """The console in a fresh page, once it knows ``tool`` (its server list arrived), as a person finds it;
    and its chat box."""
    context.add_init_script(OURS_INIT % {"check": check})
    page = context.new_page()
    page.goto(host.url)
    box = page.locator("[data-testid=chat-input]")
    box.wait_for(state="visible", timeout=30_000)
    wait_servers(page, host, [server])
    page.locator(f'[data-testid=tool][data-server="{server}"][data-tool="{tool}"]').wait_for(
        state="attached", timeout=30_000)
    return page, box


def measure_ours(browser: Browser, host: Any, server: str, tool: str, args: dict[str, Any],
                 check: str) -> tuple[float, float]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page, box = open_console(context, host, server, tool, check)
        text = f"/call {server} {tool} {json.dumps(args)}"

        def submit() -> None:
            box.fill(text)
            box.press("Enter")

        cold_shown = shown_at(page, submit)
        cold = cold_shown - page.evaluate("window.__ttiSubmit")
        time.sleep(WARM_AFTER_S)  # the definition of warm: a page open for a few seconds
        warm_shown = shown_at(page, submit)
        warm = warm_shown - page.evaluate("window.__ttiSubmit")
        # The next fresh page opens the newest conversation: make that an empty one, so it
        # replays no view (which would start the sandbox before the cold call).
        start_new_conversation(page)
        return float(cold), float(warm)
    finally:
        context.close()


# Where a never-seen call's time goes, as the page's frames show it: (label, direction, frame type, method).
MILESTONES = (
    ("/call sent", "out", "chat", ""),
    ("call-started", "in", "call-started", ""),
    ("view-mount", "in", "view-mount", ""),
    ("proxy ready", "out", "view-message", "ui/notifications/sandbox-proxy-ready"),
    ("template sent", "in", "view-post", "ui/notifications/sandbox-resource-ready"),
    ("ui/initialize", "out", "view-message", "ui/initialize"),
    ("initialize answered", "in", "view-post", "result"),
    ("initialized", "out", "view-message", "ui/notifications/initialized"),
    ("tool-result sent", "in", "view-post", "ui/notifications/tool-result"),
    ("call-finished", "in", "call-finished", ""),
)


def milestones(frames: list[list[Any]], submitted: int) -> dict[str, float]:
    """Milliseconds from Enter to the first frame of each milestone (in order: each after the one before)."""
    found: dict[str, float] = {}
    for label, direction, kind, method in MILESTONES:
        for stamp, d, t, m in frames:
            if stamp >= submitted and d == direction and t == kind and (not method or m == method):
                found[label] = float(stamp - submitted)
                break
    return found


def measure_never_seen(browser: Browser, launcher: HostLauncher, server: str, command: str, tool: str,
                       args: dict[str, Any], check: str, typing: float) -> tuple[float, int, dict[str, float]]:
    """A host started now, with a database of its own: the template is new to it. Returns the call's time
    and the views booted ahead when Enter was pressed (0 unless the host took the template as accepted)."""
    host = launcher({server: command})
    try:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        try:
            page, box = open_console(context, host, server, tool, check)
            text = f"/call {server} {tool} {json.dumps(args)}"
            booted: list[int] = []

            def submit() -> None:
                box.fill(text)
                if typing:
                    page.wait_for_timeout(typing)  # the person finishing the line
                booted.append(page.locator("[data-testid=view-preboot]").count())
                box.press("Enter")

            shown = shown_at(page, submit)
            submitted = page.evaluate("window.__ttiSubmit")
            return (float(shown - submitted), booted[0],
                    milestones(page.evaluate("window.__ttiFrames"), submitted))
        finally:
            context.close()
    finally:
        host.close()


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=12, help="counted rounds (after one warm-up round)")
    parser.add_argument("--servers", default=",".join(APPS), help="comma-separated: " + ", ".join(APPS))
    parser.add_argument("--never-seen", action="store_true",
                        help="time a template the host has never seen (a fresh host and database per round) "
                             "instead of cold and warm")
    parser.add_argument("--typing", type=float, default=0, metavar="MS",
                        help="with --never-seen: ms between the line being in the chat box and Enter (0: pasted "
                             "and sent at once)")
    parser.add_argument("--warm-server", action="store_true",
                        help="with --never-seen: each app server runs over loopback HTTP for the whole run, warmed "
                             "up by a call before the first round (a never-seen template, not a server started now)")
    opts = parser.parse_args()
    names = [n for n in opts.servers.split(",") if n]
    unknown = [n for n in names if n not in APPS]
    if unknown:
        raise SystemExit(f"unknown server(s) {unknown}: choose from {sorted(APPS)}")

    with tempfile.TemporaryDirectory() as tmp:
        peers = PeerLauncher(Path(tmp))
        launcher = HostLauncher(Path(tmp))
        http = None
        try:
            commands = {n: peers(APPS[n][0]) if opts.warm_server else peer_stdio_command(APPS[n][0]) for n in names}
            tools = {n: asyncio.run(peer_tool(commands[n], APPS[n][1], APPS[n][2])) for n in names}
            http, base = serve_floor_pages({n: floor_page(tools[n], APPS[n][3]) for n in names})
            results = {n: Series() for n in names}
            traces: dict[str, list[dict[str, float]]] = {n: [] for n in names}
            floor_traces: dict[str, list[dict[str, float]]] = {n: [] for n in names}
            # --never-seen starts a host of its own per round; cold and warm share this one.
            host = None if opts.never_seen else launcher(commands)
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                for i in range(opts.rounds + 1):
                    for n in names:
                        _, tool, args, check = APPS[n]
                        order = ("floor", "ours") if i % 2 == 0 else ("ours", "floor")
                        got: dict[str, Any] = {}
                        for which in order:
                            if which == "floor":
                                got["floor"], got["floor stamps"] = measure_floor(browser, f"{base}/{n}")
                            elif opts.never_seen:
                                got["ours"] = measure_never_seen(browser, launcher, n, commands[n], tool, args, check,
                                                                 opts.typing)
                            else:
                                got["ours"] = measure_ours(browser, host, n, tool, args, check)
                        label = "warm-up" if i == 0 else f"round {i:2d}"
                        if opts.never_seen:
                            never, booted, trace = got["ours"]
                            print(f"{label} {n:8s} floor {got['floor']:6.0f} ms  never-seen {never:6.0f} ms  "
                                  f"(views booted ahead at Enter: {booted})", file=sys.stderr, flush=True)
                            if i > 0:
                                results[n].floor.append(got["floor"])
                                results[n].never_seen.append(never)
                                traces[n].append({**trace, "shown": never})
                                floor_traces[n].append({**got["floor stamps"], "shown": got["floor"]})
                            continue
                        cold, warm = got["ours"]
                        print(f"{label} {n:8s} floor {got['floor']:6.0f} ms  cold {cold:6.0f} ms  "
                              f"warm {warm:6.0f} ms", file=sys.stderr, flush=True)
                        if i == 0:
                            continue
                        results[n].floor.append(got["floor"])
                        results[n].cold.append(cold)
                        results[n].warm.append(warm)
                browser.close()
        finally:
            launcher.close()
            peers.close()
            if http is not None:
                http.shutdown()

    print(f"\ntime to interactive, /call → the view shows its tool result; {opts.rounds} rounds after a warm-up, "
          "medians (ratio: median of per-round ratios to the floor of the same round)\n")
    if opts.never_seen:
        print_never_seen(names, results, opts.warm_server, opts.typing)
        print_trace(names, traces, floor_traces)
        return
    print(f"{'server':<28} {'floor ms':>9} {'cold ms':>9} {'cold ×':>7} {'warm ms':>9} {'warm ×':>7}")
    for n in names:
        s = results[n]
        cold_ratio = median([c / f for c, f in zip(s.cold, s.floor, strict=True)])
        warm_ratio = median([w / f for w, f in zip(s.warm, s.floor, strict=True)])
        print(f"{APPS[n][0]:<28} {median(s.floor):9.0f} {median(s.cold):9.0f} {cold_ratio:7.2f} "
              f"{median(s.warm):9.0f} {warm_ratio:7.2f}")
    print("\ntargets: cold ≤ 1.15× the floor, warm ≤ 0.60× the floor")


def print_never_seen(names: list[str], results: dict[str, Series], warm_server: bool, typing: float) -> None:
    server = ("its server over HTTP, up and warm since before the first round" if warm_server
              else "its server started with it (stdio)")
    sent = f"Enter {typing:g} ms after the line was in the chat box" if typing else "the line pasted and sent at once"
    print(f"never seen: a fresh host and database per round, {server}; nothing booted ahead at page load; {sent}\n")
    print(f"{'server':<28} {'floor ms':>9} {'never-seen ms':>14} {'never-seen ×':>13}")
    for n in names:
        s = results[n]
        ratio = median([v / f for v, f in zip(s.never_seen, s.floor, strict=True)])
        print(f"{APPS[n][0]:<28} {median(s.floor):9.0f} {median(s.never_seen):14.0f} {ratio:13.2f}")


def print_trace(names: list[str], traces: dict[str, list[dict[str, float]]],
                floor_traces: dict[str, list[dict[str, float]]]) -> None:
    """Medians of when each milestone came, from Enter, and the step from the one before."""
    print("\nwhere a never-seen call's time goes (the page's frames; ms from Enter, medians over rounds)\n")
    labels = [m[0] for m in MILESTONES] + ["shown"]
    print(f"{'milestone':<22}" + "".join(f"{APPS[n][0][:22]:>24}" for n in names))
    previous = dict.fromkeys(names, 0.0)
    for label in labels:
        cells = []
        for n in names:
            at = median([t[label] for t in traces[n] if label in t])
            cells.append(f"{at:9.0f} (+{at - previous[n]:4.0f})".rjust(24))
            previous[n] = at if at == at else previous[n]  # NaN: a milestone not seen
        print(f"{label:<22}" + "".join(cells))
    print("\nthe floor, from the template written into its frame (ms, medians over rounds)\n")
    print(f"{'milestone':<22}" + "".join(f"{APPS[n][0][:22]:>24}" for n in names))
    for label, key in (("ui/initialize", "ui/initialize"), ("initialized", "ui/notifications/initialized"),
                       ("shown", "shown")):
        cells = [f"{median([t[key] for t in floor_traces[n] if key in t]):9.0f}".rjust(24) for n in names]
        print(f"{label:<22}" + "".join(cells))


if __name__ == "__main__":
    main()
