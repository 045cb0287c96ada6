"""Template pinning, allow/block lists, and the static review of template HTML."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from mcp_apps_host.policy.review import csp_entry_for, origin_allowed, review_html
from mcp_apps_host.policy.trust import TemplateTrust as _Trust
from mcp_apps_host.store.db import open_database as create_engine
from mcp_apps_host.store.pins import TemplatePins
from mcp_apps_host.values.csp import ViewCsp
from mcp_apps_host.values.identity import CONSOLE
from mcp_apps_host.values.templates import Template


def TemplateTrust(engine, *lists, **named) -> _Trust:
    return _Trust(TemplatePins(engine).bound(CONSOLE), *lists, **named)


def tpl(html: str, server: str = "s1", uri: str = "ui://s1/view") -> Template:
    return Template(
        server=server, uri=uri, html=html, sha256=hashlib.sha256(html.encode()).hexdigest(), csp=ViewCsp()
    )


V1 = tpl("<p>one</p>")
V2 = tpl("<p>version two</p>")


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'host.db'}"


@pytest.fixture
def trust(db: str):
    engine = create_engine(db)
    yield TemplateTrust(engine)
    engine.dispose()


def test_first_use_pins_then_trusted(trust: _Trust):
    first = trust.check(V1)
    assert first.status == "new" and first.render
    assert first.pinned_sha256 == V1.sha256 and first.pinned_size == V1.size
    again = trust.check(V1)
    assert again.status == "trusted" and again.render
    pin = trust.pins.get("s1", "ui://s1/view")
    assert pin is not None and pin["sha256"] == V1.sha256 and pin["accepted_at"] is None


def test_changed_template_is_held_until_accepted(trust: _Trust):
    trust.check(V1)
    verdict = trust.check(V2)
    assert verdict.status == "changed" and not verdict.render
    assert verdict.pinned_sha256 == V1.sha256 and verdict.sha256 == V2.sha256
    assert verdict.pinned_size == V1.size and verdict.size == V2.size
    assert V1.sha256 in verdict.reason and V2.sha256 in verdict.reason
    assert f"{V2.size - V1.size:+d} bytes" in verdict.reason
    assert trust.check(V2).status == "changed"  # asking again does not accept it
    trust.accept("s1", "ui://s1/view", V2.sha256, V2.size)
    assert trust.check(V2).status == "trusted"
    assert trust.check(V1).status == "changed"  # going back is a change too
    assert trust.pins.get("s1", "ui://s1/view")["accepted_at"] is not None


def test_pins_are_per_server_and_uri(trust: _Trust):
    trust.check(V1)
    assert trust.check(tpl(V2.html, uri="ui://s1/other")).status == "new"
    assert trust.check(tpl(V2.html, server="s2", uri="ui://s1/view")).status == "new"


def test_pins_survive_a_restart(db: str):
    engine = create_engine(db)
    TemplateTrust(engine).check(V1)
    engine.dispose()
    engine = create_engine(db)
    try:
        restarted = TemplateTrust(engine)
        assert restarted.check(V1).status == "trusted"
        assert restarted.check(V2).status == "changed"
        restarted.accept("s1", V2.uri, V2.sha256, V2.size)
    finally:
        engine.dispose()
    engine = create_engine(db)
    try:
        assert TemplateTrust(engine).check(V2).status == "trusted"
    finally:
        engine.dispose()


def test_block_and_allow_lists(db: str):
    engine = create_engine(db)
    try:
        t = TemplateTrust(
            engine,
            allow_hashes={V2.sha256.upper()},  # case does not matter
            block_hashes={hashlib.sha256(b"<p>bad</p>").hexdigest()},
            allow_servers={"friend"},
            block_servers={"foe"},
        )
        assert t.check(tpl("<p>bad</p>")).status == "blocked"
        assert t.check(tpl("<p>bad</p>", server="friend")).status == "blocked"  # hash block beats allow
        foe = t.check(tpl(V1.html, server="foe"))
        assert foe.status == "blocked" and not foe.render and "foe" in foe.reason
        assert t.pins.get("foe", V1.uri) is None  # nothing pinned for a blocked server

        assert t.check(V1).status == "new"
        allowed = t.check(V2)  # changed, but its hash is allow-listed
        assert allowed.status == "allowed" and allowed.render and "allow-list" in allowed.reason
        assert t.pins.get("s1", V1.uri)["sha256"] == V1.sha256  # the pin is left as the person saw it

        assert t.check(tpl("<p>a</p>", server="friend")).status == "allowed"
        assert t.check(tpl("<p>b</p>", server="friend")).status == "allowed"
        assert t.pins.get("friend", V1.uri)["sha256"] == hashlib.sha256(b"<p>a</p>").hexdigest()
    finally:
        engine.dispose()


def test_accepted_is_what_renders_unasked_and_pins_nothing(db: str):
    engine = create_engine(db)
    try:
        t = TemplateTrust(engine, allow_servers={"friend"}, block_servers={"foe"},
                          block_hashes={hashlib.sha256(b"<p>bad</p>").hexdigest()})
        assert not t.accepted(V1)  # never shown: not accepted
        assert t.pins.get("s1", V1.uri) is None  # and asking pinned nothing
        t.check(V1)
        assert t.accepted(V1)
        assert not t.accepted(V2)  # changed since the person saw it
        t.accept("s1", V2.uri, V2.sha256, V2.size)
        assert t.accepted(V2) and not t.accepted(V1)
        assert t.accepted(tpl("<p>any</p>", server="friend"))
        assert not t.accepted(tpl("<p>bad</p>", server="friend"))  # a blocked hash beats an allowed server
        t.check(tpl(V1.html, server="foe"))
        assert not t.accepted(tpl(V1.html, server="foe"))
    finally:
        engine.dispose()


def test_bad_hashes_rejected(trust: _Trust):
    with pytest.raises(ValueError, match="allow_hashes"):
        TemplateTrust(trust.pins.engine, allow_hashes={"abc"})
    with pytest.raises(ValueError, match="sha256"):
        trust.accept("s1", "ui://x", "nothex", 3)
    with pytest.raises(ValueError, match="size"):
        trust.accept("s1", "ui://x", "a" * 64, -1)


# -- static review -------------------------------------------------------------------------------------

CSP = ViewCsp(
    resource_domains=("https://*.good.example", "https://cdn.ok.example:8443", "http://plain.example")
)


def test_clean_template_has_no_warnings():
    html = """<!doctype html><html><head>
    <script src="app.js"></script><link rel="stylesheet" href="/style.css">
    <script src="https://x.good.example/lib.js"></script>
    <link rel="stylesheet" href="https://cdn.ok.example:8443/a.css">
    <style>@import url("local.css"); body{color:red}</style>
    <script>const s = '<input type="password"><base href="https://evil.example/">';</script>
    </head><body><input type="text"><!-- <meta http-equiv="refresh" content="0"> --></body></html>"""
    assert review_html(html, CSP) == []


def test_password_input():
    warnings = review_html('<form><INPUT Type=" PassWord " name="pw"></form>', ViewCsp())
    assert warnings == ['<input type="password" name="pw">: the view asks for a password']


@pytest.mark.parametrize(
    "html, element, origin",
    [
        (
            '<script src="https://evil.example/x.js"></script>',
            '<script src="https://evil.example/x.js">',
            "https://evil.example",
        ),
        (
            '<script src="https://good.example/x.js"></script>',
            "<script",
            "https://good.example",
        ),  # not a subdomain
        ('<script src="//cdn.ok.example/x.js"></script>', "<script", "https://cdn.ok.example"),  # wrong port
        (
            '<script src="http://a.good.example/x.js"></script>',
            "<script",
            "http://a.good.example",
        ),  # no downgrade
        (
            '<link rel="preload stylesheet" href="https://css.evil.example/a.css">',
            "<link rel=",
            "css.evil.example",
        ),
        (
            "<style>@import url(https://imp.evil.example/a.css);</style>",
            '@import url("https://imp.evil.example',
            "https://imp.evil.example",
        ),
        ("<style>@IMPORT 'https://q.evil.example/b.css';</style>", "@import", "https://q.evil.example"),
    ],
)
def test_external_resources_outside_csp(html, element, origin):
    warnings = review_html(html, CSP)
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith(element) and origin in warnings[0] and "resourceDomains" in warnings[0]


def test_css_comment_and_http_upgrade():
    assert review_html("<style>/* @import url(https://hidden.evil.example/x.css); */</style>", CSP) == []
    assert review_html('<link rel="stylesheet" href="https://plain.example/a.css">', CSP) == []


def test_meta_refresh_and_base():
    warnings = review_html(
        '<meta http-equiv="Refresh" content="5; URL=https://away.example/">'
        '<base href="https://base.example/"><script src="relative.js"></script>',
        ViewCsp(),
    )
    assert warnings[0].startswith('<meta http-equiv="refresh" content="5; URL=https://away.example/">')
    assert "https://away.example/" in warnings[0]
    assert warnings[1].startswith('<base href="https://base.example/">')
    assert "not in baseUriDomains" in warnings[1]
    assert len(warnings) == 2  # a blocked <base> does not move relative.js off the view's origin


def test_allowed_base_moves_relative_urls():
    csp = ViewCsp(base_uri_domains=("https://base.example",))
    warnings = review_html('<base href="https://base.example/"><script src="relative.js"></script>', csp)
    assert "declared in baseUriDomains" in warnings[0]
    assert "https://base.example/relative.js" in warnings[1]


def test_warnings_are_capped():
    html = "".join(f'<script src="https://e{i}.evil.example/x.js"></script>' for i in range(80))
    warnings = review_html(html, ViewCsp())
    assert len(warnings) == 51 and warnings[-1] == "... and 30 more warnings"


def test_origin_allowed_rules():
    sources = ("https://*.example.com", "https://api.test:8443", "https://any.test:*", "http://legacy.test")
    assert origin_allowed("https://a.example.com/x", sources)
    assert origin_allowed("https://a.b.example.com/x", sources)
    assert not origin_allowed("https://example.com/x", sources)
    assert not origin_allowed("https://evilexample.com/x", sources)
    assert origin_allowed("https://api.test:8443/", sources)
    assert not origin_allowed("https://api.test/", sources)
    assert origin_allowed("https://any.test:1234/", sources)
    assert origin_allowed("http://legacy.test/", sources) and origin_allowed("https://legacy.test/", sources)
    assert not origin_allowed("http://a.example.com/", sources)
    assert not origin_allowed("data:text/css,x", sources)


def test_csp_entry_for_violation_reports():
    assert csp_entry_for("https://api.example.com/v1?q=1", "connect-src") == (
        "connectDomains",
        "https://api.example.com",
    )
    assert csp_entry_for("wss://live.example.com:9000/s", "connect-src") == (
        "connectDomains",
        "wss://live.example.com:9000",
    )
    assert csp_entry_for("https://cdn.example.com:443/a.js", "script-src-elem") == (
        "resourceDomains",
        "https://cdn.example.com",
    )
    assert csp_entry_for("https://maps.example.com/embed", "frame-src") == (
        "frameDomains",
        "https://maps.example.com",
    )
    assert csp_entry_for("inline", "script-src") is None
    assert csp_entry_for("data:image/png;base64,xx", "img-src") is None
    assert csp_entry_for("https://x.example/", "object-src") is None
    assert csp_entry_for("wss://x.example/", "img-src") is None


def test_review_says_a_template_using_webrtc_will_not_have_it():
    (warning,) = review_html("<script>const pc = new RTCPeerConnection({iceServers: []});</script>", ViewCsp())
    assert warning.startswith("RTCPeerConnection:") and "no WebRTC" in warning
    assert review_html("<p>an RTCPeerConnectionless page</p>", ViewCsp()) == []
