"""The style variable names against the view SDK itself, as the npm peers ship it (scripts/test
installs them with the browser suite; `pytest -m "not browser and not node"` runs without Node)."""

from __future__ import annotations

import re

import pytest
from harness import REPO, HarnessError

from mcp_apps_host.views.theme import STYLE_VARIABLE_KEYS

pytestmark = pytest.mark.browser

SDK_TYPES = (REPO / "tests" / "peers" / "node_modules" / "@modelcontextprotocol" / "ext-apps"
             / "dist" / "src" / "spec.types.d.ts")


def test_keys_match_the_real_sdk() -> None:
    if not SDK_TYPES.exists():
        raise HarnessError(f"{SDK_TYPES} is missing: run scripts/test (npm ci in tests/peers)")
    text = SDK_TYPES.read_text(encoding="utf-8")
    start = text.index("type McpUiStyleVariableKey")
    block = text[start : text.index(";", start)]
    names = re.findall(r'"(--[a-z0-9-]+)"', block)
    assert len(names) == len(STYLE_VARIABLE_KEYS) == 76 and set(names) == set(STYLE_VARIABLE_KEYS)
