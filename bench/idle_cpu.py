"""Idle CPU: what an open console page costs the browser while nobody uses it, against an empty page.

Two kinds of page alternate (which goes first flips every round), each in a fresh browser context of
the same headless Chromium, left alone for `--seconds`:
  console  the host's page with views booted ahead: the person has already accepted the servers'
           templates (a first page called each tool once, which pins its template), so the host boots
           a view of each ahead when the page loads (at most `prebooted_views_per_tab`);
  empty    about:blank.
The idle window starts once the console's booted-ahead views are in the page (or at once for the
empty page), after a few seconds to settle. Over it, the CPU time (user + system) of Chromium's whole
process tree is read from /proc: the browser process (a descendant of this one, via Playwright's
driver) and every process under it, with the CPU of the children they reaped, so renderers that end
during the window still count. The host's process tree (the host and its stdio servers) is read the
same way and shown beside it.

For the console page it also records the views booted ahead at the start and at the end of the window
and how many were booted during it (a booted view not taken within `prebooted_view_max_age` lapses and
is not booted again until the person shows intent). After the window it shows that intent boots them
again: the chat box takes the focus (the page sends `intent`), the bench waits until the booted views
are back, submits `/call` of the first server's tool 2 s after the focus (a person typing) and times
Enter to the app showing its result, then a second call a few seconds later in the same page (warm,
as in time_to_interactive.py).

Run: PYTHONPATH=src .venv/bin/python bench/idle_cpu.py [--rounds 3] [--seconds 120]
     [--servers vanilla,budget] [--prebooted-max-age SECONDS]
(`--prebooted-max-age` sets the host's `prebooted_view_max_age`, 45 s by default, through
MCP_APPS_HOST_PREBOOTED_VIEW_MAX_AGE.) Linux only (/proc).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from playwright.sync_api import Browser, Page, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "browser"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    Host,
    HostLauncher,
    peer_stdio_command,
    start_new_conversation,
    wait_servers,
    wait_view,
)
from time_to_interactive import APPS, OURS_INIT, WARM_AFTER_S, shown_at  # noqa: E402

from mcp_apps_host.settings import limits_from_env  # noqa: E402

SETTLE_S = 3.0  # after the page is up (and its booted views are in it), before the window starts
BOOTED_TIMEOUT_S = 60.0  # for the views booted ahead to appear, at page load and after intent
TYPING_S = 2.0  # from the chat box's focus to Enter: a person typing the command
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PREBOOTED = "[data-testid=view-preboot]"

# Counts the views booted ahead that enter the page from now on.
COUNT_BOOTED_JS = """() => {
  window.__bootedDuring = 0;
  new MutationObserver((records) => {
    for (const r of records) for (const n of r.addedNodes) {
      if (!(n instanceof Element)) continue;
      if (n.matches("[data-testid=view-preboot]")) window.__bootedDuring += 1;
      window.__bootedDuring += n.querySelectorAll("[data-testid=view-preboot]").length;
    }
  }).observe(document.body, { subtree: true, childList: true });
}"""


# --------------------------------------------------------------------------- CPU from /proc


def children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids += [int(k) for k in f.read().split()]
        except OSError:
            continue
    return kids


def tree(root: int) -> list[int]:
    """``root`` and its descendants (bounded: a pid is visited once)."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        stack += children(pid)
    return sorted(seen)


def stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command name: state is [0], ppid [1], utime..cstime [11:15]."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def cpu_seconds(root: int) -> float:
    """User + system CPU of ``root``'s tree, with what its processes' reaped children used."""
    ticks = 0
    for pid in tree(root):
        stat = stat_fields(pid)
        if stat is None:
            continue  # it ended meanwhile: its parent's cutime/cstime has it, or will
        ticks += sum(int(v) for v in stat[11:15])  # utime stime cutime cstime
    return ticks / CLOCK_TICKS


def browser_pid() -> int:
    """Chromium's browser process: the topmost `chromium` under this process (Playwright's driver starts it)."""
    for pid in tree(os.getpid()):
        stat = stat_fields(pid)
        if comm(pid).startswith("chromium") and stat is not None and not comm(int(stat[1])).startswith("chromium"):
            return pid
    raise SystemExit("no chromium process found under this one")


# --------------------------------------------------------------------------- pages


