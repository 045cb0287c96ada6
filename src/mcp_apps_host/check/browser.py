"""The headless Chromium `check` drives, and what it reads from screenshots.

Playwright is an optional dependency (`pip install 'mcp-apps-host[check]'`); without it
`check` says so instead of failing on an import.
"""

from __future__ import annotations

import base64
import os
from typing import Any

from ..errors import ConfigError

# Chromium must not reach for the network at start (CI has none); storage partitioning stays
# on, as in the browsers people use, so views keep their own localStorage.
CHROMIUM_ARGS = (
    "--disable-features=AvoidUnnecessaryBeforeUnloadCheckSync,DestroyProfileOnBrowserClose,HttpsUpgrades,"
    "HttpsFirstBalancedModeAutoEnable,LensOverlay,MediaRouter,PaintHolding,AvoidCorsURLLoaderRestartOnRedirect,"
    "OptimizationHints,NetworkTimeServiceQuerying",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


async def launch(playwright: Any, chromium: str) -> Any:
    """A headless Chromium at ``chromium``; :class:`ConfigError` when it is not there."""
    if not os.access(chromium, os.X_OK):
        raise ConfigError(f"--chromium {chromium}: no Chromium there (install Debian's chromium, or pass the "
                          "path of a Chromium or Chrome binary; MCP_APPS_HOST_CHROMIUM sets the default)")
    return await playwright.chromium.launch(executable_path=chromium, args=list(CHROMIUM_ARGS), headless=True)


# Runs in a blank page of its own: decodes the PNGs, counts the pixels that differ from each
# image's most common colour, and draws light and dark side by side into one PNG.
_PIXELS_JS = """
async ({light, dark}) => {
  const INSET = 4;
  const load = (b64) => new Promise((ok, no) => {
    const img = new Image();
    img.onload = () => ok(img);
    img.onerror = () => no(new Error("not a PNG"));
    img.src = "data:image/png;base64," + b64;
  });
  const ink = (img) => {
    const c = document.createElement("canvas");
    c.width = img.width; c.height = img.height;
    const g = c.getContext("2d");
    g.drawImage(img, 0, 0);
    const d = g.getImageData(0, 0, c.width, c.height).data;
    // The frame's own border and rounded corners are the host's drawing, not the view's.
    const counts = new Map();
    let pixels = 0;
    for (let y = INSET; y < c.height - INSET; y++) {
      for (let x = INSET; x < c.width - INSET; x++) {
        const i = (y * c.width + x) * 4;
        const k = ((d[i] >> 3) << 10) | ((d[i + 1] >> 3) << 5) | (d[i + 2] >> 3);
        counts.set(k, (counts.get(k) || 0) + 1);
        pixels++;
      }
    }
    let top = 0;
    for (const n of counts.values()) top = Math.max(top, n);
    return {pixels, other: pixels - top, data: d};
  };
  const a = await load(light);
  const sa = ink(a);
  const out = {light: {pixels: sa.pixels, other: sa.other}, dark: null, differs: null, png: light};
  if (dark) {
    const b = await load(dark);
    const sb = ink(b);
    out.dark = {pixels: sb.pixels, other: sb.other};
    out.differs = a.width !== b.width || a.height !== b.height || sa.data.some((v, i) => v !== sb.data[i]);
    const gap = 16, c = document.createElement("canvas");
    c.width = a.width + gap + b.width; c.height = Math.max(a.height, b.height);
    const g = c.getContext("2d");
    g.fillStyle = "#808080"; g.fillRect(0, 0, c.width, c.height);
    g.drawImage(a, 0, 0); g.drawImage(b, a.width + gap, 0);
    out.png = c.toDataURL("image/png").split(",")[1];
  }
  return out;
}
"""


def is_blank(stats: dict[str, Any] | None) -> bool | None:
    """Blank: (almost) every pixel has the most common colour. None when there was no image."""
    if not stats:
        return None
    return bool(stats["other"] < max(20, stats["pixels"] * 0.0005))


async def read_pixels(context: Any, light: bytes, dark: bytes | None) -> dict[str, Any]:
    """Pixel counts of the screenshots, and the one PNG to keep (light and dark side by side)."""
    page = await context.new_page()
    try:
        result: dict[str, Any] = await page.evaluate(_PIXELS_JS, {
            "light": base64.b64encode(light).decode(), "dark": base64.b64encode(dark).decode() if dark else None})
    finally:
        await page.close()
    result["png"] = base64.b64decode(result["png"])
    return result
