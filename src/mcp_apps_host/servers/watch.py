"""`serve --watch`: restart a stdio server when a file under one of its watched paths changes.

Templates are re-read with every start, so the host never serves a template from before the
change; the host re-renders the server's open views once it is back (`host/rerender.py`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from watchfiles import awatch

from .manager import ServerManager

log = logging.getLogger("mcp_apps_host.watch")


def _owners(changed: Path, paths: Mapping[str, tuple[Path, ...]]) -> list[str]:
    return [name for name, roots in paths.items()
            if any(changed == root or root in changed.parents for root in roots)]


async def watch_servers(manager: ServerManager, paths: Mapping[str, tuple[str, ...]], debounce_ms: int) -> None:
    """Watch every server's paths until cancelled; a change restarts the servers that own it."""
    roots = {name: tuple(Path(p).expanduser().resolve() for p in ps) for name, ps in paths.items() if ps}
    existing = sorted({str(r) for rs in roots.values() for r in rs if r.exists()})
    if not existing:
        return
    log.info("watching %s", ", ".join(existing))
    async for changes in awatch(*existing, debounce=debounce_ms, step=50, recursive=True):
        files = sorted({Path(p).resolve() for _, p in changes})
        restart: dict[str, Path] = {}
        for changed in files:
            for name in _owners(changed, roots):
                restart.setdefault(name, changed)
        for name, changed in restart.items():
            conn = manager.connections.get(name)
            if conn is not None:
                log.info("server %s: %s changed, restarting it", name, changed)
                conn.restart(f"{changed.name} changed")
