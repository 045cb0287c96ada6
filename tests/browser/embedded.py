"""The embed example (examples/embed_fastapi.py) run for real: its own sign-in, mcp-apps-host at /apps,
two workers on the test run's PostgreSQL."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness import attach_console, free_port, kill_group, tail
from playwright.sync_api import Browser, Page

from tests.fixtures.postgres import Postgres

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "servers.py"
EXAMPLE = REPO / "examples" / "embed_fastapi.py"
_RUNNING: dict[str, int] = {}  # base URL -> the example's supervisor process


def fixture_entry(kind: str) -> dict[str, Any]:
    """An `mcpServers` entry running one of tests/fixtures/servers.py's servers, views on."""
    return {"command": sys.executable, "args": [str(FIXTURES), kind], "apps": True}


@contextlib.contextmanager
def embed_example(postgres: Postgres, workdir: Path, servers: dict[str, dict[str, Any]],
                  model: dict[str, Any] | None = None) -> Iterator[str]:
    """The example with ``servers`` (and ``model``) in its config, serving on a free port; yields its base URL."""
    port = free_port()
    config = workdir / "servers.json"
    config.write_text(json.dumps({"mcpServers": servers, **({"model": model} if model else {})}))
    log = workdir / "example.log"
    environ = dict(os.environ, EMBED_PORT=str(port), EMBED_DATABASE=postgres.database(), EMBED_CONFIG=str(config),
                   PYTHONUNBUFFERED="1")
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, str(EXAMPLE), "--workers", "2"], stdout=out, stderr=subprocess.STDOUT,
                                env=environ, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180  # two workers importing the host on a busy machine
        while True:
            try:
                urllib.request.urlopen(f"{base}/", timeout=10).close()
                break
            except OSError as exc:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"the example did not start:\n{tail(log.read_text(errors='replace'))}") \
                        from exc
                time.sleep(0.3)
        _RUNNING[base] = proc.pid
        yield base
    finally:
        _RUNNING.pop(base, None)
        kill_group(proc)


def server_names(page: Page, base: str) -> dict[str, str]:
    """The servers this page's person has, by name, with their status."""
    return {s["name"]: s["status"] for s in page.request.get(f"{base}/apps/api/servers").json()["servers"]}


def sign_in(browser: Browser, base: str, user: str, groups: str = "") -> Page:
    """A new browser of ``user`` (in ``groups``, comma-separated) on the example's page of apps, its servers up."""
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    attach_console(page)
    deadline = time.monotonic() + 60
    while True:
        try:
            page.goto(f"{base}/login?user={user}&groups={groups}")
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    page.locator("[data-testid=open-apps]").click()
    page.locator("[data-testid=chat-input]").wait_for(state="visible", timeout=30_000)
    deadline = time.monotonic() + 60
    while set((servers := server_names(page, base)).values()) != {"ready"}:
        assert time.monotonic() < deadline, "the example's servers did not connect"
        time.sleep(0.2)
    # The API may be answered by the other worker: wait for the page's own connection to show them ready
    # too, or a line typed now finds no connection (kept in the box) or its server not yet there.
    for name in servers:
        page.locator(f'[data-testid=server][data-server="{name}"][data-status=ready]').wait_for(
            state="attached", timeout=60_000)
    return page


def worker_of(page: Page) -> int:
    """The worker process this page's WebSocket talks to."""
    page.wait_for_function("() => document.documentElement.dataset.worker !== undefined", timeout=60_000)
    return int(page.evaluate("document.documentElement.dataset.worker"))


def worker_pids(base: str) -> list[int]:
    """The example's worker processes now (what a test that wants both says when it finds one)."""
    pid = _RUNNING[base]
    kids: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/children") as f:
            kids += [int(k) for k in f.read().split()]
    return kids
