"""A team's agent console, in miniature: its own sign-in, with mcp-apps-host mounted at /apps.

    pip install 'mcp-apps-host[postgres]' fastapi
    EMBED_DATABASE=postgresql+psycopg://localhost/apps python examples/embed_fastapi.py --workers 2

then open http://127.0.0.1:8000/login?user=alice&groups=sales (and, in another browser, ?user=bob;
?user=admin is the tenant's admin, who manages its servers).

The sign-in here is a toy (a signed cookie naming the user); a real console uses its own.
What matters is the `identity` callable: it tells mcp-apps-host who each request is for,
and everything the host keeps — conversations, views, consents, pins, audit — is theirs.
Settings come from the environment, so every worker process builds the same app:
EMBED_PORT (8000), EMBED_DATABASE (SQLite next to this file), EMBED_SECRET (signs the
cookie and the views' handles; every worker needs the same one), EMBED_CONFIG (a config
file with `mcpServers`; default: the bundled demo servers), EMBED_ADMIN_KEY (the admin API key).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from itsdangerous import BadSignature, URLSafeSerializer
from starlette.requests import HTTPConnection

from mcp_apps_host import HostConfig, Identity, create_app

PORT = int(os.environ.get("EMBED_PORT", "8000"))
ORIGIN = f"http://127.0.0.1:{PORT}"
SECRET = os.environ.setdefault("EMBED_SECRET", secrets.token_urlsafe(32))  # children inherit it
DEMO = ("chart", "forms", "table")


def host_config() -> HostConfig:
    if os.environ.get("EMBED_CONFIG"):
        document: dict[str, Any] = json.loads(Path(os.environ["EMBED_CONFIG"]).read_text(encoding="utf-8"))
    else:
        document = {"mcpServers": {name: {"command": sys.executable, "args": ["-m", f"mcp_apps_host.demo.{name}"],
                                          "apps": True} for name in DEMO}}
    return HostConfig.from_dict({
        **document,
        "apps": {"enabled": True},  # views are off unless enabled, and shown only for servers that opted in
        "origin": ORIGIN,
        "sandboxOrigin": f"http://{{label}}.sandbox.localhost:{PORT}",  # the same port, another site
        "database": os.environ.get("EMBED_DATABASE", f"sqlite:///{Path(__file__).with_suffix('.db')}"),
        "secretKey": SECRET,
    }, "embed example config")


cookies = URLSafeSerializer(SECRET, salt="toy sign-in")


async def identity(conn: HTTPConnection) -> Identity | None:
    """The console's sign-in, as mcp-apps-host asks for it: who is this request for?"""
    try:
        user, groups = cookies.loads(conn.cookies.get("who", ""))
    except (BadSignature, ValueError):
        return None
    return Identity(user, tenant="team", admin=user == "admin", groups=tuple(groups))


async def login(user: str, groups: str = "") -> RedirectResponse:
    response = RedirectResponse("/", status_code=303)
    names = [g for g in groups.split(",") if g]  # a real console takes them from its directory
    response.set_cookie("who", cookies.dumps([user, names]), httponly=True, samesite="lax")
    return response


async def home(request: Request) -> str:
    who = await identity(request)
    if who is None:
        return "<p>Sign in: <a href='/login?user=alice'>alice</a> or <a href='/login?user=bob'>bob</a></p>"
    return f"<p>Signed in as {who.user}. <a href='/apps/' data-testid='open-apps'>Open your apps</a></p>"


def make() -> FastAPI:
    """The console (an app factory: `uvicorn --factory embed_fastapi:make`)."""
    apps = create_app(host_config(), identity=identity, admin_key=os.environ.get("EMBED_ADMIN_KEY") or None)
    app = FastAPI(lifespan=apps.lifespan)  # the host starts and stops with the console
    app.mount("/apps", apps)
    app.get("/login")(login)
    app.get("/", response_class=HTMLResponse)(home)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description="A toy team console with mcp-apps-host mounted at /apps.")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    uvicorn.run("embed_fastapi:make", factory=True, app_dir=str(Path(__file__).parent), host="127.0.0.1",
                port=PORT, workers=args.workers, log_level="warning",
                timeout_worker_healthcheck=30)  # a worker still starting on a busy machine is not hung


if __name__ == "__main__":
    main()