@dataclass
class ConsoleRound:
    cpu: float
    host_cpu: float
    booted_start: int
    booted_end: int
    booted_during: int
    back_after_s: float | None
    intent_ms: float
    warm_ms: float


@dataclass
class Series:
    console: list[ConsoleRound] = field(default_factory=list)
    empty_cpu: list[float] = field(default_factory=list)
    empty_host_cpu: list[float] = field(default_factory=list)


def booted(page: Page) -> int:
    return page.locator(PREBOOTED).count()


def wait_booted(page: Page, least: int, timeout: float = BOOTED_TIMEOUT_S) -> bool:
    deadline = time.monotonic() + timeout
    while booted(page) < least:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def submit(page: Page, text: str) -> float:
    box = page.locator("[data-testid=chat-input]")

    def go() -> None:
        box.fill(text)
        box.press("Enter")

    shown = shown_at(page, go)
    return float(shown - page.evaluate("window.__ttiSubmit"))


def accept_templates(browser: Browser, host: Host, names: list[str]) -> None:
    """A first page calls each tool once: the host pins each template (first use), so it is accepted."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(host.url)
        wait_servers(page, host, names)
        for n in names:
            _, tool, args, _ = APPS[n]
            page.locator(f'[data-testid=tool][data-server="{n}"][data-tool="{tool}"]').wait_for(
                state="attached", timeout=30_000)
            box = page.locator("[data-testid=chat-input]")
            box.fill(f"/call {n} {tool} {json.dumps(args)}")
            box.press("Enter")
            wait_view(page, n, tool, "ready", timeout=60_000)
        start_new_conversation(page)  # the next page opens an empty conversation: no view replayed
    finally:
        context.close()


def window(seconds: float, chromium: int, host: Host) -> tuple[float, float]:
    cpu0, host0 = cpu_seconds(chromium), cpu_seconds(host.proc.pid)
    time.sleep(seconds)
    return cpu_seconds(chromium) - cpu0, cpu_seconds(host.proc.pid) - host0


def measure_console(browser: Browser, chromium: int, host: Host, names: list[str], expected: int,
                    seconds: float) -> ConsoleRound:
    first = names[0]
    _, tool, args, check = APPS[first]
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        context.add_init_script(OURS_INIT % {"check": check})
        page = context.new_page()
        page.goto(host.url)
        page.locator("[data-testid=chat-input]").wait_for(state="visible", timeout=30_000)
        wait_servers(page, host, names)
        if not wait_booted(page, expected):
            print(f"  only {booted(page)} of {expected} views booted ahead at page load", file=sys.stderr)
        time.sleep(SETTLE_S)
        # Nothing may show intent during the window: no focus on the chat box, the pointer nowhere.
        page.evaluate("() => document.activeElement && document.activeElement.blur()")
        page.evaluate(COUNT_BOOTED_JS)
        start = booted(page)
        cpu, host_cpu = window(seconds, chromium, host)
        end = booted(page)
        during = int(page.evaluate("window.__bootedDuring"))

        # Intent: the chat box takes the focus; the lapsed views boot again.
        focused = time.monotonic()
        page.locator("[data-testid=chat-input]").focus()
        back = wait_booted(page, expected)
        back_after = time.monotonic() - focused if back else None
        time.sleep(max(0.0, focused + TYPING_S - time.monotonic()))
        text = f"/call {first} {tool} {json.dumps(args)}"
        intent_ms = submit(page, text)
        time.sleep(WARM_AFTER_S)
        warm_ms = submit(page, text)
        start_new_conversation(page)  # the next console page replays no view
        return ConsoleRound(cpu, host_cpu, start, end, during, back_after, intent_ms, warm_ms)
    finally:
        context.close()


def measure_empty(browser: Browser, chromium: int, host: Host, seconds: float) -> tuple[float, float]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto("about:blank")
        time.sleep(SETTLE_S)
        return window(seconds, chromium, host)
    finally:
        context.close()


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds; each has one window of each kind of page")
    parser.add_argument("--seconds", type=float, default=120.0, help="length of one idle window")
    parser.add_argument("--servers", default=",".join(APPS), help="comma-separated: " + ", ".join(APPS))
    parser.add_argument("--prebooted-max-age", type=float, default=None,
                        help="the host's prebooted_view_max_age in seconds (default: the host's, 45)")
    opts = parser.parse_args()
    names = [n for n in opts.servers.split(",") if n]
    unknown = [n for n in names if n not in APPS]
    if unknown or not names:
        raise SystemExit(f"unknown server(s) {unknown}: choose from {sorted(APPS)}")
    if opts.prebooted_max_age is not None:
        os.environ["MCP_APPS_HOST_PREBOOTED_VIEW_MAX_AGE"] = str(opts.prebooted_max_age)  # the host inherits it
    limits = limits_from_env()
    expected = min(len(names), limits.prebooted_views_per_tab)

    commands = {n: peer_stdio_command(APPS[n][0]) for n in names}
    series = Series()
    with tempfile.TemporaryDirectory() as tmp:
        launcher = HostLauncher(Path(tmp))
        try:
            host = launcher(commands)
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                chromium = browser_pid()
                accept_templates(browser, host, names)
                for i in range(opts.rounds):
                    order = ("console", "empty") if i % 2 == 0 else ("empty", "console")
                    for kind in order:
                        if kind == "console":
                            r = measure_console(browser, chromium, host, names, expected, opts.seconds)
                            series.console.append(r)
                            back = f"{r.back_after_s:.1f} s" if r.back_after_s is not None else "never"
                            print(f"round {i + 1} console  chromium {r.cpu:6.2f} s  host {r.host_cpu:6.2f} s  "
                                  f"booted ahead {r.booted_start} → {r.booted_end} (booted during: "
                                  f"{r.booted_during})  intent: back after {back}, call {r.intent_ms:.0f} ms, "
                                  f"warm {r.warm_ms:.0f} ms", file=sys.stderr, flush=True)
                        else:
                            cpu, host_cpu = measure_empty(browser, chromium, host, opts.seconds)
                            series.empty_cpu.append(cpu)
                            series.empty_host_cpu.append(host_cpu)
                            print(f"round {i + 1} empty    chromium {cpu:6.2f} s  host {host_cpu:6.2f} s",
                                  file=sys.stderr, flush=True)
                browser.close()
        finally:
            launcher.close()
    report(series, opts.rounds, opts.seconds, names, limits.prebooted_view_max_age)


def report(series: Series, rounds: int, seconds: float, names: list[str], max_age: float) -> None:
    console = series.console
    cpu = [r.cpu for r in console]
    ratios = [c / e if e > 0 else float("inf") for c, e in zip(cpu, series.empty_cpu, strict=True)]
    print(f"\nidle CPU over {seconds:g} s windows, {rounds} rounds each, alternating; medians "
          f"(×: median of per-round ratios to the empty page); servers {', '.join(names)}, "
          f"prebooted_view_max_age {max_age:g} s\n")
    print(f"{'page':<34} {'chromium CPU s':>15} {'% of a core':>12} {'× empty':>8} {'host CPU s':>11}")
    print(f"{'console, views booted ahead':<34} {median(cpu):15.2f} {100 * median(cpu) / seconds:12.2f} "
          f"{median(ratios):8.2f} {median([r.host_cpu for r in console]):11.2f}")
    print(f"{'empty page (about:blank)':<34} {median(series.empty_cpu):15.2f} "
          f"{100 * median(series.empty_cpu) / seconds:12.2f} {1.0:8.2f} {median(series.empty_host_cpu):11.2f}")
    print("\nviews booted ahead, per round: at the window's start → at its end (booted during it)")
    print("  " + "; ".join(f"{r.booted_start} → {r.booted_end} ({r.booted_during})" for r in console))
    backs = [r.back_after_s for r in console if r.back_after_s is not None]
    print(f"\nafter the window, intent (chat box focused): booted views back after "
          f"{median(backs):.1f} s (median; {len(console) - len(backs)} rounds never)")
    intent, warm = [r.intent_ms for r in console], [r.warm_ms for r in console]
    print(f"{'call after intent, Enter → result':<34} {median(intent):8.0f} ms")
    print(f"{'warm call (same page, later)':<34} {median(warm):8.0f} ms")
    print(f"{'after intent × warm':<34} {median([a / w for a, w in zip(intent, warm, strict=True)]):8.2f}")


if __name__ == "__main__":
    main()
