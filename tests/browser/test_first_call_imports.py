"""The first call of a freshly started host imports nothing: an import runs on the event loop, every tab
waiting (the SDK imported jsonschema at the first result of a tool with an outputSchema, 50 ms). A new
interpreter builds the host, opens a tab and calls an official app's tool (its result has an outputSchema)
through to its view's mount; the modules loaded meanwhile are printed and must be none."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harness import peer_bin

ROOT = Path(__file__).resolve().parents[2]

# argv: the project's root, the server's command.
FIRST_CALL = """
import asyncio, json, sys, tempfile
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/tests/browser"]
from tests.unit.tabdriver import Socket, app_for, open_tab

async def main():
    with tempfile.TemporaryDirectory() as tmp:
        app = app_for({"v": {"command": sys.argv[2], "args": ["--stdio"], "apps": True}}, f"sqlite:///{tmp}/h.db")
        tab = Socket()
        async with open_tab(app, tab):
            before = set(sys.modules)
            tab.put({"type": "call", "server": "v", "tool": "get-time", "arguments": {}})
            await tab.until(lambda f: f["type"] == "call-finished")
            await tab.until(lambda f: f["type"] == "view-mount")
            print(json.dumps(sorted(set(sys.modules) - before)))

asyncio.run(main())
"""


def test_the_first_call_of_a_new_host_imports_nothing():
    done = subprocess.run([sys.executable, "-c", FIRST_CALL, str(ROOT), peer_bin("mcp-server-basic-vanillajs")],
                          capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    imported = json.loads(done.stdout.strip().splitlines()[-1])
    assert imported == [], f"modules imported during the first call: {imported}"
