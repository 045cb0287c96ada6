"""The code's own rules, checked by the tools that define them: import contracts, lint, types."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("command", [
    pytest.param(["lint-imports"], id="import-contracts"),
    pytest.param(["ruff", "check", "src", "tests", "bench", "examples"], id="ruff"),
    pytest.param(["mypy"], id="mypy-strict"),
])
def test_tool_passes(command: list[str]):
    done = run(str(BIN / command[0]), *command[1:])
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}"


def test_test_modules_have_unique_names():
    # The test folders are not packages: pytest imports each module by its bare name, so two
    # test_x.py in different folders stop the whole run at collection.
    seen: dict[str, Path] = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if "node_modules" in path.parts:
            continue
        assert path.name not in seen, f"{path} and {seen[path.name]} share a module name"
        seen[path.name] = path
