"""The bundled demo servers, as command lines that start each one over stdio."""

from __future__ import annotations

import sys

DEMO_MODULES = ("chart", "forms", "table")

# Server name -> argv. sys.executable keeps the demos on the interpreter (and venv) running the host.
DEMO_SERVERS: dict[str, list[str]] = {
    name: [sys.executable, "-m", f"mcp_apps_host.demo.{name}"] for name in DEMO_MODULES
}
