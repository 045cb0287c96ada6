from __future__ import annotations

import dataclasses

import pytest

from mcp_apps_host.errors import CspError
from mcp_apps_host.policy.csp import (
    allow_attribute,
    build_view_csp,
    granted_permissions,
    host_page_csp,
)
from mcp_apps_host.values.csp import ViewCsp

# The spec's restrictive default, followed by the directives the host adds.
SPEC_DEFAULT = [
    "default-src 'none'",
    "script-src 'self' 'unsafe-inline'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "media-src 'self' data:",
    "connect-src 'none'",
]
EXPECTED_DEFAULT = (
    "default-src 'none'; "
    "script-src 'self' 'unsafe-inline' 'unsafe-eval' blob: data:; "
    "style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; "
    "font-src 'self' data:; "
    "media-src 'self' data: blob:; "
    "connect-src 'none'; "
    "frame-src 'none'; "
    "base-uri 'self'; "
    "object-src 'none'; "
    "form-action 'none'; "
    "worker-src 'self' blob: data:"
)


def directives(policy: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for part in policy.split(";"):
        name, *sources = part.split()
        assert name not in out, f"directive {name} twice"
        out[name] = sources
    return out


def test_default_policy_is_exact() -> None:
    assert build_view_csp(ViewCsp()) == EXPECTED_DEFAULT
    assert build_view_csp(ViewCsp.from_meta(None)) == EXPECTED_DEFAULT
    assert build_view_csp(ViewCsp.from_meta({})) == EXPECTED_DEFAULT


def test_default_contains_every_spec_default_source() -> None:
    got = directives(build_view_csp(ViewCsp()))
    for line in SPEC_DEFAULT:
        name, *sources = line.split()
        assert set(sources) <= set(got[name]), name
    assert "'self'" not in got["connect-src"]


def test_declared_domains_widen_only_their_directives() -> None:
    base = directives(build_view_csp(ViewCsp()))

    csp = ViewCsp.from_meta({"connectDomains": ["https://api.example.com", "wss://rt.example.com"]})
    got = directives(build_view_csp(csp))
    assert got["connect-src"] == ["https://api.example.com", "wss://rt.example.com"]
    assert {k: v for k, v in got.items() if k != "connect-src"} == {
        k: v for k, v in base.items() if k != "connect-src"
    }

    csp = ViewCsp.from_meta({"resourceDomains": ["https://cdn.example.com", "https://*.cdn.example.net"]})
    got = directives(build_view_csp(csp))
    widened = {"script-src", "style-src", "img-src", "font-src", "media-src", "worker-src"}
    for name in widened:
        assert got[name] == base[name] + ["https://cdn.example.com", "https://*.cdn.example.net"]
    for name in set(base) - widened:
        assert got[name] == base[name], name

    csp = ViewCsp.from_meta({"frameDomains": ["https://www.youtube.com"]})
    got = directives(build_view_csp(csp))
    assert got["frame-src"] == ["https://www.youtube.com"]
    assert {k: v for k, v in got.items() if k != "frame-src"} == {
        k: v for k, v in base.items() if k != "frame-src"
    }

    csp = ViewCsp.from_meta({"baseUriDomains": ["https://cdn.example.com"]})
    got = directives(build_view_csp(csp))
    assert got["base-uri"] == ["https://cdn.example.com"]
    assert {k: v for k, v in got.items() if k != "base-uri"} == {
        k: v for k, v in base.items() if k != "base-uri"
    }


def test_report_uri_appended() -> None:
    policy = build_view_csp(ViewCsp(), report_uri="/csp-report/abc")
    assert policy == EXPECTED_DEFAULT + "; report-uri /csp-report/abc"
    with pytest.raises(CspError, match="report_uri"):
        build_view_csp(ViewCsp(), report_uri="/x; script-src *")


@pytest.mark.parametrize(
    ("entry", "hint"),
    [
        ("https://a.example.com; script-src *", "';'"),
        ("https://a.example.com,https://b.example.com", "','"),
        ("https://a.example.com https://b.example.com", "' '"),
        ("https://a.example.com\n", "'\\n'"),
        ("https://a.example.com\t", "'\\t'"),
        ("https://a.example\x00.com", "'\\x00'"),
        ('https://a.example.com"', "'\"'"),
        ("'unsafe-eval'", "keyword"),
        ("'self'", "keyword"),
        ("*", "every origin"),
        ("data:", "scheme source"),
        ("blob:", "scheme source"),
        ("https:", "scheme source"),
        ("blob:https://a.example.com", "scheme 'blob:'"),
        ("javascript:alert(1)", "scheme 'javascript:'"),
        ("ftp://files.example.com", "scheme 'ftp'"),
        ("file://host", "scheme 'file'"),
        ("api.example.com", "no scheme"),
        ("api.example.com:8443", "no scheme"),
        ("https://a.example.com/path", "path"),
        ("https://a.example.com/?q=1", "path"),
        ("https://a.example.com#frag", "path"),
        ("https://user@a.example.com", "user info"),
        ("https://*", "every host"),
        ("https://*:443", "every host"),
        ("https://*.com", "top-level"),
        ("https://a.*.example.com", "'*'"),
        ("https://*example.com", "'*'"),
        ("https://a.example.com:0", "port"),
        ("https://a.example.com:70000", "port"),
        ("https://a.example.com:", "port"),
        ("https://a.example.com:ab", "port"),
        ("https://[::1]:8080", "IPv6"),
        ("https://a_b.example.com", "invalid host"),
        ("https://a..example.com", "invalid host"),
        ("https://-a.example.com", "invalid host"),
        ("https://", "no host"),
        ("https://b\u00fccher.example", "non-ASCII"),
        ("", "empty"),
    ],
)
def test_bad_entry_rejected_naming_field_and_entry(entry: str, hint: str) -> None:
    with pytest.raises(CspError) as info:
        ViewCsp.from_meta({"resourceDomains": ["https://ok.example.com", entry]})
    message = str(info.value)
    assert message.startswith("_meta.ui.csp.resourceDomains[1]: "), message
    assert repr(entry)[:60] in message
    assert hint in message, message
    assert info.value.entry == entry
    assert info.value.field == "_meta.ui.csp.resourceDomains[1]"


@pytest.mark.parametrize("entry", [42, None, ["https://a.example.com"], {"origin": "x"}])
def test_non_string_entry_rejected(entry: object) -> None:
    with pytest.raises(CspError, match=r"connectDomains\[0\].*not a string"):
        ViewCsp.from_meta({"connectDomains": [entry]})


@pytest.mark.parametrize("value", ["https://a.example.com", {"a": 1}, 3, True])
def test_non_list_value_rejected(value: object) -> None:
    with pytest.raises(CspError, match=r"_meta\.ui\.csp\.frameDomains: .*list"):
        ViewCsp.from_meta({"frameDomains": value})


@pytest.mark.parametrize("meta", [["https://a.example.com"], "x", 1])
def test_non_object_csp_rejected(meta: object) -> None:
    with pytest.raises(CspError, match=r"^_meta\.ui\.csp: "):
        ViewCsp.from_meta(meta)


def test_null_fields_and_unknown_keys() -> None:
    csp = ViewCsp.from_meta({"connectDomains": None, "wasmUnsafeEval": True, "other": ["x y"]})
    assert csp == ViewCsp()


def test_accepted_forms_are_normalised() -> None:
    csp = ViewCsp.from_meta(
        {
            "connectDomains": [
                "https://api.example.com",
                "HTTPS://API.Example.com/",
                "wss://rt.example.com:8443",
                "ws://127.0.0.1:9000",
                "http://localhost:*",
                "https://*.example.org",
                "https://a.example.com:0443",
            ]
        }
    )
    assert csp.connect_domains == (
        "https://api.example.com",
        "wss://rt.example.com:8443",
        "ws://127.0.0.1:9000",
        "http://localhost:*",
        "https://*.example.org",
        "https://a.example.com:443",
    )


def test_dedupe_keeps_first_order() -> None:
    csp = ViewCsp.from_meta(
        {
            "resourceDomains": [
                "https://b.example.com",
                "https://a.example.com",
                "https://b.example.com",
                "https://a.example.com/",
                "https://c.example.com",
            ]
        }
    )
    assert csp.resource_domains == ("https://b.example.com", "https://a.example.com", "https://c.example.com")


def test_direct_construction_is_validated() -> None:
    with pytest.raises(CspError, match=r"connectDomains\[0\]"):
        ViewCsp(connect_domains=("https://x.example.com; script-src *",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        ViewCsp().connect_domains = ("https://x.example.com",)  # type: ignore[misc]


def test_to_json() -> None:
    assert ViewCsp().to_json() == {}
    csp = ViewCsp.from_meta({"connectDomains": ["https://api.example.com"], "frameDomains": []})
    assert csp.to_json() == {"connectDomains": ["https://api.example.com"]}
    full = ViewCsp(
        connect_domains=("https://a.example.com",),
        resource_domains=("https://b.example.com",),
        frame_domains=("https://c.example.com",),
        base_uri_domains=("https://d.example.com",),
    )
    assert full.to_json() == {
        "connectDomains": ["https://a.example.com"],
        "resourceDomains": ["https://b.example.com"],
        "frameDomains": ["https://c.example.com"],
        "baseUriDomains": ["https://d.example.com"],
    }
    assert ViewCsp.from_meta(full.to_json()) == full


ALL = {"camera": {}, "microphone": {}, "geolocation": {}, "clipboardWrite": {}}


def test_allow_attribute_grants_only_granted() -> None:
    assert allow_attribute(ALL, frozenset()) == ""
    assert allow_attribute(ALL, frozenset({"clipboardWrite"})) == "clipboard-write"
    assert allow_attribute(ALL, frozenset({"clipboard-write", "camera"})) == "camera; clipboard-write"
    assert (
        allow_attribute(ALL, frozenset({"camera", "microphone", "geolocation", "clipboardWrite"}))
        == "camera; microphone; geolocation; clipboard-write"
    )
    # Granted by policy but not requested by the view: not given.
    assert allow_attribute({"camera": {}}, frozenset({"camera", "microphone"})) == "camera"


def test_allow_attribute_ignores_unknown_and_malformed() -> None:
    granted = frozenset({"camera", "microphone", "geolocation", "clipboardWrite", "usb", "fullscreen"})
    assert allow_attribute({"usb": {}, "fullscreen": {}, "camera": {}}, granted) == "camera"
    assert (
        allow_attribute({"camera": False, "microphone": None, "geolocation": True}, granted) == "geolocation"
    )
    assert allow_attribute(None, granted) == ""
    assert allow_attribute(["camera"], granted) == ""
    assert allow_attribute("camera", granted) == ""


def test_granted_permissions() -> None:
    assert granted_permissions(ALL, frozenset({"clipboard-write", "geolocation"})) == {
        "geolocation": {},
        "clipboardWrite": {},
    }
    assert granted_permissions(ALL, frozenset()) == {}
    assert granted_permissions({"camera": {}, "bogus": {}}, frozenset({"camera", "bogus"})) == {"camera": {}}


def test_host_page_csp() -> None:
    policy = host_page_csp(["http://localhost:8766", "http://*.localhost:8766", "http://localhost:8766/"])
    assert policy == (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; connect-src 'self'; "
        "frame-src http://localhost:8766 http://*.localhost:8766; "
        "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
    assert directives(host_page_csp([]))["frame-src"] == ["'none'"]


@pytest.mark.parametrize(
    "origin", ["*", "ws://localhost:8766", "localhost:8766", "http://localhost:8766/p", "'self'"]
)
def test_host_page_csp_rejects_bad_origin(origin: str) -> None:
    with pytest.raises(CspError, match=r"sandbox_origins\[0\]"):
        host_page_csp([origin])
