"""The host's two addresses in MCP authorization: the redirect coming back from an authorization
server (`/oauth/callback`, any worker takes it) and the client ID metadata document the host serves
about itself (`/oauth/client.json`, used as its client_id where the server supports that).

The callback needs no session: the sign-in cookie is not sent on a redirect from another site, and the
OAuth `state` (unguessable, single-use, minutes long, bound to the person's flow) is what says whose
sign-in it is. The page it answers names the server and nothing else: never the code.
"""

from __future__ import annotations

import html

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from ..host.process.core import Host
from ..servers.oauth import CALLBACK_PATH, CLIENT_METADATA_PATH

_PAGE = """<!doctype html><meta charset="utf-8"><title>{title}</title>
<body style="font-family:system-ui;margin:3rem;max-width:40rem"><h1 data-testid="signin-result"
data-outcome="{outcome}">{title}</h1><p>{text}</p><script src="{root}/static/signedin.js"></script></body>"""
_HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'"}


def _page(request: Request, outcome: str, title: str, text: str, status: int = 200) -> Response:
    root = request.scope.get("root_path", "")
    return HTMLResponse(_PAGE.format(title=html.escape(title), text=html.escape(text), outcome=outcome, root=root),
                        status_code=status, headers=_HEADERS)


async def callback(request: Request) -> Response:
    host: Host = request.app.state.host
    if host.signins is None:
        return _page(request, "error", "Sign-in is off", "This host does not sign in to servers.", 404)
    params = {k: v for k, v in request.query_params.items() if k in ("code", "state", "iss", "error",
                                                                        "error_description")}
    try:
        server = await host.signins.arrived(params)
    except ValueError as exc:
        return _page(request, "error", "Sign-in not completed", str(exc), 400)
    if "error" in params:
        return _page(request, "declined", f"Not signed in to {server}",
                     "The authorization server said no. You can close this window.")
    return _page(request, "signed-in", f"Signing in to {server}", "You can close this window and go back.")


async def client_metadata(request: Request) -> Response:
    """What the host says about itself as an OAuth client (a client ID metadata document)."""
    host: Host = request.app.state.host
    setup = host.servers.auth
    if setup is None:
        return Response(status_code=404)
    root = request.scope.get("root_path", "")
    document = setup.client_metadata(root, None).model_dump(mode="json", exclude_none=True)
    return JSONResponse({**document, "client_id": setup.client_metadata_url(root) or str(request.url)},
                        headers={"Cache-Control": "max-age=300"})


ROUTES = [(CALLBACK_PATH, callback), (CLIENT_METADATA_PATH, client_metadata)]
