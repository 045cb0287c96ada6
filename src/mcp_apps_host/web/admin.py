"""The admin page (`/admin`) and API: the server registry (`/api/admin/servers`) and the audit stream
(`/api/admin/audit`).

The registry answers a signed-in admin (in `serve`, the console's person) or the admin API key; the
audit stream answers the key only (`Authorization: Bearer KEY`), never a browser's cookie: it is for
the compliance tools that collect it. The key speaks for the tenant named by `?tenant=` (default
"default").
"""

from __future__ import annotations

import asyncio
import hmac
import json

from starlette.requests import HTTPConnection, Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response

from ..errors import ConfigError
from ..host.process.core import Host
from ..host.process.registry import NoSuchServer, RegistryConflict, RegistrySync
from ..store.audit import AuditFilter
from ..store.audit_stream import read_page
from ..values.identity import DEFAULT_TENANT, Identity
from .middleware import Person
from .static import PAGE_HEADERS, static_text

KEY_USER = "admin-key"  # who the audit trail says made a change with the key
MAX_PAGE = 10_000


def _key_identity(request: HTTPConnection) -> Identity | None:
    """The key's admin, when the request carries the admin API key."""
    key: str | None = request.app.state.host.admin_key
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if not key or scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), key.encode()):
        return None
    return Identity(KEY_USER, tenant=request.query_params.get("tenant") or DEFAULT_TENANT, admin=True)


def _admin(request: HTTPConnection) -> Identity | Response:
    if (by_key := _key_identity(request)) is not None:
        return by_key
    user = request.user
    if not isinstance(user, Person):
        return PlainTextResponse("not signed in: the admin API needs an admin's session or the admin API key "
                                 "(Authorization: Bearer KEY)", status_code=401)
    if not user.who.admin:
        return PlainTextResponse(f"admin only: {user.who.user} is not an admin of tenant {user.who.tenant}",
                                 status_code=403)
    return user.who


def _registry(request: Request) -> RegistrySync:
    host: Host = request.app.state.host
    assert host.registry is not None  # build_host always makes one
    return host.registry


async def page(request: Request) -> Response:
    """The admin page: a signed-in admin's, in the browser (the key is for tools, not pages)."""
    user = request.user
    if not isinstance(user, Person):
        return HTMLResponse(request.app.state.gate.sign_in_page, status_code=401)
    if not user.who.admin:
        return PlainTextResponse(f"admin only: {user.who.user} is not an admin of tenant {user.who.tenant}",
                                 status_code=403)
    return HTMLResponse(static_text("admin.html"),
                        headers={**PAGE_HEADERS, "Content-Security-Policy": request.app.state.page_csp})


async def servers(request: Request) -> Response:
    admin = _admin(request)
    if isinstance(admin, Response):
        return admin
    return JSONResponse({"servers": await _registry(request).listing(admin)})


async def server(request: Request) -> Response:
    admin = _admin(request)
    if isinstance(admin, Response):
        return admin
    name = request.path_params["name"]
    registry = _registry(request)
    try:
        if request.method == "DELETE":
            await registry.delete(admin, name)
            return JSONResponse({"name": name, "removed": True})
        try:
            body = json.loads(await request.body())
        except (ValueError, UnicodeDecodeError) as exc:
            return PlainTextResponse(f"PUT /api/admin/servers/{name}: the body is not JSON ({exc})", status_code=400)
        change = await registry.put(admin, name, body)
    except ConfigError as exc:
        return PlainTextResponse(str(exc), status_code=400)
    except RegistryConflict as exc:
        return PlainTextResponse(str(exc), status_code=409)
    except NoSuchServer as exc:
        return PlainTextResponse(str(exc), status_code=404)
    return JSONResponse({"name": name, "change": change}, status_code=201 if change == "add" else 200)


async def audit_stream(request: Request) -> Response:
    """The tenant's audit trail after `?after=CURSOR` as JSON lines; the last line, and the `X-Audit-Cursor`
    header, give the cursor to go on from."""
    admin = _key_identity(request)
    if admin is None:
        host: Host = request.app.state.host
        why = "no admin API key is set (--admin-key)" if not host.admin_key else \
            "the audit stream needs the admin API key: Authorization: Bearer KEY"
        return PlainTextResponse(why, status_code=401)
    trail = request.app.state.host.audit
    if trail is None:
        return PlainTextResponse("the audit trail is off", status_code=404)
    q = request.query_params
    try:
        after = int(q.get("after") or 0)
        limit = int(q.get("limit") or 1000)
        if after < 0 or not 0 < limit <= MAX_PAGE:
            raise ValueError("out of range")
    except ValueError:
        return PlainTextResponse(f"bad cursor: after must be a cursor this API gave (a whole number) and limit "
                                 f"1-{MAX_PAGE}", status_code=400)
    await trail.drain()
    page = await asyncio.to_thread(read_page, trail, AuditFilter(tenant=admin.tenant), after, limit)
    lines = [json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n" for e in page.events]
    lines.append(json.dumps({"cursor": str(page.cursor)}) + "\n")
    return Response("".join(lines), media_type="application/x-ndjson",
                    headers={"X-Audit-Cursor": str(page.cursor)})


ROUTES = [
    ("/admin", page, ["GET"]),
    ("/api/admin/servers", servers, ["GET"]),
    ("/api/admin/servers/{name}", server, ["PUT", "DELETE"]),
    ("/api/admin/audit", audit_stream, ["GET"]),
]
