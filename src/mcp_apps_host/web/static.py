"""The page's files, and the headers every page the host serves carries."""

from __future__ import annotations

import functools
from importlib import resources

STATIC = resources.files("mcp_apps_host") / "web" / "static"

PAGE_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@functools.cache
def static_text(name: str) -> str:
    return (STATIC / name).read_text(encoding="utf-8")
