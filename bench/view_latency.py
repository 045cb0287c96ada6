"""How fast views appear and hear their input, measured end to end in headless Chromium.

1. /call → the view shows its tool result (median over N runs), against a baseline in the
   same process: the same round trip for a tool without a view (its card shows the result).
2. The model streams a tool call → the first ui/notifications/tool-input-partial reaches the
   view: from the moment the scripted model server sends the first argument chunk to the
   moment the view's message listener sees the first partial (both wall clock, one machine).

Run: .venv/bin/python bench/view_latency.py [--runs 20]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import Browser, Page, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "browser"))
from harness import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

from tests.modelfakes import openai_fake, streamed_call, text  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "servers.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_host(base_url: str, workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port, sandbox, token = free_port(), free_port(), secrets.token_urlsafe(12)
    cmd = [sys.executable, "-m", "mcp_apps_host", "serve", "--no-open", "--port", str(port), "--sandbox-port",
           str(sandbox), f"--token={token}", "--db", f"sqlite:///{workdir}/bench.db", "--log-level", "warning",
           "--server", f"rec={shlex.join([sys.executable, str(FIXTURES), 'rec'])}",
           "--server", f"other={shlex.join([sys.executable, str(FIXTURES), 'other'])}",
           "--model", "openai:fake", "--model-base-url", base_url]
    log = open(workdir / "host.log", "wb")  # noqa: SIM115 - the host writes to it for as long as it runs
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        m = re.search(r"running at (\S+)", (workdir / "host.log").read_text(errors="replace"))
        if m:
            return proc, m.group(1)
        time.sleep(0.05)
    raise SystemExit("the host did not start:\n" + (workdir / "host.log").read_text())


def open_console(browser: Browser, url: str) -> Page:
    """The console in a new page, once its fixture servers are connected."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(url)
    page.locator("[data-testid=chat-input]").wait_for()
    deadline = time.monotonic() + 60
    api = url.split("/?")[0] + "/api/servers"
    while any(s["status"] != "ready" for s in page.request.get(api).json()["servers"]):
        assert time.monotonic() < deadline, "the fixture server did not connect"
        time.sleep(0.1)
    return page


def median_ms(values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"median {statistics.median(ms):7.1f} ms  (min {min(ms):6.1f}, max {max(ms):6.1f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    arguments = json.dumps({"action": "show", "text": "benchmark " * 8, "n": 1})
    turn = [text("ok "), streamed_call("rec__record", arguments, size=6)[0], {"mark": "first-args"},
            *streamed_call("rec__record", arguments, size=6)[1:]]
    script = [t for _ in range(runs) for t in (turn, [text("done")])]
    with tempfile.TemporaryDirectory() as tmp, openai_fake.serve_script(script, delay=0.0) as fake:
        proc, url = start_host(fake.base_url, Path(tmp))
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = open_console(browser, url)
                box = page.locator("[data-testid=chat-input]")

                def timed_call(server: str, tool: str, done_selector) -> float:
                    box.fill(f"/call {server} {tool} {{}}")
                    started = time.perf_counter()
                    box.press("Enter")
                    done_selector().wait_for(timeout=30_000)
                    return time.perf_counter() - started

                views, plain = [], []
                done = '[data-testid=call][data-state="done"]'
                for i in range(runs):
                    views.append(timed_call("rec", "record", lambda i=i: page.locator("[data-testid=view]").nth(i)
                                            .frame_locator("iframe.proxy").frame_locator("iframe")
                                            .locator('[data-check="result"]')))
                    plain.append(timed_call("other", "other-tool",
                                            lambda i=i: page.locator(done).filter(has_text="other ran").nth(i)))

                partials = []
                for i in range(runs):
                    box.fill("record please")
                    box.press("Enter")
                    frame = page.locator("[data-testid=view]").nth(runs + i).frame_locator("iframe.proxy")
                    body = frame.frame_locator("iframe").locator("body[data-first-partial-at]")
                    body.wait_for(state="attached", timeout=30_000)
                    seen_at = float(body.get_attribute("data-first-partial-at")) / 1000
                    sent_at = [t for name, t in fake.state.marks if name == "first-args"][i]
                    partials.append(seen_at - sent_at)
                    page.get_by_text("done").nth(i).wait_for(timeout=30_000)
                browser.close()
        finally:
            os.killpg(proc.pid, 9)
    print(f"runs: {runs}")
    print(f"/call → view shows its tool result     {median_ms(views)}")
    print(f"/call → card shows a plain tool result {median_ms(plain)}  (baseline)")
    print(f"ratio view / plain call: {statistics.median(views) / statistics.median(plain):.2f}")
    print(f"first argument chunk → first tool-input-partial in the view  {median_ms(partials)}")


if __name__ == "__main__":
    main()
