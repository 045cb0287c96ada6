"""Does the page keep drawing at the display's rate while a view streams its tool input?

The scripted model streams a tool call whose arguments arrive in small pieces (each one a
`ui/notifications/tool-input-partial` to the view, which writes every one down and grows); the page
counts its own animation frames meanwhile. The baseline is the same page, idle, counted for as long,
in the same run, alternating with the streaming rounds. Printed: frames per second, the median and
p95 frame interval, and the share of frames later than 25 ms (one or more frames dropped at 60 Hz).

Run: .venv/bin/python bench/streaming_frames.py [--rounds 12] [--pieces 200]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "browser"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from view_latency import open_console, start_host  # noqa: E402

from tests.modelfakes import openai_fake, streamed_call, text  # noqa: E402

PIECE = 8  # characters of argument text per streamed piece
CHUNK_DELAY = 0.01  # seconds between the model's chunks: ~100 partials a second

# The page's own frame clock: every animation frame's time while counting.
# (One counter at a time: a counter left from the round before stops at its next frame.)
START = """() => {
  const frames = window.__frames = [];
  const tick = (t) => { if (window.__frames !== frames) return; frames.push(t); requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
}"""
STOP = "() => { const frames = window.__frames; window.__frames = null; return frames; }"


def figures(frames: list[float]) -> dict[str, float]:
    gaps = [b - a for a, b in itertools.pairwise(frames)]
    seconds = (frames[-1] - frames[0]) / 1000
    return {"fps": len(gaps) / seconds, "median": statistics.median(gaps),
            "p95": statistics.quantiles(gaps, n=20)[18], "late": sum(g > 25 for g in gaps) / len(gaps)}


def streamed_round(page: Page, n: int) -> tuple[list[float], float]:
    page.evaluate(START)
    started = time.perf_counter()
    box = page.locator("[data-testid=chat-input]")
    box.fill(f"stream {n}")
    box.press("Enter")
    # Counted until the view has its whole input: the stream is over.
    view = page.locator("[data-testid=view]").nth(n)
    view.frame_locator("iframe.proxy").frame_locator("iframe").locator("li.seen", has_text="tool-input {").wait_for(
        timeout=60_000)
    seconds = time.perf_counter() - started
    frames = page.evaluate(STOP)
    page.get_by_text(f"done {n}").wait_for(timeout=30_000)
    return frames, seconds


def idle_round(page: Page, seconds: float) -> list[float]:
    page.evaluate(START)
    page.wait_for_timeout(seconds * 1000)  # the baseline is the page left alone for this long
    return page.evaluate(STOP)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--pieces", type=int, default=200, help="argument pieces streamed per round")
    opts = parser.parse_args()
    rounds = opts.rounds + 1  # the first is a warm-up
    arguments = json.dumps({"action": "show", "text": "x" * (opts.pieces * PIECE - 40), "n": 1})
    call = [text("streaming "), *streamed_call("rec__record", arguments, size=PIECE)]
    script = [t for i in range(rounds) for t in (call, [text(f"done {i}")])]
    streaming: list[dict[str, float]] = []
    idle: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp, openai_fake.serve_script(script, delay=CHUNK_DELAY) as fake:
        proc, url = start_host(fake.base_url, Path(tmp))
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = open_console(browser, url)
                for n in range(rounds):
                    frames, seconds = streamed_round(page, n)
                    quiet = idle_round(page, seconds)
                    if n:
                        streaming.append(figures(frames))
                        idle.append(figures(quiet))
                browser.close()
        finally:
            os.killpg(proc.pid, 9)

    def median(rows: list[dict[str, float]], key: str) -> float:
        return statistics.median(row[key] for row in rows)

    print(f"\n{opts.rounds} rounds after a warm-up, {opts.pieces} argument pieces a round, "
          f"{CHUNK_DELAY * 1000:g} ms apart\n")
    print(f"{'page':<36} {'fps':>6} {'median ms':>10} {'p95 ms':>8} {'late > 25 ms':>13}")
    for name, rows in (("idle (baseline)", idle), ("while a view streams its input", streaming)):
        print(f"{name:<36} {median(rows, 'fps'):6.1f} {median(rows, 'median'):10.1f} {median(rows, 'p95'):8.1f} "
              f"{median(rows, 'late'):12.1%}")
    ratios = [s["fps"] / i["fps"] for s, i in zip(streaming, idle, strict=True)]
    print(f"\nfps while streaming / idle, per round: {' '.join(f'{r:.2f}' for r in ratios)}"
          f"   median {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
