"""Links a view asks the host to open, and names of files it asks the host to save."""

from __future__ import annotations

import pytest

from mcp_apps_host.values.links import describe_link, sanitize_filename


def test_plain_link():
    info = describe_link("https://Example.com/a/b?q=1#frag")
    assert info.scheme == "https"
    assert info.host_ascii == info.host_unicode == "example.com"
    assert info.differs is False and info.warnings == ()
    assert info.display == "https://example.com/a/b?q=1#frag"
    assert info.href == "https://example.com/a/b?q=1#frag"


def test_http_and_port():
    info = describe_link("http://localhost:8080/x")
    assert info.scheme == "http" and info.port == 8080 and info.host_ascii == "localhost"
    assert info.display == "http://localhost:8080/x"


@pytest.mark.parametrize(
    "url, needle",
    [
        ("javascript:alert(1)", "scheme 'javascript'"),
        ("data:text/html,<script>1</script>", "scheme 'data'"),
        ("file:///etc/passwd", "scheme 'file'"),
        ("ftp://example.com/", "scheme 'ftp'"),
        ("//example.com/x", "scheme none"),
        ("example.com", "scheme none"),
        ("https:example.com", "no host"),
        ("https:///path", "no host"),
        ("https://exa mple.com", "SPACE"),
        (" https://example.com", "SPACE"),
        ("https://example.com/\n", r"a control character \(U\+000A\)"),
        ("https://\u202egoogle.com", "RIGHT-TO-LEFT OVERRIDE"),
        ("https://evil.com\\@good.com/", "backslash"),
        ("https://a..b/", "empty label"),
        ("https://xn--zz.com/", "not valid punycode"),
        ("https://example.com:99999/", "invalid port"),
        ("https://999.0.0.1/", "out of range"),
        ("https://[::g]/", "cannot be parsed|not an IPv6 address"),
        ("https://exa<mple.com/", "not allowed in a host"),
        ("", "empty"),
    ],
)
def test_rejected(url, needle):
    with pytest.raises(ValueError, match=needle):
        describe_link(url)


def test_punycode_is_decoded_and_flagged():
    info = describe_link("https://xn--bcher-kva.example/shop")
    assert info.host_ascii == "xn--bcher-kva.example"
    assert info.host_unicode == "bücher.example"
    assert info.differs is True
    assert info.display == "https://bücher.example/shop"
    assert info.href == "https://xn--bcher-kva.example/shop"


def test_unicode_host_is_encoded():
    info = describe_link("https://BÜCHER.example/")
    assert info.host_ascii == "xn--bcher-kva.example" and info.host_unicode == "bücher.example"
    assert info.differs is True
    assert info.href.startswith("https://xn--bcher-kva.example/")


def test_whole_script_lookalike_is_flagged():
    info = describe_link("https://xn--80ak6aa92e.com/login")  # Cyrillic letters that spell "apple"
    assert info.host_unicode == "аррӏе.com"
    assert info.differs is True
    assert any("looks like apple.com" in w for w in info.warnings)


def test_mixed_script_is_flagged():
    info = describe_link("https://p\u0430ypal.com/")  # Cyrillic 'а' inside Latin
    assert info.differs is True
    assert any("mixes scripts (Cyrillic, Latin)" in w for w in info.warnings)
    assert any("looks like paypal.com" in w for w in info.warnings)


def test_genuine_idn_has_no_lookalike_warning():
    info = describe_link("https://xn--e1afmkfd.xn--p1ai/")
    assert info.host_unicode == "пример.рф"
    assert info.differs is True  # still shown highlighted, the two forms differ
    assert info.warnings == ()
    japanese = describe_link("https://例え.jp/")  # Han + Hiragana is a normal mix
    assert japanese.warnings == ()


def test_userinfo_is_flagged():
    info = describe_link("https://accounts.google.com@evil.example/login")
    assert info.host_ascii == "evil.example"
    assert info.differs is True
    assert any("user name" in w and "evil.example" in w for w in info.warnings)
    assert info.display == "https://accounts.google.com@evil.example/login"


@pytest.mark.parametrize(
    "url", ["http://2130706433/", "http://0x7f.1/", "http://0177.0.0.1/", "http://127.1/"]
)
def test_numeric_hosts_resolved(url):
    info = describe_link(url)
    assert info.host_ascii == "127.0.0.1"
    assert info.differs is True
    assert any("127.0.0.1" in w for w in info.warnings)


def test_ipv6_and_canonical_ipv4():
    info = describe_link("https://[0:0::1]:8443/x")
    assert info.host_ascii == "::1" and info.port == 8443
    assert info.display == "https://[::1]:8443/x"
    assert describe_link("http://10.0.0.1/").differs is False


def test_invalid_idna_label_is_shown_with_warning():
    info = describe_link("https://xn--ls8h.example/")  # an emoji: not IDNA 2008, browsers still go there
    assert info.host_unicode == "\U0001f4a9.example"
    assert info.differs is True and info.warnings


# -- file names ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "given, expected",
    [
        ("ui://reports/2026/Q1%20report.csv", "Q1 report.csv"),
        ("https://example.com/files/a.pdf?x=1#y", "a.pdf"),
        ("report.txt", "report.txt"),
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\me\\evil.txt", "evil.txt"),
        ("ui://x/a%2F..%2F..%2Fb.txt", "a_.._.._b.txt"),
        ("ui://x/..%2F..%2Fsecret", "_.._secret"),
        ("name\x00with\x07controls.txt", "namewithcontrols.txt"),
        ("invoice\u202efdp.exe", "invoicefdp.exe"),
        ("zero\u200bwidth.txt", "zerowidth.txt"),
        ('a<b>c:d"e|f?g*h.txt', "a_b_c_d_e_f_g_h.txt"),
        (".bashrc", "bashrc"),
        ("...hidden", "hidden"),
        ("trailing. . ", "trailing"),
        ("CON", "_CON"),
        ("con.txt", "_con.txt"),
        ("LPT9.log", "_LPT9.log"),
        ("COM1 .txt", "_COM1 .txt"),
        ("console.txt", "console.txt"),
        ("tab\tand  spaces.txt", "taband spaces.txt"),
        ("e\u0301t\u00e9.txt", "\u00e9t\u00e9.txt"),
        ("ui://chart", "chart"),
        ("ui://srv/dir/", "dir"),
    ],
)
def test_sanitize_filename(given, expected):
    assert sanitize_filename(given) == expected


@pytest.mark.parametrize("given", ["", "..", "/", "\\\\", "data:text/plain,hello", "file:///", " . "])
def test_sanitize_filename_fallback(given):
    assert sanitize_filename(given) == "download"
    assert sanitize_filename(given, fallback="export.json") == "export.json"
    assert sanitize_filename(given, fallback="../x/..") == "download"


def test_sanitize_filename_length_keeps_extension():
    long = "a" * 300 + ".csv"
    out = sanitize_filename(long)
    assert len(out) == 120 and out.endswith(".csv") and out.startswith("aaa")
    no_ext = sanitize_filename("b" * 300)
    assert no_ext == "b" * 120
    weird_ext = sanitize_filename("c" * 100 + "." + "d" * 100)  # not a plausible extension: plain cut
    assert len(weird_ext) == 120
    assert len(sanitize_filename("é" * 500 + ".txt")) == 120
