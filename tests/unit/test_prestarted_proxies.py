"""Sandbox proxies prestarted ahead of their views: a view takes one only when its origin, policy and
`allow` fit, and the proxy page served for it carries that view's CSP."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest
from starlette.testclient import TestClient

from mcp_apps_host.host.process import core
from mcp_apps_host.host.process.core import HUNG_ORIGIN_QUIET_S, Host
from mcp_apps_host.host.process.sandbox import Sandbox
from mcp_apps_host.host.tab import frames as f
from mcp_apps_host.host.tab.page import Page
from mcp_apps_host.host.tab.prebooted import PrebootedViews
from mcp_apps_host.host.tab.prestarted import PrestartedProxies
from mcp_apps_host.servers.manager import ServerManager
from mcp_apps_host.settings import Limits
from mcp_apps_host.values.csp import ViewCsp
from mcp_apps_host.values.templates import Template
from mcp_apps_host.values.tools import tool_entry
from mcp_apps_host.web.sandbox import sandbox_app

ORIGIN = "http://127.0.0.1:8765"


def make_host(limits: Limits | None = None) -> Host:
    return Host(servers=ServerManager([], limits or Limits()), limits=limits or Limits(), host_origin=ORIGIN,
                sandbox=Sandbox.on_port("http", "localhost", 8766, per_server=True))


def template(server: str = "srv", connect: tuple[str, ...] = (), permissions: dict[str, Any] | None = None,
             sha: str = "a" * 64) -> Template:
    return Template(server=server, uri="ui://srv/v.html", html="<p>v</p>", sha256=sha,
                    csp=ViewCsp(connect_domains=connect), permissions=permissions or {})


def pool(host: Host) -> tuple[PrestartedProxies, list[Any]]:
    sent: list[Any] = []
    return PrestartedProxies(host, Page(sent.append)), sent


def test_a_view_takes_the_prepared_proxy_of_its_origin_and_policy() -> None:
    host = make_host()
    prestarted, sent = pool(host)
    prestarted.prepare(template())
    [start] = sent
    assert isinstance(start, f.ViewPrestart) and start.keep == [start.key]
    assert start.sandbox_origin == host.sandbox.origin_for("srv")
    # Another template with the same origin and policy (a new version of the HTML) fits it.
    taken = prestarted.take(template(sha="b" * 64))
    assert taken is not None and taken.handle == start.key
    view = host.register_view(template(sha="b" * 64), lambda report: None, prestarted=taken)
    assert view.handle == taken.handle and host.proxy_url(view.handle) == start.proxy_url
    # The next one is prestarted after the mount, and the page is told to keep only that one.
    assert prestarted.ready == {}
    prestarted.prepare(template(sha="b" * 64))
    assert isinstance(sent[-1], f.ViewPrestart) and sent[-1].key != start.key and sent[-1].keep == [sent[-1].key]


def test_a_view_with_another_policy_or_origin_does_not_take_it() -> None:
    host = make_host()
    prestarted, sent = pool(host)
    prestarted.prepare(template())
    assert prestarted.take(template(connect=("https://api.example.com",))) is None
    assert prestarted.take(template(server="other")) is None
    assert prestarted.take(template(permissions={"camera": {}, "clipboardWrite": {}})) is None
    # Even when handed one that does not fit, the host signs the view its own proxy.
    [start] = sent
    wrong = prestarted.ready[next(iter(prestarted.ready))]
    view = host.register_view(template(connect=("https://api.example.com",)), lambda report: None, prestarted=wrong)
    assert view.handle != start.key and "https://api.example.com" in view.csp_header


def test_the_served_proxy_page_has_the_policy_of_the_view_that_took_it() -> None:
    host = make_host()
    prestarted, _sent = pool(host)
    prestarted.prepare(template(connect=("https://api.example.com",)))
    taken = prestarted.take(template(connect=("https://api.example.com",)))
    assert taken is not None
    view = host.register_view(template(connect=("https://api.example.com",)), lambda report: None, prestarted=taken)
    origin = host.sandbox.origin_for("srv")
    client = TestClient(sandbox_app(host), base_url=origin)
    page = client.get(host.proxy_url(view.handle).removeprefix(origin))
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == view.csp_header
    assert "connect-src" in view.csp_header and "https://api.example.com" in view.csp_header


def test_no_more_proxies_than_the_setting_allows() -> None:
    host = make_host(Limits(prestarted_proxies_per_tab=2))
    prestarted, sent = pool(host)
    for server in ("a", "b", "c"):
        prestarted.prepare(template(server=server))
    assert len(prestarted.ready) == 2 and len(sent) == 2
    assert prestarted.take(template(server="c")) is None
    none, nothing = pool(make_host(Limits(prestarted_proxies_per_tab=0)))
    none.prepare(template())
    assert nothing == [] and none.take(template()) is None


def test_nothing_is_prepared_on_an_origin_that_hung_lately(monkeypatch) -> None:
    """The browser keeps a renderer a moment after its last frame goes, for the next frame of the same site:
    a renderer a view keeps busy would take in a proxy loaded ahead, which would then never load."""
    host = make_host()
    prestarted, sent = pool(host)
    host.hung(host.sandbox.origin_for("srv"))
    prestarted.prepare(template())
    assert sent == [] and prestarted.ready == {}
    prestarted.prepare(template(server="other"))  # another server's origin has its own renderer
    assert [s.sandbox_origin for s in sent] == [host.sandbox.origin_for("other")]
    later = time.monotonic() + HUNG_ORIGIN_QUIET_S + 1
    monkeypatch.setattr(core.time, "monotonic", lambda: later)
    prestarted.prepare(template())
    assert sent[-1].sandbox_origin == host.sandbox.origin_for("srv")


@pytest.mark.anyio
async def test_no_view_is_booted_ahead_on_an_origin_that_hung_lately(monkeypatch) -> None:
    host = make_host()
    mounted: list[str] = []
    views = SimpleNamespace(host=host, closed=False, prestarted=PrestartedProxies(host, Page(lambda frame: None)),
                            mount=lambda call, entry, tmpl, prebooted: mounted.append(tmpl.server) or
                            SimpleNamespace(handle=tmpl.server, session=SimpleNamespace(spec=tmpl)))
    prebooted = PrebootedViews(views)  # type: ignore[arg-type]
    entry = tool_entry("srv", {"name": "show", "inputSchema": {"type": "object"},
                               "_meta": {"ui": {"resourceUri": "ui://srv/v.html"}}})
    host.hung(host.sandbox.origin_for("srv"))
    prebooted.boot(entry, template())
    prebooted.boot(entry, template(server="other"))
    assert mounted == ["other"]
    later = time.monotonic() + HUNG_ORIGIN_QUIET_S + 1
    monkeypatch.setattr(core.time, "monotonic", lambda: later)
    prebooted.boot(entry, template())
    assert mounted == ["other", "srv"]
    for _view, timer in prebooted.held.values():
        timer.cancel()
