"""Drive one view through the console page, as a person would: call its tool, answer the questions the
host puts, wait for the handshake and the result, then take its screenshot in light and dark."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..settings import CheckSettings
from ..store.audit import AuditLog
from ..values import protocol as M
from .browser import is_blank, read_pixels
from .findings import ConsoleLine, Observation, Record
from .trail import ViewTrail

# The person's answers `check` gives: an app may fetch its data with its own tools; it may not
# post into a conversation, open links, save files or ask the model.
ALLOWED_KINDS = frozenset({"tool-call"})
FINAL_STATES = ("ready", "error", "closed")


@dataclass(frozen=True)
class ViewJob:
    server: str
    tool: str
    arguments: dict[str, Any]


class ViewDriver:
    def __init__(self, browser: Any, url: str, audit: AuditLog, settings: CheckSettings, out: Path | None) -> None:
        self.browser = browser
        self.url = url
        self.audit = audit
        self.settings = settings
        self.out = out

    async def run(self, job: ViewJob) -> Observation:
        context = await self.browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="light")
        try:
            page = await context.new_page()
            obs = Observation(job.server, job.tool, job.arguments, submitted=time.time())
            _listen(page, obs.console)
            await page.goto(self.url)
            ready = f'[data-testid=server][data-server="{job.server}"][data-status=ready]'
            await page.locator(ready).wait_for(state="attached", timeout=30_000)
            answering = asyncio.create_task(_answer_consents(page, obs.consents))
            try:
                await self._drive(context, page, job, obs)
            finally:
                answering.cancel()
                await asyncio.gather(answering, return_exceptions=True)
            return obs
        finally:
            await context.close()

    async def _drive(self, context: Any, page: Any, job: ViewJob, obs: Observation) -> None:
        box = page.locator("[data-testid=chat-input]")
        await box.fill(f"/call {job.server} {job.tool} {json.dumps(job.arguments)}")
        obs.submitted = time.time()
        await box.press("Enter")
        view = page.locator(f'[data-testid=view][data-server="{job.server}"][data-tool="{job.tool}"]').first
        timeout = self.settings.check_timeout
        try:
            await view.wait_for(state="attached", timeout=timeout * 1000)
        except Exception:  # Playwright's timeout: the call's notices say why
            notices = await page.locator("[data-testid=notice], [data-testid=call-error]").all_inner_texts()
            obs.error = "; ".join(n.strip() for n in notices if n.strip())[:500] or None
            return
        handle = await view.get_attribute("data-view") or ""
        obs.state = await _final_state(view, timeout + 5)
        if obs.state == "error":
            obs.error = (await view.locator("[data-testid=view-error]").inner_text()).strip()
        if handle.startswith("failed-"):  # the template could not be loaded: no frame at all
            obs.error = f"the template is not valid: {obs.error or 'no reason given'}"
        else:
            obs.handle = handle
        if obs.handle is not None and obs.state == "ready":
            await self._observe(context, page, view, obs)
        elif self.out is not None:
            await _keep(self.out, job, await view.screenshot(), obs)

    async def _observe(self, context: Any, page: Any, view: Any, obs: Observation) -> None:
        assert obs.handle is not None
        trail = ViewTrail(self.audit, obs.handle)
        s = self.settings
        obs.result_seen = await trail.wait_for(lambda rs: _delivered(rs, (M.TOOL_RESULT, M.TOOL_CANCELLED)),
                                               s.check_timeout)
        obs.settled = await trail.settle(M.SIZE_CHANGED, s.check_settle, s.check_settle_max)
        frame = view.locator("iframe.proxy")
        await frame.scroll_into_view_if_needed()
        light = await _drawn(context, frame, s.check_settle_max)
        await page.locator("[data-testid=theme-toggle]").click()
        dark: bytes | None = None
        if await trail.wait_for(_dark_sent, 5.0):
            settled = await trail.settle(M.SIZE_CHANGED, s.check_settle, s.check_settle_max)
            obs.settled = obs.settled and settled
            dark = await _drawn(context, frame, s.check_settle_max)
        pixels = await read_pixels(context, light, dark)
        obs.blank_light = is_blank(pixels["light"])
        obs.blank_dark = is_blank(pixels["dark"])
        obs.dark_differs = pixels["differs"]
        if self.out is not None:
            await _keep(self.out, ViewJob(obs.server, obs.tool, obs.arguments), pixels["png"], obs)


async def _drawn(context: Any, frame: Any, within: float) -> bytes:
    """The frame's screenshot once it shows something, or its last one after ``within`` seconds.

    A view may clear its drawing to redraw it (a canvas re-rendered for a new theme): a single
    shot taken then is blank though the view draws.
    """
    deadline = time.monotonic() + within
    while True:
        shot: bytes = await frame.screenshot()
        if not is_blank((await read_pixels(context, shot, None))["light"]) or time.monotonic() >= deadline:
            return shot
        await asyncio.sleep(0.25)


def _delivered(records: list[Record], methods: tuple[str, ...]) -> bool:
    return any(r.direction == "host->view" and r.method in methods for r in records)


def _dark_sent(records: list[Record]) -> bool:
    for r in records:
        params = r.payload.get("params") if isinstance(r.payload, dict) else None
        if r.method == M.HOST_CONTEXT_CHANGED and isinstance(params, dict) and params.get("theme") == "dark":
            return True
    return False


async def _final_state(view: Any, timeout: float) -> str | None:
    deadline = time.monotonic() + timeout
    state: str | None = await view.get_attribute("data-state")
    while state not in FINAL_STATES and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        state = await view.get_attribute("data-state")
    return state


def _listen(page: Any, lines: list[ConsoleLine]) -> None:
    def on_console(msg: Any) -> None:
        if msg.type in ("error", "warning"):
            lines.append(ConsoleLine(msg.type, msg.text, (msg.location or {}).get("url", "")))

    page.on("console", on_console)
    page.on("pageerror", lambda err: lines.append(ConsoleLine("pageerror", str(err))))


async def _answer_consents(page: Any, log: list[str]) -> None:
    """Answer every question the host puts while the view runs (no person is there to)."""
    dialog = page.locator("[data-testid=consent]").first
    while True:
        await dialog.wait_for(state="visible", timeout=0)
        kind = await dialog.get_attribute("data-kind") or "?"
        title = (await dialog.locator("h2, .consent-title").first.inner_text()).strip() if await dialog.locator(
            "h2, .consent-title").count() else kind
        allow = kind in ALLOWED_KINDS
        with contextlib.suppress(Exception):  # the view may have closed and the dialog gone with it
            await dialog.locator("[data-testid=consent-allow]" if allow else "[data-testid=consent-deny]").click(
                timeout=10_000)
        log.append(f"{'allowed' if allow else 'declined'} {kind}: {title}")
        await dialog.wait_for(state="detached", timeout=10_000)


async def _keep(out: Path, job: ViewJob, png: bytes, obs: Observation) -> None:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{job.server}__{job.tool}").strip("-") + ".png"
    path = out / name
    await asyncio.to_thread(path.write_bytes, png)
    obs.screenshot = str(path)
