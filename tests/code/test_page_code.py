"""The page's JavaScript, checked by the tools that define its rules: tsc --checkJs holds it to the frame
types printed from the models (web/static/frames.d.ts), ESLint to the recommended rules. Both come from the
repository's package-lock.json (`npm ci`, which scripts/test runs)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NODE_BIN = ROOT / "node_modules" / ".bin"

pytestmark = pytest.mark.node


def run(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    path = NODE_BIN / tool
    assert path.exists(), f"{path} is missing: ./scripts/test installs it (npm ci at the repository's root)"
    return subprocess.run([str(path), *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_the_page_type_checks():
    done = run("tsc", "-p", "tsconfig.json")
    assert done.returncode == 0 and not done.stdout.strip(), f"tsc -p tsconfig.json:\n{done.stdout}\n{done.stderr}"


def test_the_shipped_javascript_lints_clean():
    # --max-warnings 0: a warning left in is as much a finding as an error.
    done = run("eslint", "--max-warnings", "0",
               "src/mcp_apps_host/web/static", "src/mcp_apps_host/host", "src/mcp_apps_host/demo")
    assert done.returncode == 0, f"eslint:\n{done.stdout}\n{done.stderr}"
