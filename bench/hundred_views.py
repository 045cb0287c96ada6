"""A 100-view conversation: Chromium's total memory and the time to open it, with lazy mounting
(`max_live_views`, the default) against every view mounted (the baseline), alternating in this process.

The conversation is made once (100 `/call`s of a view tool) and kept in a SQLite file; each run starts
a host on a copy of it, opens it in a fresh headless Chromium and times it until the view at the end
of the conversation (where the page opens) is ready; then it waits for every mounted view to load.
Memory is the proportional set size (PSS) summed over every process of that Chromium (browser,
renderers, GPU, utility), read from /proc then.

    python bench/hundred_views.py [--views 100] [--runs 3] [--limit 180]
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

from playwright.sync_api import Page, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeout

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "browser"))
from harness import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

SERVER = f"{sys.executable} {ROOT / 'tests' / 'fixtures' / 'display_server.py'}"
ALL = 100_000  # max_live_views high enough that every view is mounted


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_host(db: Path, workdir: Path, max_live: int | None) -> tuple[subprocess.Popen[bytes], str]:
    port, sandbox, token = free_port(), free_port(), secrets.token_urlsafe(12)
    cmd = [sys.executable, "-m", "mcp_apps_host", "serve", "--no-open", "--port", str(port), "--sandbox-port",
           str(sandbox), f"--token={token}", "--db", f"sqlite:///{db}", "--log-level", "warning",
           "--server", f"display={SERVER}"]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if max_live is not None:
        env["MCP_APPS_HOST_MAX_LIVE_VIEWS"] = str(max_live)
    log_path = workdir / f"host-{port}.log"
    log = open(log_path, "wb")  # noqa: SIM115 - the host writes to it for as long as it runs
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        m = re.search(r"running at (\S+)", log_path.read_text(errors="replace"))
        if m:
            return proc, m.group(1)
        time.sleep(0.05)
    raise SystemExit("the host did not start:\n" + log_path.read_text())


def stop(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def wait_servers(page: Page, url: str) -> None:
    api = url.split("/?")[0] + "/api/servers"
    deadline = time.monotonic() + 60
    while any(s["status"] != "ready" for s in page.request.get(api).json()["servers"]):
        assert time.monotonic() < deadline, "the display server did not connect"
        time.sleep(0.1)


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone
        tree.setdefault(ppid, []).append(int(pid))
    return tree


def chromium_pss_kib() -> int:
    """PSS of every Chromium process started under this one (through Playwright's driver): the one
    browser open at the time."""
    tree, total, todo = _children(), 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        todo += tree.get(pid, [])
        try:
            if "chromium" not in Path(f"/proc/{pid}/comm").read_text():
                continue
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            continue  # gone
    return total


def last_view_ready(page: Page, views: int) -> None:
    """The conversation is drawn and the view at its end, where the page opens, is ready."""
    page.wait_for_function(
        """n => {
            const all = document.querySelectorAll('[data-testid=view][data-tool=modes-view]');
            return all.length >= n && all[all.length - 1].dataset.state === 'ready';
        }""", arg=views, timeout=600_000, polling=50)


def all_mounted_ready(page: Page, limit: float) -> bool:
    """No mounted view is still loading (each is ready, or failed its handshake); False when some still
    load after ``limit`` seconds."""
    try:
        page.wait_for_function(
            "() => ![...document.querySelectorAll('[data-testid=view]')].some((v) => v.dataset.state === 'loading')",
            timeout=limit * 1000, polling=100)
    except PlaywrightTimeout:
        return False
    return True


def make_conversation(db: Path, workdir: Path, views: int) -> None:
    proc, url = start_host(db, workdir, None)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(url)
            wait_servers(page, url)
            box = page.locator("[data-testid=chat-input]")
            for n in range(1, views + 1):
                box.fill(f'/call display modes-view {{"n": {n}}}')
                box.press("Enter")
                page.locator('[data-testid=call][data-state="done"]').nth(n - 1).wait_for(timeout=60_000)
            last_view_ready(page, views)
            all_mounted_ready(page, 600)
            browser.close()
    finally:
        stop(proc)


def copy_database(source: Path, target: Path) -> None:
    """A copy of the whole database: the last items a host wrote may still be in its write-ahead log
    beside the file (a copy of the file alone lost them, and the conversation opened short)."""
    with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(target)) as dst:
        src.backup(dst)


def open_once(db: Path, workdir: Path, views: int, max_live: int | None,
              limit: float) -> tuple[float, int, int, int]:
    """(seconds to open, Chromium PSS in KiB, views running, views not ready: failed their handshake or
    still loading after ``limit`` seconds) for one fresh host and browser."""
    run_db = workdir / f"run-{secrets.token_hex(4)}.db"
    copy_database(db, run_db)
    proc, url = start_host(run_db, workdir, max_live)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            started = time.perf_counter()
            page.goto(url)
            last_view_ready(page, views)
            elapsed = time.perf_counter() - started
            all_mounted_ready(page, limit)  # then memory, once the views mounted have loaded
            running = page.locator("[data-testid=view] iframe.proxy").count()
            failed = page.locator("[data-testid=view]:is([data-state=error], [data-state=loading])").count()
            pss = chromium_pss_kib()
            browser.close()
    finally:
        stop(proc)
    return elapsed, pss, running, failed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--views", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--limit", type=float, default=180, help="seconds a run waits for its views at most")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        db = workdir / "conversation.db"
        made = time.perf_counter()
        make_conversation(db, workdir, args.views)
        print(f"made a {args.views}-view conversation in {time.perf_counter() - made:.0f} s")
        lazy: list[tuple[float, int, int, int]] = []
        every: list[tuple[float, int, int, int]] = []
        for _ in range(args.runs):  # alternating, so a slower moment of the machine hits both
            every.append(open_once(db, workdir, args.views, ALL, args.limit))
            lazy.append(open_once(db, workdir, args.views, None, args.limit))

    def report(name: str, runs: list[tuple[float, int, int, int]]) -> tuple[float, float]:
        seconds = statistics.median(r[0] for r in runs)
        mib = statistics.median(r[1] for r in runs) / 1024
        # A view that missed view_init_timeout while all the others loaded ends in error; one whose proxy
        # never loaded is still loading when the run gives up (--limit).
        print(f"{name:<34} open median {seconds:6.2f} s   Chromium PSS median {mib:7.0f} MiB   "
              f"views running {runs[-1][2]}   not ready (most in a run) {max(r[3] for r in runs)}")
        return seconds, mib

    print(f"runs: {args.runs} each, {args.views} views")
    t_all, m_all = report("every view mounted (baseline)", every)
    t_lazy, m_lazy = report("lazy (max_live_views default)", lazy)
    print(f"ratio lazy / all: memory {m_lazy / m_all:.2f}, time to open {t_lazy / t_all:.2f}")


if __name__ == "__main__":
    main()
